"""Faults a test can inject into a running twin, now or at the start of the next walk.

=====================  =============================================  ============================
fault                  what the twin does                             what ``SpotRobot`` raises
=====================  =============================================  ============================
dropped_connection     stops its gRPC server (the robot halts, as on  ``ConnectionLost``
                       comms loss); ``restore_connection`` serves
                       again on the same port
lease_revoked          another client takes the body lease; the       ``LeaseLost``
                       robot halts what it was doing
estop_pressed          the hardware E-Stop button: motors cut,        ``EStopped``
                       commands frozen
stalled_walk           walks are accepted but never progress          ``RobotTimeout`` (robot
                                                                      stopped by the client)
slow_images            GetImage answers only after ``delay_s``         ``RobotTimeout``
=====================  =============================================  ============================

``arm(fault)`` fires a fault once, as the next walk starts (so it strikes mid-walk);
a dropped connection then follows about ``drop_after_s`` later, with the walk held in
place until it does.
"""

from __future__ import annotations

import threading
from enum import StrEnum
from typing import TYPE_CHECKING

from bosdyn.api import lease_pb2

if TYPE_CHECKING:
    from hardware.twin.server import SpotTwin


class Fault(StrEnum):
    DROPPED_CONNECTION = "dropped_connection"
    LEASE_REVOKED = "lease_revoked"
    ESTOP_PRESSED = "estop_pressed"
    STALLED_WALK = "stalled_walk"
    SLOW_IMAGES = "slow_images"


class Faults:
    """Fault switches of one :class:`~hardware.twin.server.SpotTwin`."""

    def __init__(self, twin: SpotTwin):
        self._twin = twin
        self.image_delay_s = 0.0  # GetImage waits this long before answering
        self.dropped = False

    # ------------------------------------------------------------------ now
    def drop_connection(self) -> None:
        """Stop serving: every RPC now fails as with a pulled cable; the robot halts."""
        self.dropped = True
        self._twin._stop_server()
        self._twin.robot.halt_all()

    def restore_connection(self) -> None:
        """Serve again on the same port (clients reconnect on their next call)."""
        if self.dropped:
            self._twin._start_server()
            self.dropped = False

    def revoke_lease(self, by: str = "another-operator") -> None:
        """Another client takes the body lease; what ran stops."""
        robot = self._twin.robot
        robot.leases.take("body", lease_pb2.LeaseOwner(client_name=by, user_name=by))
        robot.halt_all()

    def press_estop(self) -> None:
        self._twin.robot.press_estop()

    def release_estop(self) -> None:
        self._twin.robot.release_estop()

    def stall_walks(self, on: bool = True) -> None:
        """Walks are accepted and report progress "going to goal" forever."""
        self._twin.robot.stall_walks = on

    def slow_images(self, delay_s: float) -> None:
        """GetImage answers only after ``delay_s`` (0 restores normal service)."""
        self.image_delay_s = delay_s

    def apply(self, fault: Fault, *, delay_s: float = 5.0) -> None:
        """Apply ``fault`` now (``delay_s``: the slow image service's delay)."""
        {
            Fault.DROPPED_CONNECTION: self.drop_connection,
            Fault.LEASE_REVOKED: self.revoke_lease,
            Fault.ESTOP_PRESSED: self.press_estop,
            Fault.STALLED_WALK: self.stall_walks,
            Fault.SLOW_IMAGES: lambda: self.slow_images(delay_s),
        }[fault]()

    # ------------------------------------------------------------------ armed
    def arm(self, fault: Fault, *, drop_after_s: float = 0.05, delay_s: float = 5.0) -> None:
        """Fire ``fault`` once, as the next walk starts."""
        robot = self._twin.robot

        def fire() -> None:
            robot.on_walk = None
            if fault is Fault.STALLED_WALK:
                robot.stall_walk_in_progress()
            elif fault is Fault.DROPPED_CONNECTION:
                robot.stall_walk_in_progress()  # still walking when the link goes
                threading.Timer(drop_after_s, self.drop_connection).start()
            else:
                self.apply(fault, delay_s=delay_s)

        robot.on_walk = fire

    def clear(self) -> None:
        """Undo every fault: serve, release the button, walk and answer normally."""
        self._twin.robot.on_walk = None
        self.restore_connection()
        self.release_estop()
        self.stall_walks(False)
        self.slow_images(0.0)
