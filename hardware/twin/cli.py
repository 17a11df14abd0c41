"""``cluetwin twin SCENARIO --port P``: serve a Spot-API twin until interrupted."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

from hardware.spot_robot import PASSWORD_ENV, USERNAME_ENV
from hardware.twin.server import SpotTwin, TwinConfig
from scenarios.schema import Scenario


def serve(
    scenario: Scenario,
    *,
    port: int = 0,
    time_scale: float = 1.0,
    renderer: str = "auto",
    seed: int = 0,
    say: Callable[[str], None] = print,
    stop: threading.Event | None = None,
) -> int:
    """Serve ``scenario`` on 127.0.0.1:``port`` until Ctrl-C, SIGTERM or ``stop`` is set.

    Credentials: ``$BOSDYN_CLIENT_USERNAME`` / ``$BOSDYN_CLIENT_PASSWORD`` when set,
    else user ``cluetwin`` with a fresh random password (printed, since this twin is a
    local test robot and the password guards nothing but it).
    """
    config = TwinConfig(
        port=port,
        time_scale=time_scale,
        username=os.environ.get(USERNAME_ENV) or TwinConfig.username,
        password=os.environ.get(PASSWORD_ENV) or None,
    )
    stop = stop or threading.Event()
    with SpotTwin(scenario, seed=seed, env_kwargs={"renderer": renderer}, config=config) as twin:
        args = twin.connect_args()
        say(f"Spot-API twin of {scenario.id!r} listening on {twin.address}")
        say(f"CA certificate: {args['cert_path']}")
        say(f"username: {args['username']}")
        if config.password is None:
            say(f"password: {args['password']}")
        else:
            say(f"password: from ${PASSWORD_ENV}")
        say(
            f"connect: SpotRobot.connect('127.0.0.1', port={twin.port}, "
            f"cert_path={args['cert_path']!r}) with the credentials above; Ctrl-C stops"
        )
        previous = {}
        if threading.current_thread() is threading.main_thread():
            # SIGINT too: a process started in the background by a shell without job
            # control inherits SIGINT ignored, and Python then never raises
            # KeyboardInterrupt, so Ctrl-C (or kill -INT) would not stop the twin
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
        try:
            while not stop.wait(0.5):
                pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    say("twin stopped")
    return 0
