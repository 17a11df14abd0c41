"""Fixtures shared across the test packages: small cameras and example scenarios as data.

``small_env_kwargs``: keyword arguments for ``SpotWorldEnv`` / ``gym.make`` that keep
rendering cheap on a 2-core CI machine (160 x 120 cameras, TinyRenderer, which is the
faster one at this size and is always available).

``example_data(name)``: a fresh, mutable dict of a shipped example scenario (parsed with
the loader's YAML 1.2 rules), for tests that break or vary a scenario.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from scenarios.loader import PACKAGE_DIR, read_yaml

EXAMPLES_DIR = PACKAGE_DIR / "examples"


@pytest.fixture(scope="session")
def small_env_kwargs() -> dict:
    from envs import CameraSpec

    return {
        "camera": CameraSpec(160, 120),
        "hand_camera": CameraSpec(160, 120, vfov_deg=55.0),
        "renderer": "tiny",
    }


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES_DIR


@pytest.fixture(scope="session")
def _example_cache() -> dict[str, dict]:
    return {
        f.stem: read_yaml(f.read_text(encoding="utf-8"))
        for f in sorted(EXAMPLES_DIR.glob("*.yaml"))
    }


@pytest.fixture
def example_data(_example_cache) -> Callable[[str], dict]:
    def load(name: str) -> dict:
        return copy.deepcopy(_example_cache[name])

    return load
