"""Feature encoders: hashing fallback, sim phrases (+ noise), reduction, open_clip loading."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.robot import CameraIntrinsics, Frame
from mapping.encoders import (
    HashingTextEmbedder,
    MiniLMTextEmbedder,
    SimEncoderConfig,
    SimFeatureEncoder,
    SubspaceProjection,
)
from mapping.vocabulary import reduction_phrases


def synthetic_frame(seg: np.ndarray, phrases: dict[int, str] | None, seed: int = 0) -> Frame:
    h, w = seg.shape
    rng = np.random.default_rng(seed)
    return Frame(
        rgb=rng.integers(0, 255, (h, w, 3), dtype=np.uint8),
        depth_m=np.full((h, w), 2.0, np.float32),
        intrinsics=CameraIntrinsics(w, h, 100.0, 100.0, w / 2, h / 2),
        odom_T_camera=np.eye(4),
        stamp_s=0.0,
        segmentation=seg,
        segment_phrases=phrases,
    )


def four_segments(h: int = 24, w: int = 32) -> np.ndarray:
    seg = np.full((h, w), 3, np.int32)
    seg[:, : w // 4] = -1  # sky: no surface
    seg[: h // 2, w // 2 :] = 7
    seg[h // 2 :, w // 2 :] = 9  # a body without a phrase
    return seg


def test_hashing_embedder_is_deterministic_unit_and_spelling_aware():
    emb = HashingTextEmbedder(64)
    a = emb.embed(["barrel", "barrels", "wooden table", ""])
    np.testing.assert_array_equal(
        a, HashingTextEmbedder(64).embed(["barrel", "barrels", "wooden table", ""])
    )
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, rtol=1e-6)
    assert not a[3].any()  # empty text: zero vector
    assert a[0] @ a[1] > 0.5 > a[0] @ a[2]


def test_sim_encoder_maps_segments_to_phrase_features():
    enc = SimFeatureEncoder(SimEncoderConfig(feature_dim=None, noise=0.0), HashingTextEmbedder(48))
    seg = four_segments()
    feats = enc.encode_frame(synthetic_frame(seg, {3: "grey floor", 7: "blue plastic barrel"}))
    assert feats.index.shape == seg.shape and feats.dim == enc.dim == 48
    assert (feats.index[seg == -1] == -1).all()
    expected = enc.encode_text(["grey floor", "blue plastic barrel", "object"])  # 9: unlabelled
    for seg_id, row in ((3, 0), (7, 1), (9, 2)):
        rows = np.unique(feats.index[seg == seg_id])
        assert rows.size == 1
        np.testing.assert_allclose(feats.table[rows[0]], expected[row], atol=1e-6)


def test_unlabelled_segments_can_be_left_without_features():
    enc = SimFeatureEncoder(
        SimEncoderConfig(feature_dim=None, unlabelled_phrase=None), HashingTextEmbedder(16)
    )
    seg = four_segments()
    feats = enc.encode_frame(synthetic_frame(seg, {3: "floor", 7: "barrel"}))
    assert (feats.index[seg == 9] == -1).all() and feats.table.shape == (2, 16)


def test_sim_noise_is_seeded_and_keeps_features_unit_length():
    seg = four_segments()
    frames = [synthetic_frame(seg, {3: "floor", 7: "barrel", 9: "crate"}, seed=k) for k in range(3)]

    def run(seed):
        enc = SimFeatureEncoder(
            SimEncoderConfig(feature_dim=None, noise=0.3, seed=seed), HashingTextEmbedder(32)
        )
        return [enc.encode_frame(f).table for f in frames]

    a, b, c = run(1), run(1), run(2)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.allclose(a[0], c[0])
    assert not np.allclose(a[0], a[1])  # fresh noise every frame
    np.testing.assert_allclose(np.linalg.norm(a[0], axis=1), 1.0, rtol=1e-5)
    clean = HashingTextEmbedder(32).embed(["floor", "barrel", "crate"])
    cos = (a[0] * clean).sum(axis=1)
    assert (cos > 0.85).all() and (cos < 0.9999).all()  # noise of norm 0.3 around the phrase


def test_sim_encoder_needs_a_segmentation():
    enc = SimFeatureEncoder(SimEncoderConfig(feature_dim=None), HashingTextEmbedder(8))
    frame = synthetic_frame(four_segments(), None)
    frame = Frame(frame.rgb, frame.depth_m, frame.intrinsics, frame.odom_T_camera, 0.0)
    with pytest.raises(ValueError, match="segmentation"):
        enc.encode_frame(frame)


def test_subspace_projection_is_orthonormal_and_deterministic():
    ref = HashingTextEmbedder(128).embed(list(reduction_phrases()))
    p1, p2 = SubspaceProjection.fit(ref, 32), SubspaceProjection.fit(ref, 32)
    np.testing.assert_array_equal(p1.basis, p2.basis)
    np.testing.assert_allclose(p1.basis.T @ p1.basis, np.eye(32), atol=1e-5)
    out = p1(ref[:5])
    assert out.shape == (5, 32)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError):
        SubspaceProjection.fit(ref, 500)


def test_reduced_minilm_features_keep_the_similarity_structure(minilm_encoder):
    phrases = [
        "blue plastic barrel", "rusty oil barrel", "steel drum", "grey plastic trash bin",
        "wooden crate", "green tarp draped over a drum", "fire extinguisher", "floor", "wall",
        "red backpack", "jansport bag", "wooden lab table", "metal storage shelf",
    ]  # fmt: skip
    queries = ["barrel", "drum", "bag", "table", "tarp"]
    full = MiniLMTextEmbedder()
    cos_full = full.embed(queries) @ full.embed(phrases).T
    cos_red = minilm_encoder.encode_text(queries) @ minilm_encoder.encode_text(phrases).T
    assert minilm_encoder.dim == 64
    for q in range(len(queries)):  # each query's ranking of the phrases is preserved
        rank_full = np.argsort(np.argsort(-cos_full[q]))
        rank_red = np.argsort(np.argsort(-cos_red[q]))
        assert np.corrcoef(rank_full, rank_red)[0, 1] > 0.85, queries[q]
        assert np.argmax(cos_red[q]) in np.argsort(-cos_full[q])[:2], queries[q]  # near-ties swap


# --------------------------------------------------------------------------- open_clip

TINY_CLIP = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 1, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A randomly initialised tiny CLIP saved as a state_dict (no weights are downloaded)."""
    open_clip = pytest.importorskip(
        "open_clip", reason="the clip extra (open_clip_torch) is not installed"
    )
    torch = pytest.importorskip("torch", reason="the clip extra (torch) is not installed")
    root = tmp_path_factory.mktemp("clip")
    (root / "TinyTestCLIP.json").write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(root / "TinyTestCLIP.json")
    torch.manual_seed(0)
    model, _, _ = open_clip.create_model_and_transforms("TinyTestCLIP", pretrained=None)
    path = root / "tiny.pt"
    torch.save(model.state_dict(), path)
    return model, open_clip.get_tokenizer("TinyTestCLIP"), path


@pytest.mark.clip
@pytest.mark.parametrize("mode", ["patches", "segments"])
def test_open_clip_checkpoint_loads_through_the_real_loader(tiny_clip, mode):
    from mapping.encoders import OpenClipConfig, OpenClipEncoder

    model, tokenizer, path = tiny_clip
    cfg = OpenClipConfig(
        arch="TinyTestCLIP", checkpoint=str(path), mode=mode, feature_dim=None, min_segment_px=4
    )
    loaded = OpenClipEncoder(cfg)
    in_memory = OpenClipEncoder.from_model(model, tokenizer, cfg)
    assert loaded.dim == in_memory.dim == 32
    texts = ["barrel", "steel drum", "floor"]
    np.testing.assert_array_equal(loaded.encode_text(texts), in_memory.encode_text(texts))
    frame = synthetic_frame(four_segments(48, 64), None, seed=3)
    a, b = loaded.encode_frame(frame), in_memory.encode_frame(frame)
    np.testing.assert_array_equal(a.index, b.index)
    np.testing.assert_array_equal(a.table, b.table)
    np.testing.assert_allclose(np.linalg.norm(a.table, axis=1), 1.0, rtol=1e-5)
    if mode == "patches":  # a 4 x 4 patch grid spread over the whole image
        assert a.table.shape == (16, 32) and np.array_equal(np.unique(a.index), np.arange(16))
        assert a.index[0, 0] == 0 and a.index[-1, -1] == 15
    else:  # one row per visible segment, none for the sky
        assert a.table.shape == (3, 32) and (a.index[frame.segmentation == -1] == -1).all()


@pytest.mark.clip
def test_open_clip_features_reduce_and_fuse_into_the_map(tiny_clip):
    from mapping.encoders import OpenClipConfig, OpenClipEncoder
    from mapping.grounding import Grounder
    from mapping.voxel_map import VoxelMap, VoxelMapConfig

    _, _, path = tiny_clip
    enc = OpenClipEncoder(OpenClipConfig(arch="TinyTestCLIP", checkpoint=str(path), feature_dim=16))
    assert enc.dim == 16
    frame = synthetic_frame(four_segments(48, 64), None)
    with VoxelMap(VoxelMapConfig(feature_dim=16)) as vmap:
        stats = vmap.integrate(frame, enc.encode_frame(frame))
        assert stats.voxels_new > 0
        result = Grounder(vmap, enc).query("barrel", (0.0, 0.0))
        assert result.text_features.shape == (6, 16)


@pytest.mark.clip
def test_open_clip_missing_checkpoint_is_an_actionable_error(tiny_clip, tmp_path):
    from mapping.encoders import OpenClipConfig, OpenClipEncoder

    with pytest.raises(FileNotFoundError, match="never downloaded"):
        OpenClipEncoder(OpenClipConfig(arch="TinyTestCLIP", checkpoint=str(tmp_path / "nope.pt")))
