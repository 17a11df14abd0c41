"""Which Spot image sources serve each camera name of the robot interface.

====================  =============================  ====================================  ==========================
interface camera      visual source (RGB)            depth source (aligned to the visual)   twin-only segmentation
====================  =============================  ====================================  ==========================
``body`` / ``front``  ``frontleft_fisheye_image``    ``frontleft_depth_in_visual_frame``    ``frontleft_segmentation``
``left``              ``left_fisheye_image``         ``left_depth_in_visual_frame``         ``left_segmentation``
``right``             ``right_fisheye_image``        ``right_depth_in_visual_frame``        ``right_segmentation``
``back``              ``back_fisheye_image``         ``back_depth_in_visual_frame``         ``back_segmentation``
``hand``              ``hand_color_image``           ``hand_depth_in_hand_color_frame``     ``hand_segmentation``
====================  =============================  ====================================  ==========================

The visual and depth names are a real Spot's (5.x, arm fitted). Spot has no single
forward camera: its two front cameras look crossed, and ``frontleft`` stands in for the
interface's forward ``body`` camera. On the twin, ``frontleft`` *is* the simulator's
forward body camera (pinhole, pitched 15 deg down), so the same client code runs on both.

The ``*_segmentation`` sources exist **only on the twin**: a ``GREYSCALE_U16`` image of
``pybullet body id + 1`` per pixel (0 = nothing), whose capture parameters carry the
appearance phrase of every segment under :data:`SEGMENT_PHRASES_PARAM` (a ``DictParam``
of ``str(pixel value) -> string``). They feed the simulator's VLM and camera-feature model,
which need to know what each pixel shows. ``SpotRobot`` asks for them only when the
robot lists them, so frames from a real Spot carry no segmentation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CameraSources:
    """The image sources (and sensor frame) behind one interface camera name."""

    visual: str  # RGB image
    depth: str  # depth registered to the visual image (same intrinsics and frame)
    segmentation: str  # twin-only label image
    sensor_frame: str  # frame_name_image_sensor: the optical frame (+z forward, +x right)


def _body(prefix: str) -> CameraSources:
    return CameraSources(
        visual=f"{prefix}_fisheye_image",
        depth=f"{prefix}_depth_in_visual_frame",
        segmentation=f"{prefix}_segmentation",
        sensor_frame=f"{prefix}_fisheye",
    )


SPOT_CAMERAS: dict[str, CameraSources] = {
    "body": _body("frontleft"),
    "front": _body("frontleft"),
    "left": _body("left"),
    "right": _body("right"),
    "back": _body("back"),
    "hand": CameraSources(
        visual="hand_color_image",
        depth="hand_depth_in_hand_color_frame",
        segmentation="hand_segmentation",
        sensor_frame="hand_color_image_sensor",
    ),
}
"""Interface camera name -> Spot image sources."""

DEPTH_SCALE = 1000.0  # depth pixel units per metre: Spot's depth images are in millimetres
SEGMENT_PHRASES_PARAM = "segment_phrases"  # twin-only capture parameter, see module doc


def sources_for(camera: str) -> CameraSources:
    """The sources behind ``camera``; ``ValueError`` naming the valid cameras otherwise."""
    try:
        return SPOT_CAMERAS[camera]
    except KeyError:
        raise ValueError(
            f"unknown camera {camera!r}; use one of {', '.join(SPOT_CAMERAS)}"
        ) from None
