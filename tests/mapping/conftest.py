"""Shared fixtures: the real text model (loaded once per session) and a surveyed scene."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the models are local; a hub lookup only hangs

from agents.robot import Frame  # noqa: E402
from mapping.encoders import FrameFeatures, MissingDependency, SimFeatureEncoder  # noqa: E402
from mapping.voxel_map import VoxelMap  # noqa: E402
from tests.mapping import pybullet_scene as scene_lib  # noqa: E402


@pytest.fixture(scope="session")
def minilm_encoder() -> SimFeatureEncoder:
    """The default sim encoder: all-MiniLM-L6-v2 phrases reduced to 64 dims (about 10 s)."""
    try:
        return SimFeatureEncoder()
    except MissingDependency as exc:
        pytest.skip(f"text model unavailable: {exc}")


@dataclass
class Survey:
    """A fused map of :func:`scene_lib.barrel_scene` and what the test may compare with."""

    voxel_map: VoxelMap
    truth: dict[str, tuple[float, float, float]]  # object centres: for assertions only
    start_xy: tuple[float, float]


@pytest.fixture(scope="session")
def survey_frames(minilm_encoder) -> tuple[list[tuple[Frame, FrameFeatures]], dict]:
    """The barrel room's scripted survey at 160x120, encoded: ``([(frame, features)], truth)``."""
    scene = scene_lib.barrel_scene()
    cam = scene_lib.Camera()
    frames = []
    for k, pose in enumerate(scene_lib.survey_poses()):
        frame = scene_lib.render(scene, pose, cam, stamp_s=0.5 * k)
        frames.append((frame, minilm_encoder.encode_frame(frame)))
    truth = dict(scene.truth)
    scene.close()
    return frames, truth


@pytest.fixture(scope="session")
def barrel_survey(survey_frames) -> Survey:
    """The surveyed barrel room fused with default map settings."""
    frames, truth = survey_frames
    vmap = VoxelMap()
    for frame, feats in frames:
        vmap.integrate(frame, feats)
    yield Survey(vmap, truth, (1.2, 1.2))
    vmap.close()
