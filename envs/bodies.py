"""Static compound bodies: a base shape with parts fixed to it, each keeping its colour."""

from __future__ import annotations

from collections.abc import Sequence

import pybullet as p


def fixed_compound(
    client: int,
    base: tuple[int, int],
    position: Sequence[float],
    parts: Sequence[tuple[int, int, Sequence[float]]],
) -> int:
    """A massless multibody at ``position`` (metres): ``base`` is its (collision, visual)
    shape pair; each part is (collision, visual, position relative to the base), joined
    by a fixed joint."""
    n = len(parts)
    return p.createMultiBody(
        baseMass=0,
        baseCollisionShapeIndex=base[0],
        baseVisualShapeIndex=base[1],
        basePosition=list(position),
        linkMasses=[0] * n,
        linkCollisionShapeIndices=[c for c, _, _ in parts],
        linkVisualShapeIndices=[v for _, v, _ in parts],
        linkPositions=[list(pos) for _, _, pos in parts],
        linkOrientations=[[0, 0, 0, 1]] * n,
        linkInertialFramePositions=[[0, 0, 0]] * n,
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * n,
        linkParentIndices=[0] * n,
        linkJointTypes=[p.JOINT_FIXED] * n,
        linkJointAxis=[[0, 0, 1]] * n,
        physicsClientId=client,
    )
