"""Frame names and conversions between the robot interface's 4x4 transforms and Spot protos.

The interface (``agents/robot.py``) speaks ``odom_T_camera`` as a 4x4 homogeneous matrix
of the camera's optical frame (+z forward, +x right, +y down) in ``odom``. Spot speaks
``SE3Pose`` protos inside ``FrameTreeSnapshot`` maps (child -> parent edge). Spot's image
sensor frames already follow the optical convention, so a sensor pose is used as is.

Pixel conventions differ by half a pixel: the interface puts pixel (u, v)'s centre at
(u + 0.5, v + 0.5), Spot's pinhole model (like OpenCV) at (u, v). Hence
``cx_interface = cx_spot + 0.5`` (same for y); see :func:`intrinsics_from_pinhole`.
"""

from __future__ import annotations

import math

import numpy as np
from bosdyn.api import geometry_pb2, image_pb2
from bosdyn.client import frame_helpers, math_helpers

from agents.robot import CameraIntrinsics, Pose2D

ODOM = frame_helpers.ODOM_FRAME_NAME  # "odom": the episode's fixed world frame
VISION = frame_helpers.VISION_FRAME_NAME  # "vision": identical to odom on the twin
BODY = frame_helpers.BODY_FRAME_NAME  # "body": base centre, x forward, z up
FLAT_BODY = frame_helpers.GRAV_ALIGNED_BODY_FRAME_NAME  # "flat_body"
HAND = frame_helpers.HAND_FRAME_NAME  # "hand": the gripper
GRASP_POINT = frame_helpers.RAYCAST_FRAME_NAME  # where a pick's ray met the object
WORLD_FRAMES = (ODOM, VISION)  # frames a command may be given in (the same on the twin)

PIXEL_CENTRE_SHIFT_PX = 0.5  # interface principal point minus Spot's


def se3_from_matrix(a_T_b: np.ndarray) -> geometry_pb2.SE3Pose:
    """``SE3Pose`` proto of a 4x4 transform ``a_T_b`` (metres)."""
    return math_helpers.SE3Pose.from_matrix(np.asarray(a_T_b, dtype=float)).to_proto()


def matrix_from_se3(pose: geometry_pb2.SE3Pose | math_helpers.SE3Pose) -> np.ndarray:
    """4x4 float64 transform of an ``SE3Pose`` (proto or math_helpers)."""
    if isinstance(pose, geometry_pb2.SE3Pose):
        pose = math_helpers.SE3Pose.from_proto(pose)
    return np.asarray(pose.to_matrix(), dtype=np.float64)


def planar_matrix(x_m: float, y_m: float, yaw_rad: float, z_m: float = 0.0) -> np.ndarray:
    """4x4 transform of a pose on the floor plane, heading ``yaw_rad`` about +z."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    return np.array(
        [[c, -s, 0.0, x_m], [s, c, 0.0, y_m], [0.0, 0.0, 1.0, z_m], [0.0, 0.0, 0.0, 1.0]]
    )


def planar_se3(x_m: float, y_m: float, yaw_rad: float, z_m: float = 0.0) -> geometry_pb2.SE3Pose:
    """``SE3Pose`` proto of a planar pose (exact yaw quaternion, no matrix round trip)."""
    return math_helpers.SE3Pose(x_m, y_m, z_m, math_helpers.Quat.from_yaw(yaw_rad)).to_proto()


def snapshot(edges: dict[str, tuple[str, geometry_pb2.SE3Pose]]) -> geometry_pb2.FrameTreeSnapshot:
    """A ``FrameTreeSnapshot`` from ``{child: (parent, parent_T_child)}``; parent "" is the root."""
    tree = geometry_pb2.FrameTreeSnapshot()
    for child, (parent, parent_T_child) in edges.items():
        edge = tree.child_to_parent_edge_map[child]
        edge.parent_frame_name = parent
        edge.parent_tform_child.CopyFrom(parent_T_child)
    return tree


def a_T_b(tree: geometry_pb2.FrameTreeSnapshot, frame_a: str, frame_b: str) -> np.ndarray:
    """4x4 ``a_T_b`` from a snapshot; raises ``KeyError`` naming a frame the tree lacks."""
    pose = frame_helpers.get_a_tform_b(tree, frame_a, frame_b)
    if pose is None:
        raise KeyError(f"the frame tree does not relate {frame_a!r} and {frame_b!r}")
    return matrix_from_se3(pose)


def pose2d_from_snapshot(tree: geometry_pb2.FrameTreeSnapshot, world: str = ODOM) -> Pose2D:
    """Planar ``odom_T_body`` (x, y, yaw) from a kinematic-state snapshot."""
    pose = frame_helpers.get_a_tform_b(tree, world, BODY)
    if pose is None:
        raise KeyError(f"the frame tree does not relate {world!r} and {BODY!r}")
    return Pose2D(float(pose.x), float(pose.y), float(pose.rot.to_yaw()))


def pinhole_from_intrinsics(k: CameraIntrinsics) -> image_pb2.ImageSource.PinholeModel:
    """Spot's pinhole model (pixel centres at integer coordinates) of interface intrinsics."""
    model = image_pb2.ImageSource.PinholeModel()
    model.intrinsics.focal_length.x = k.fx_px
    model.intrinsics.focal_length.y = k.fy_px
    model.intrinsics.principal_point.x = k.cx_px - PIXEL_CENTRE_SHIFT_PX
    model.intrinsics.principal_point.y = k.cy_px - PIXEL_CENTRE_SHIFT_PX
    return model


def intrinsics_from_pinhole(
    model: image_pb2.ImageSource.PinholeModel, width_px: int, height_px: int
) -> CameraIntrinsics:
    """Interface intrinsics (pixel centres at +0.5) of Spot's pinhole model."""
    i = model.intrinsics
    return CameraIntrinsics(
        width_px=int(width_px),
        height_px=int(height_px),
        fx_px=float(i.focal_length.x),
        fy_px=float(i.focal_length.y),
        cx_px=float(i.principal_point.x) + PIXEL_CENTRE_SHIFT_PX,
        cy_px=float(i.principal_point.y) + PIXEL_CENTRE_SHIFT_PX,
    )
