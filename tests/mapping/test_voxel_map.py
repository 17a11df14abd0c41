"""Voxel map: geometry against pybullet, feature fusion, carving, memory budget, spilling."""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest
from scipy.spatial import cKDTree

from agents.robot import Frame
from mapping.encoders import FrameFeatures, HashingTextEmbedder, SimEncoderConfig, SimFeatureEncoder
from mapping.grounding import Grounder, GroundingConfig
from mapping.voxel_map import VoxelMap, VoxelMapConfig, backproject, pack_keys, unpack_keys
from tests.mapping import pybullet_scene as scene_lib


def box_scene() -> scene_lib.Scene:
    s = scene_lib.Scene.empty()
    s.room(-1.0, -3.0, 6.0, 3.0)
    s.box("a", [3.0, -0.6, 0.4], [0.3, 0.3, 0.4], "wooden crate")
    s.box("b", [4.0, 1.0, 0.6], [0.4, 0.2, 0.6], "metal cabinet")
    s.cylinder("c", 2.0, 1.2, 0.25, 0.9, "blue plastic barrel", (0.1, 0.3, 0.8, 1))
    return s


def test_keys_round_trip_including_negative_indices():
    idx = np.array([[0, 0, 0], [-1, 5, -3], [1_000_000, -1_000_000, 17], [-7, -7, -7]])
    assert np.array_equal(unpack_keys(pack_keys(idx)), idx)
    keys = pack_keys(idx)
    assert (keys >= 0).all() and len(set(keys.tolist())) == len(idx)


def test_backprojection_agrees_with_pybullet_ray_tests():
    scene = box_scene()
    cam = scene_lib.Camera()
    pose = scene_lib.look_at([-0.5, -1.5, 1.1], [3.0, 0.5, 0.3])
    frame = scene_lib.render(scene, pose, cam)
    pts, pixel = backproject(frame)
    ref_pts, ref_pixel = frame.points_odom()
    assert np.array_equal(pixel, ref_pixel)
    np.testing.assert_allclose(pts, ref_pts, atol=1e-4)  # float32 vs the contract's float64

    # rays through the same pixel centres, cast by pybullet's own collision engine
    sel = np.arange(0, pixel.size, 7)
    v, u = np.divmod(pixel[sel], cam.width_px)
    k = frame.intrinsics
    rays_cam = np.stack(
        [(u + 0.5 - k.cx_px) / k.fx_px, (v + 0.5 - k.cy_px) / k.fy_px, np.ones(sel.size)], 1
    )
    rays = rays_cam @ frame.odom_T_camera[:3, :3].T
    origin = frame.odom_T_camera[:3, 3]
    hits = p.rayTestBatch(
        [origin.tolist()] * sel.size,
        (origin + 30.0 * rays).tolist(),
        physicsClientId=scene.client,
    )
    hit_ok = np.array([h[0] >= 0 for h in hits])
    hit_pos = np.array([h[3] for h in hits])
    err = np.linalg.norm(pts[sel][hit_ok] - hit_pos[hit_ok], axis=1)
    assert hit_ok.mean() > 0.99
    assert np.median(err) < 1e-4
    assert np.quantile(err, 0.95) < 5e-3  # the rendered cylinder is a tessellated mesh
    assert np.quantile(err, 0.99) < 3e-2  # silhouette pixels may graze a different surface

    # the map holds an occupied voxel wherever pybullet's rays hit (a hit on a voxel face
    # may belong to either neighbour, hence the 1 mm slack)
    vmap = VoxelMap(VoxelMapConfig(max_depth_m=30.0))
    vmap.integrate(frame)
    centres = np.concatenate([b.positions_m()[b.occupied()] for b in vmap.blocks()])
    gap, _ = cKDTree(centres).query(hit_pos[hit_ok], p=np.inf)
    assert (gap <= vmap.config.voxel_size_m / 2 + 1e-3).mean() > 0.99
    vmap.close()
    scene.close()


def _two_feature_table(dim: int = 8) -> np.ndarray:
    t = np.zeros((2, dim), np.float32)
    t[0, 0] = t[1, 1] = 1.0
    return t


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_feature_running_mean_and_counts(dtype):
    cfg = VoxelMapConfig(feature_dim=8, feature_dtype=dtype, free_space_carving=False)
    vmap = VoxelMap(cfg)
    point = np.array([[1.23, 4.56, 0.78]] * 4)
    table = _two_feature_table()
    vmap.integrate_points(point, np.zeros(3), np.zeros(4, np.int32), table)
    vmap.integrate_points(point, np.zeros(3), np.array([1, 1, 1, -1], np.int32), table)
    (block,) = list(vmap.blocks())
    assert len(block) == 1
    assert block.observations[0] == 2 and block.feature_weight[0] == 2
    assert block.logodds[0] == pytest.approx(2 * cfg.hit_logodds, abs=1e-2)
    mean = np.array([0.5, 0.5, 0, 0, 0, 0, 0, 0])  # mean of e0 and e1
    direction = block.features[0].astype(np.float32) * block.feature_scale
    np.testing.assert_allclose(direction, mean / np.linalg.norm(mean), atol=1e-2)
    assert float(block.magnitude[0]) == pytest.approx(np.linalg.norm(mean), abs=1e-3)
    np.testing.assert_allclose(block.similarity(table), [[math.sqrt(0.5)] * 2], atol=1e-2)
    np.testing.assert_allclose(block.positions_m()[0], [1.25, 4.55, 0.75], atol=1e-9)
    vmap.close()


def test_feature_dimension_mismatch_is_rejected():
    vmap = VoxelMap(VoxelMapConfig(feature_dim=16))
    with pytest.raises(ValueError, match="dimension 8"):
        vmap.integrate_points(
            np.zeros((1, 3)), np.ones(3), np.zeros(1, np.int32), _two_feature_table()
        )
    vmap.close()


@pytest.mark.parametrize(
    "kwargs", [{"voxel_size_m": 0}, {"feature_dtype": "int4"}, {"min_depth_m": 5, "max_depth_m": 1}]
)
def test_bad_config_is_rejected(kwargs):
    with pytest.raises(ValueError):
        VoxelMapConfig(**kwargs)


def test_free_space_carving_forgets_a_removed_object():
    scene = box_scene()
    cam = scene_lib.Camera()
    poses = [scene_lib.spot_camera(0.0, -0.3 + 0.1 * k, 0.0) for k in range(6)]
    vmap = VoxelMap(VoxelMapConfig())
    for pose in poses:
        vmap.integrate(scene_lib.render(scene, pose, cam))

    def occupied_near(x, y, z, half=0.25):
        n = 0
        for b in vmap.blocks():
            pos = b.positions_m()
            inside = (np.abs(pos - [x, y, z]) <= half).all(axis=1)
            n += int((inside & b.occupied()).sum())
        return n

    crate_before = occupied_near(3.0, -0.6, 0.45)
    cabinet_before = occupied_near(4.0, 1.0, 0.6)
    assert crate_before > 20 and cabinet_before > 20
    p.removeBody(
        next(b for b, ph in scene.phrases.items() if ph == "wooden crate"),
        physicsClientId=scene.client,
    )
    for _ in range(2):
        for pose in poses:
            vmap.integrate(scene_lib.render(scene, pose, cam))
    assert occupied_near(3.0, -0.6, 0.45) < 0.2 * crate_before  # seen through: carved
    assert occupied_near(4.0, 1.0, 0.6) >= 0.9 * cabinet_before  # still there: kept
    vmap.close()
    scene.close()


def test_forget_frees_the_voxels_of_what_the_robot_took_away(tmp_path):
    """A cover the robot lifted leaves voxels a hair in front of what it covered, which
    carving never reaches (within carve_margin_m): forget frees exactly those."""
    vmap = VoxelMap(VoxelMapConfig(spill_dir=str(tmp_path), memory_budget_bytes=1))
    drum = np.stack(np.meshgrid([2.05], np.arange(-0.25, 0.3, 0.1), np.arange(0.05, 0.9, 0.1), indexing="ij"), -1).reshape(-1, 3)  # fmt: skip
    cover = drum + [-0.1, 0.0, 0.0]  # the drape, 10 cm in front of the drum
    far = np.array([[40.0, 0.0, 0.5]])  # another submap, spilled to disk
    vmap.integrate_points(np.concatenate([drum, cover, far]), np.zeros(3))

    def occupied() -> int:
        return sum(int(b.occupied().sum()) for b in vmap.blocks())

    before = occupied()
    assert vmap.forget(cover) == len(cover)
    assert occupied() == before - len(cover)
    assert vmap.forget(cover) == 0 and vmap.forget(np.array([[-30.0, 5.0, 0.5]])) == 0
    vmap.integrate_points(drum, np.zeros(3))  # the drum is still seen, the cover is not
    assert occupied() == before - len(cover)
    assert vmap.stats().spilled_submaps >= 1
    assert vmap.forget(far) == 1  # a spilled submap is reloaded to forget
    vmap.close()


def corridor_scene(length_m: float) -> scene_lib.Scene:
    s = scene_lib.Scene.empty()
    s.room(0.0, -2.0, length_m, 2.0)
    phrases = ("blue plastic barrel", "wooden crate", "orange traffic cone", "metal cabinet")
    for k, x in enumerate(np.arange(3.0, length_m - 1.0, 3.0)):
        y = 1.2 if k % 2 else -1.2
        s.cylinder(f"o{k}", float(x), y, 0.28, 0.8, phrases[k % len(phrases)], (0.5, 0.5, 0.5, 1))
    return s


def test_long_traverse_stays_within_budget_and_spilled_submaps_reload_identically(tmp_path):
    scene = corridor_scene(48.0)
    cam = scene_lib.Camera()
    poses = [
        scene_lib.spot_camera(x, 0.0, yaw) for x in np.arange(1.0, 47.0, 1.5) for yaw in (0.5, -0.5)
    ]
    poses += [
        scene_lib.spot_camera(x, 0.0, math.pi) for x in np.arange(46.0, 2.0, -4.0)
    ]  # walk back
    frames = [scene_lib.render(scene, pose, cam, stamp_s=float(k)) for k, pose in enumerate(poses)]
    scene.close()
    encoder = SimFeatureEncoder(SimEncoderConfig(feature_dim=None, seed=1), HashingTextEmbedder(64))
    features = [encoder.encode_frame(f) for f in frames]

    budget = 2_000_000
    base = dict(feature_dim=64, submap_size_m=4.0, free_space_carving=False)
    bounded = VoxelMap(VoxelMapConfig(memory_budget_bytes=budget, spill_dir=str(tmp_path), **base))
    unbounded = VoxelMap(VoxelMapConfig(**base))
    spilled = loaded = 0
    for frame, feats in zip(frames, features, strict=True):
        st = bounded.integrate(frame, feats)
        spilled, loaded = spilled + st.submaps_spilled, loaded + st.submaps_loaded
        assert bounded.resident_bytes() <= budget
        unbounded.integrate(frame, feats)
    assert spilled > 0 and loaded > 0  # submaps left memory and came back when revisited
    stats = bounded.stats()
    assert stats.spilled_submaps > 0 and stats.voxels == unbounded.stats().voxels
    assert unbounded.resident_bytes() > 2 * budget  # the budget really bit

    cfg = GroundingConfig(relevancy_threshold=0.3, min_confidence=0.35)
    results = [Grounder(m, encoder, cfg).query("barrel", (24.0, 0.0)) for m in (bounded, unbounded)]
    assert results[0].candidates, "the corridor's barrels must be found"
    assert results[0].candidates == results[1].candidates
    assert results[0].viewpoints == results[1].viewpoints and results[0].tour == results[1].tour
    assert bounded.resident_bytes() <= budget  # queries stream spilled submaps
    bounded.close()
    unbounded.close()


def test_spilling_every_submap_leaves_queries_unchanged(survey_frames, minilm_encoder, tmp_path):
    frames, _ = survey_frames
    vmap = VoxelMap(VoxelMapConfig(spill_dir=str(tmp_path)))
    for frame, feats in frames[:-1]:
        vmap.integrate(frame, feats)
    grounder = Grounder(vmap, minilm_encoder)
    before = grounder.query("barrel", (1.2, 1.2))
    assert before.candidates
    tiles = [b.tile for b in vmap.blocks()]
    for tile in tiles:
        vmap.spill(tile)
    assert vmap.resident_bytes() == 0 and vmap.stats().spilled_submaps == len(tiles)
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(
        f"submap_{a}_{b}.npz" for a, b in tiles
    )
    streamed = grounder.query("barrel", (1.2, 1.2))
    assert vmap.resident_bytes() == 0  # the query streamed the submaps, it did not load them
    assert streamed.candidates == before.candidates and streamed.viewpoints == before.viewpoints
    assert streamed.tour == before.tour

    frame, feats = frames[-1]
    stats = vmap.integrate(frame, feats)  # fusion loads the submaps the frame reaches
    assert stats.submaps_loaded > 0 and vmap.stats().resident_submaps == stats.submaps_loaded
    reference = VoxelMap()
    for frame, feats in frames:
        reference.integrate(frame, feats)
    after = Grounder(vmap, minilm_encoder).query("barrel", (1.2, 1.2))
    assert (
        after.candidates
        == Grounder(reference, minilm_encoder).query("barrel", (1.2, 1.2)).candidates
    )
    vmap.close()
    reference.close()


def test_frame_features_must_match_the_image():
    vmap = VoxelMap(VoxelMapConfig(feature_dim=2))
    scene = box_scene()
    frame = scene_lib.render(scene, scene_lib.look_at([0, 0, 1], [3, 0, 0]), scene_lib.Camera())
    scene.close()
    bad = FrameFeatures(index=np.zeros((10, 10), np.int32), table=np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="index image"):
        vmap.integrate(frame, bad)
    vmap.close()


def test_a_frame_without_returns_changes_nothing():
    scene = box_scene()
    frame = scene_lib.render(scene, scene_lib.look_at([0, 0, 1], [3, 0, 0]), scene_lib.Camera())
    scene.close()
    blind = Frame(
        frame.rgb, np.zeros_like(frame.depth_m), frame.intrinsics, frame.odom_T_camera, 0.0
    )
    with VoxelMap() as vmap:
        vmap.integrate(frame)
        before = vmap.stats()
        stats = vmap.integrate(blind)
        assert (stats.points, stats.voxels_hit, stats.voxels_new, stats.voxels_carved) == (
            0,
            0,
            0,
            0,
        )
        assert vmap.stats() == before


def test_per_pixel_and_per_segment_features_fuse_the_same():
    scene = box_scene()
    frame = scene_lib.render(
        scene, scene_lib.look_at([-0.5, -1.5, 1.1], [3.0, 0.5, 0.3]), scene_lib.Camera()
    )
    scene.close()
    enc = SimFeatureEncoder(SimEncoderConfig(feature_dim=None, noise=0.0), HashingTextEmbedder(32))
    per_segment = enc.encode_frame(frame)
    flat = per_segment.index.reshape(-1)
    per_pixel = FrameFeatures(  # one table row per pixel, as a dense encoder would emit
        index=np.where(flat >= 0, np.arange(flat.size), -1).reshape(120, 160).astype(np.int32),
        table=per_segment.table[np.maximum(flat, 0)],
    )
    maps = [VoxelMap(VoxelMapConfig(feature_dim=32, feature_dtype="float16")) for _ in range(2)]
    maps[0].integrate(frame, per_segment)
    maps[1].integrate(frame, per_pixel)
    for a, b in zip(maps[0].blocks(), maps[1].blocks(), strict=True):
        assert np.array_equal(a.keys, b.keys)
        for col in ("features", "magnitude"):
            np.testing.assert_allclose(
                getattr(a, col).astype(np.float32), getattr(b, col).astype(np.float32), atol=2e-3
            )
    assert maps[0].stats().voxels > 500
    for m in maps:
        m.close()
