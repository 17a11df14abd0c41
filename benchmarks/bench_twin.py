"""Round-trip times of the Spot-API twin through the unmodified Spot SDK.

Run from the repository root::

    .venv/bin/python benchmarks/bench_twin.py [-n 200] [--size 320x240] [--renderer tiny]

Starts a twin of ``hazard_barrels`` on 127.0.0.1 (TLS, token auth), connects a
``SpotRobot`` (E-Stop, lease, power on, stand) and times, over ``n`` calls each after a
few warm-up calls:

* ``GetRobotState`` (``RobotStateClient.get_robot_state``): the status RPC every
  behaviour polls;
* ``GetImage`` of one camera's RGB + depth (+ the twin-only segmentation), which
  renders in the simulator, encodes, ships and decodes through the SDK;
* ``SpotRobot.capture("body")``: the same plus the interface's Frame assembly.

Prints mean / p50 / p95 in milliseconds and the load average (other processes share
the cores; compare runs on an idle machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bosdyn.api import image_pb2  # noqa: E402
from bosdyn.client.image import build_image_request  # noqa: E402

from envs import CameraSpec  # noqa: E402
from hardware.cameras import SPOT_CAMERAS  # noqa: E402
from hardware.spot_robot import SpotRobot  # noqa: E402
from hardware.twin import SpotTwin, TwinConfig  # noqa: E402


def timed(n: int, fn: Callable[[], object], warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(1e3 * (time.perf_counter() - t0))
    return out


def row(label: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=20)  # 5 % steps: q[9] = p50, q[18] = p95
    return (
        f"{label:<46} n={len(ms):<5} mean {statistics.fmean(ms):7.2f} ms   "
        f"p50 {q[9]:7.2f} ms   p95 {q[18]:7.2f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=200, help="calls per measurement")
    ap.add_argument("--size", default="320x240", help="camera size WxH")
    ap.add_argument("--renderer", default="tiny", choices=["auto", "egl", "tiny"])
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    env_kwargs = {
        "camera": CameraSpec(w, h),
        "hand_camera": CameraSpec(w, h, vfov_deg=55.0),
        "renderer": args.renderer,
    }
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")
    with SpotTwin("hazard_barrels", env_kwargs=env_kwargs, config=TwinConfig()) as twin:
        with SpotRobot.connect(**twin.connect_args(), vlm=twin.vlm()) as robot:
            print(f"twin at {twin.address}, renderer {twin.robot.env.renderer}, camera {w}x{h}")
            state = robot.state_client
            print(row("GetRobotState", timed(args.n, lambda: state.get_robot_state(timeout=5))))
            body = SPOT_CAMERAS["body"]
            fmt = image_pb2.Image
            rgb = build_image_request(
                body.visual, image_format=fmt.FORMAT_RAW, pixel_format=fmt.PIXEL_FORMAT_RGB_U8
            )
            depth = build_image_request(
                body.depth, image_format=fmt.FORMAT_RAW, pixel_format=fmt.PIXEL_FORMAT_DEPTH_U16
            )
            seg = build_image_request(
                body.segmentation,
                image_format=fmt.FORMAT_RAW,
                pixel_format=fmt.PIXEL_FORMAT_GREYSCALE_U16,
            )
            images = robot.image_client
            print(
                row(
                    "GetImage frontleft RGB + depth",
                    timed(args.n, lambda: images.get_image([rgb, depth], timeout=5)),
                )
            )
            print(
                row(
                    "GetImage frontleft RGB + depth + segmentation",
                    timed(args.n, lambda: images.get_image([rgb, depth, seg], timeout=5)),
                )
            )
            print(row('SpotRobot.capture("body")', timed(args.n, lambda: robot.capture("body"))))
            env = twin.robot.env
            print(
                row(
                    "(simulator render alone, for reference)",
                    timed(args.n, lambda: twin.robot.sim(env.capture, "body")),
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
