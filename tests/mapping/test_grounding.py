"""Grounding on a surveyed pybullet room: recall, false positives, viewpoints, tour."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mapping.grid import cell_of, reachable_mask
from mapping.grounding import Grounder, GroundingConfig, kappa_from_logit, relevancy_blocks
from mapping.tsp import solve_tour
from tests.mapping.grids import walled_grid

BARRELS = ("barrel_a", "barrel_b", "barrel_c")


def planar_distance(cand, xyz) -> float:
    return math.hypot(cand.centroid_m[0] - xyz[0], cand.centroid_m[1] - xyz[1])


def nearest(cands, xyz):
    return min(cands, key=lambda c: planar_distance(c, xyz))


@pytest.fixture(scope="module")
def barrel_result(barrel_survey, minilm_encoder):
    grounder = Grounder(barrel_survey.voxel_map, minilm_encoder)
    return grounder, grounder.query("barrel", barrel_survey.start_xy)


def test_every_barrel_is_a_candidate_near_its_true_centre(barrel_result, barrel_survey):
    _, result = barrel_result
    for name in BARRELS:
        truth = barrel_survey.truth[name]
        assert planar_distance(nearest(result.candidates, truth), truth) < 0.5, name


def test_a_barrel_like_distractor_is_a_false_positive_and_unrelated_objects_are_not(
    barrel_result, barrel_survey
):
    _, result = barrel_result
    drum = barrel_survey.truth["drum"]
    assert planar_distance(nearest(result.candidates, drum), drum) < 0.5  # "steel drum"
    for name in ("crate", "cone", "table"):
        truth = barrel_survey.truth[name]
        assert planar_distance(nearest(result.candidates, truth), truth) > 0.8, name
    barrel_conf = [nearest(result.candidates, barrel_survey.truth[n]).confidence for n in BARRELS]
    assert nearest(result.candidates, drum).confidence < min(barrel_conf)
    assert [c.confidence for c in result.candidates] == sorted(
        (c.confidence for c in result.candidates), reverse=True
    )


def test_synonym_query_finds_the_same_objects(barrel_survey, minilm_encoder):
    result = Grounder(barrel_survey.voxel_map, minilm_encoder).query("drum", barrel_survey.start_xy)
    drum = barrel_survey.truth["drum"]
    assert planar_distance(result.candidates[0], drum) < 0.5  # the steel drum is the best match


def test_cached_relevancy_equals_the_papers_softmax(barrel_result, barrel_survey):
    grounder, result = barrel_result
    feats, temp = result.text_features, result.temperature
    for block, rows, logit in relevancy_blocks(barrel_survey.voxel_map, feats, temp):
        sims = block.similarity(feats, rows)
        explicit = np.exp(sims[:, 0] / temp) / np.exp(sims / temp).sum(axis=1)
        np.testing.assert_allclose(kappa_from_logit(logit), explicit, rtol=1e-4, atol=1e-6)
    assert result.kept_voxels > 0


def test_viewpoints_are_free_reachable_and_at_the_viewing_distance(barrel_result):
    grounder, result = barrel_result
    grid = grounder.map_grid()
    reach = reachable_mask(grid, np.array(result.robot_xy_m), grounder.config.robot_radius_m)
    tolerance = grid.resolution_m * math.sqrt(2) / 2 + 1e-9  # snapping to a cell centre
    assert all(vp is not None for vp in result.viewpoints)
    for cand, vp in zip(result.candidates, result.viewpoints, strict=True):
        i, j = cell_of(grid, np.array(vp.xy_m))
        assert grid.free[i, j] and reach[i, j]
        assert abs(vp.distance_m - grounder.config.view_distance_m) <= tolerance
        # on the robot's side of the candidate, facing it
        to_robot = np.array(result.robot_xy_m) - cand.xy
        assert np.dot(np.array(vp.xy_m) - cand.xy, to_robot) > 0
        facing = np.array([math.cos(vp.yaw_rad), math.sin(vp.yaw_rad)])
        assert np.dot(facing, cand.xy - np.array(vp.xy_m)) == pytest.approx(vp.distance_m, abs=1e-6)


def test_tour_is_the_optimal_order_over_the_viewpoints(barrel_result):
    _, result = barrel_result
    pts = np.array([result.viewpoints[k].xy_m for k in range(len(result.candidates))])
    best = solve_tour(np.array(result.robot_xy_m), pts)
    assert sorted(result.tour) == list(range(len(result.candidates)))
    assert result.tour_length_m == pytest.approx(best.length_m)


def test_viewpoints_snap_to_the_robots_side_of_an_injected_grid(barrel_survey, minilm_encoder):
    grid = walled_grid()
    cfg = GroundingConfig(snap_radius_m=1.5)
    grounder = Grounder(barrel_survey.voxel_map, minilm_encoder, cfg)
    result = grounder.query("barrel", (1.2, 1.2), grid=grid)
    by_name = {n: nearest(result.candidates, barrel_survey.truth[n]) for n in BARRELS}
    k_east = result.candidates.index(by_name["barrel_a"])  # (7.2, 3.4): beyond the wall
    # its ideal viewpoint (x ~ 6.1) lies beyond the wall; the reachable side is > 1.5 m away
    assert result.viewpoints[k_east] is None and k_east not in result.tour
    k_west = result.candidates.index(by_name["barrel_c"])  # (2.4, 7.2): same side as the robot
    vp = result.viewpoints[k_west]
    i, j = cell_of(grid, np.array(vp.xy_m))
    assert grid.free[i, j]
    assert vp.distance_m == pytest.approx(cfg.view_distance_m, abs=0.08)
    assert k_west in result.tour


def test_unreachable_pocket_is_never_a_viewpoint():
    grid = walled_grid()
    reach = reachable_mask(grid, np.array([1.2, 1.2]), 0.4)
    assert reach[10, 10] and not reach[80, 90] and grid.free[80, 90]
    assert not reach[50, 60]  # east of the wall


def test_no_candidates_for_an_absent_concept(barrel_survey, minilm_encoder):
    result = Grounder(barrel_survey.voxel_map, minilm_encoder).query("backpack", (1.2, 1.2))
    assert result.candidates == () and result.tour == () and result.tour_length_m == 0.0


def test_encoder_and_map_dimensions_must_agree(barrel_survey):
    from mapping.encoders import HashingTextEmbedder, SimEncoderConfig, SimFeatureEncoder

    enc = SimFeatureEncoder(SimEncoderConfig(feature_dim=None), HashingTextEmbedder(32))
    with pytest.raises(ValueError, match="32-d"):
        Grounder(barrel_survey.voxel_map, enc)


def _slab(lo, hi, step=0.1):
    axes = [np.arange(a + step / 2, b, step) for a, b in zip(lo, hi, strict=True)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def test_instances_split_touching_objects_by_appearance(barrel_survey, minilm_encoder):
    """A meter lying on a table touches it; appearance keeps them two instances, while a
    second identical table apart from the first is an instance of its own."""
    grounder = Grounder(barrel_survey.voxel_map, minilm_encoder)
    table = _slab((0.0, 0.0, 0.6), (1.0, 0.6, 0.8))
    meter = _slab((0.3, 0.2, 0.8), (0.6, 0.4, 1.0))  # 12 voxels
    other = _slab((3.0, 0.0, 0.6), (4.0, 0.6, 0.8))
    rows = minilm_encoder.encode_text(["small white side table", "yellow handheld multimeter"])
    rng = np.random.default_rng(0)
    positions = np.concatenate([table, meter, other])
    features = np.concatenate(
        [np.repeat(rows[:1], len(table), 0), np.repeat(rows[1:], len(meter), 0),
         np.repeat(rows[:1], len(other), 0)]
    )  # fmt: skip
    features += rng.normal(0, 0.02, features.shape)
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    found = grounder.instances(positions, features)
    assert len(found) == 3
    small = min(found, key=lambda c: c.size_voxels)
    assert small.size_voxels == len(meter)
    assert np.allclose(small.centroid_m, meter.mean(0), atol=1e-6)
    # geometry alone (one appearance everywhere) merges the meter into its table
    same = np.repeat(rows[:1], len(positions), 0)
    assert sorted(c.size_voxels for c in grounder.instances(positions, same)) == [
        len(other),
        len(table) + len(meter),
    ]
