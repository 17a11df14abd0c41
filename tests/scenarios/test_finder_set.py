"""The Finder retrieval set: queries with ground truth, captured RGB-D streams, metrics."""

from __future__ import annotations

import contextlib
import copy
import io
import math
from collections import Counter

import numpy as np
import pytest

from scenarios.cli import main
from scenarios.finder import (
    ENVIRONMENTS,
    FINDER_DIR,
    FinderSet,
    check_against_scene,
    load_finder_set,
    object_centroid,
    scene_of,
    stream_path,
)
from scenarios.finder.metrics import (
    Prediction,
    combine,
    evaluate,
    loc_err,
    score_query,
    success_at,
)
from scenarios.finder.streams import load_stream
from scenarios.loader import ScenarioError, read_yaml

SETS = {env: load_finder_set(env) for env in ENVIRONMENTS}


@pytest.fixture(scope="module")
def streams():
    return {env: load_stream(stream_path(fset)) for env, fset in SETS.items()}


def _raw(env: str) -> dict:
    return copy.deepcopy(read_yaml((FINDER_DIR / f"{env}.yaml").read_text(encoding="utf-8")))


def _issues(data: dict) -> list[str]:
    fset = FinderSet.model_validate(data)
    return [f"{i.path}: {i.message}" for i in check_against_scene(fset, scene_of(fset))]


# ---------------------------------------------------------------------------- the queries
def test_each_environment_has_simple_and_hard_queries_of_every_kind():
    for env, fset in SETS.items():
        scene = scene_of(fset)
        assert scene.environment.name == env and scene.id.startswith(env.split("_")[0])
        kinds = Counter((q.difficulty, q.kind) for q in fset.queries)
        assert sum(n for (d, _), n in kinds.items() if d == "simple") >= 5, env
        for kind in ("visual", "relational", "contextual"):
            assert kinds[("hard", kind)] >= 2, (env, kind)
        assert any(len(q.targets) > 1 for q in fset.queries), "no ambiguous query"
    texts = [q.text for fset in SETS.values() for q in fset.queries]
    assert "the vase on the dark counter beside the sink" in texts  # the Finder paper's example
    assert sum(len(f.queries) for f in SETS.values()) >= 40


def test_room_priors_are_used_where_there_are_rooms():
    office = [q for q in SETS["office"].queries if q.difficulty == "simple"]
    assert {q.room for q in office} >= {"kitchen", "lounge", "open_office", "meeting_room"}
    assert all(q.kind == "floor" for q in SETS["lab"].queries if q.difficulty == "simple")


def test_centroids_are_the_scene_geometry():
    for fset in SETS.values():
        scene = scene_of(fset)
        for q in fset.queries:
            for t in q.targets:
                assert t.centroid_m == pytest.approx(object_centroid(scene, t.object), abs=1e-6)


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (
            lambda d: d["queries"][0]["targets"][0].update(centroid_m=[0.0, 0.0, 0.0]),
            "queries[0].targets[0].centroid_m",
            "but the scene has",
        ),
        (
            lambda d: d["queries"][0]["targets"][0].update(object="unicorn"),
            "queries[0].targets[0].object",
            "no object 'unicorn'",
        ),
        (
            lambda d: d["queries"][0]["targets"].pop(),
            "queries[0].targets",
            "instances matching the prior are",
        ),
        (
            lambda d: d["queries"][5].update(category="sink"),
            "queries[5].targets[0].object",
            "is not a sink",
        ),
        (
            lambda d: d["categories"]["vase"].append("ghost_vase"),
            "categories.vase[3]",
            "no object 'ghost_vase'",
        ),
    ],
)
def test_validation_names_the_path(mutate, path, message):
    data = _raw("lab")
    mutate(data)
    issues = _issues(data)
    assert any(i.startswith(path) and message in i for i in issues), issues


def test_room_query_validation(tmp_path):
    data = _raw("office")
    data["queries"][0]["room"] = "attic"
    assert any("no room 'attic'" in i for i in _issues(data))
    data = _raw("office")
    data["queries"][7]["room"] = "kitchen"  # a hard query with a prior
    path = tmp_path / "office.yaml"
    from scenarios.generator import dump_yaml

    path.write_text(dump_yaml(data), encoding="utf-8")
    with pytest.raises(ScenarioError) as exc:
        load_finder_set(path)
    assert "queries[7]" in exc.value.render() and "scene-wide" in exc.value.render()


# ---------------------------------------------------------------------------- the streams
def test_streams_are_compact_rgbd_with_poses(streams):
    total = sum(stream_path(f).stat().st_size for f in SETS.values())
    assert total < 15 * 2**20
    for env, s in streams.items():
        n = len(s)
        assert n >= 100 and s.scene == SETS[env].scene
        assert s.rgb.dtype == np.uint8 and s.rgb.shape == (n, 120, 160, 3)
        assert s.depth_mm.dtype == np.uint16 and s.segment.dtype == np.uint8
        assert set(s.cameras) == {"front", "left", "right", "back"}
        k = s.intrinsics
        assert (k.width_px, k.height_px) == (160, 120) and k.fx_px == pytest.approx(103.92, 0.01)
        r = s.odom_T_camera[:, :3, :3]
        assert np.allclose(r @ r.transpose(0, 2, 1), np.eye(3), atol=1e-9)
        assert np.all(np.diff(s.stamp_s) >= 0)
        assert float((s.depth_mm > 0).mean()) > 0.6
        frame = s.frame(0)
        assert frame.depth_m.dtype == np.float32 and frame.camera in s.cameras


def test_every_query_target_is_seen(streams):
    for env, fset in SETS.items():
        for q in fset.queries:
            for t in q.targets:
                px = streams[env].pixels_of(t.object)
                assert px.max() >= 80, (env, q.id, t.object, int(px.max()))


def _observed_centroid(stream, object_id: str) -> np.ndarray:
    """Mean of the back-projected pixels of one object over the stream (test-only GT use)."""
    idx = [k for k, o in stream.objects.items() if o == object_id][0]
    pts = []
    for i in np.flatnonzero(stream.pixels_of(object_id)):
        f = stream.frame(int(i))
        p, pix = f.points_odom()
        pts.append(p[stream.segment[i].reshape(-1)[pix] == idx])
    return np.concatenate(pts).mean(axis=0)


def test_depth_poses_and_intrinsics_put_objects_where_they_are(streams):
    """Back-projecting an object's pixels lands on its ground-truth box: the stored depth,
    poses and intrinsics agree with the scene."""
    for env, fset in SETS.items():
        scene = scene_of(fset)
        for q in fset.queries[:6]:
            t = q.targets[0]
            o = scene.object(t.object)
            got = _observed_centroid(streams[env], t.object)
            half = max(o.size[0], o.size[1]) / 2
            assert math.hypot(*(got[:2] - np.asarray(t.centroid_m[:2]))) < half + 0.05, t.object
            assert abs(got[2] - t.centroid_m[2]) < o.size[2] / 2 + 0.05, t.object


def test_capture_finder_regenerates_the_shipped_stream(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["capture-finder", "lab", "--out", str(tmp_path)])
    assert rc == 0, err.getvalue()
    assert "wrote" in out.getvalue() and "112 frames 160x120" in out.getvalue()
    assert (tmp_path / "lab.npz").read_bytes() == stream_path(SETS["lab"]).read_bytes()


# ---------------------------------------------------------------------------- the metrics
def test_success_at_r_and_loc_err_follow_the_finder_definitions():
    q = SETS["lab"].query("lab_vase_floor")  # three valid vases
    far = np.asarray(q.targets[2].centroid_m) + [0.7, 0.0, 0.0]
    s = score_query(q, Prediction(tuple(far), "vase"))
    assert s.distance_m == pytest.approx(0.7) and not s.success(0.5) and s.success(1.0)
    wrong_cat = score_query(q, Prediction(q.targets[0].centroid_m, "sink"))
    assert wrong_cat.distance_m == 0.0 and not wrong_cat.success(1.0)
    unlabelled = score_query(q, Prediction(q.targets[1].centroid_m))
    assert unlabelled.success(0.5)
    abstained = score_query(q, None)
    assert math.isinf(abstained.distance_m) and not abstained.success(100.0)
    scores = [s, wrong_cat, unlabelled, abstained]
    assert success_at(scores, 0.5) == 0.25 and success_at(scores, 1.0) == 0.5
    assert loc_err(scores) == pytest.approx(0.35)  # mean over the Success@1m cases only


def test_evaluate_and_query_weighted_pooling():
    perfect = {
        env: evaluate(
            fset, {q.id: Prediction(q.targets[-1].centroid_m, q.category) for q in fset.queries}
        )
        for env, fset in SETS.items()
    }
    assert all(r.success_at(0.5) == 1.0 and r.loc_err_m == 0.0 for r in perfect.values())
    half = evaluate(
        SETS["lab"],
        {q.id: Prediction(q.targets[0].centroid_m, q.category) for q in SETS["lab"].queries[:7]},
    )
    pooled = combine([half, perfect["office"]])
    n_lab, n_office = len(SETS["lab"].queries), len(SETS["office"].queries)
    assert pooled.n == n_lab + n_office
    assert pooled.success_at(1.0) == pytest.approx((7 + n_office) / (n_lab + n_office))
    assert half.subset("simple").n + half.subset("hard").n == n_lab
    summary = pooled.summary()
    assert set(summary) == {"queries", "S@0.5", "S@1", "LocErr_m"}
    with pytest.raises(KeyError, match="unknown queries"):
        evaluate(SETS["lab"], {"no_such_query": None})


def test_an_oracle_detector_on_the_streams_scores_high(streams):
    """Centroids observed in the captured frames (what a perfect detector would fuse)
    are within a metre of the ground truth for nearly every query."""
    results = []
    for env, fset in SETS.items():
        preds = {
            q.id: Prediction(
                tuple(_observed_centroid(streams[env], q.targets[0].object)), q.category
            )
            for q in fset.queries
        }
        results.append(evaluate(fset, preds))
    pooled = combine(results)
    assert pooled.success_at(1.0) >= 0.95
    assert pooled.success_at(0.5) >= 0.8
    assert pooled.loc_err_m < 0.4
