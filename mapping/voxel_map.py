"""Sparse language-embedded voxel map fused online from RGB-D frames.

Backend-agnostic: the map consumes :class:`agents.robot.Frame` (depth, intrinsics,
``odom_T_camera``) and per-frame :class:`mapping.encoders.FrameFeatures`, so sim frames
and Spot frames fuse the same way. All positions are in ``odom``, metres.

Per voxel the map keeps
* the running mean of the camera features that fell into it (``feature_dim`` values,
  stored as a unit direction in ``feature_dtype`` plus its float16 magnitude, so cosine
  queries need no per-query normalisation). The default storage is int8 (direction x
  127, cosine error about 0.002): half of float16's bytes, and numpy converts int8 to
  float32 about 2.5x faster than float16 (it has no vectorised float16 cast), which
  decides the query latency at 1e6 voxels. ``feature_dtype="float16"`` is available.
* how many frames fed that mean (``feature_weight``) and how many frames hit the voxel
  at all (``observations``),
* an occupancy log-odds: raised when a depth return lands in the voxel, lowered when a
  frame sees through it (projective free-space carving, so moved objects fade out),
* a cache of the background half of grounding's softmax (:meth:`VoxelMap.set_background`),
  refreshed lazily for voxels whose feature changed.

Layout: the plane is cut into square submaps (``submap_size_m``). Each submap holds
preallocated, growable column arrays and an index from packed int64 voxel key to row:
the keys live in row order and an int32 permutation sorts them, so a batch lookup is one
``np.searchsorted`` and inserting new voxels is one ``np.insert`` into the permutation
(12 bytes of index per voxel, no Python objects per voxel). When the resident arrays
exceed ``memory_budget_bytes``, the submaps farthest from the latest camera are written
to ``.npz`` files and dropped from memory; integration reloads them when a frame
reaches them again, and :meth:`VoxelMap.blocks` streams them from disk for queries
without making them resident, so a query over the whole map stays within the budget
plus one submap.
"""

from __future__ import annotations

import functools
import math
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from agents.robot import CameraIntrinsics

if TYPE_CHECKING:
    from agents.robot import Frame
    from mapping.encoders import FrameFeatures

_AXIS_BITS = 21  # bits per axis in a packed key: +-2^20 voxels (+-104 km at 0.1 m)
_AXIS_OFFSET = 1 << (_AXIS_BITS - 1)
_AXIS_MASK = (1 << _AXIS_BITS) - 1
_INT8_SCALE = 127.0  # int8 storage holds round(direction * 127)
_SCORE_CHUNK_ROWS = 8192  # rows dequantised at a time when scoring (stays in cache)
_INITIAL_CAPACITY = 1024  # voxels per new submap
_GROWTH = 1.5  # capacity multiplier when a submap fills up

FEATURE_DTYPES = ("int8", "float16")


def pack_keys(index: np.ndarray) -> np.ndarray:
    """Pack integer voxel indices (N, 3) into non-negative int64 keys (N,).

    Sorting keys sorts by x index, then y, then z.
    """
    idx = np.asarray(index, dtype=np.int64) + _AXIS_OFFSET
    return (idx[:, 0] << (2 * _AXIS_BITS)) | (idx[:, 1] << _AXIS_BITS) | idx[:, 2]


def unpack_keys(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_keys`: (N,) int64 keys to (N, 3) int64 voxel indices."""
    keys = np.asarray(keys, dtype=np.int64)
    out = np.empty((keys.size, 3), dtype=np.int64)
    out[:, 0] = (keys >> (2 * _AXIS_BITS)) & _AXIS_MASK
    out[:, 1] = (keys >> _AXIS_BITS) & _AXIS_MASK
    out[:, 2] = keys & _AXIS_MASK
    return out - _AXIS_OFFSET


@functools.lru_cache(maxsize=16)
def _pixel_rays(
    intrinsics: CameraIntrinsics, shape: tuple[int, int], stride: int
) -> tuple[np.ndarray, np.ndarray]:
    """Optical-frame rays with z = 1 (float32) through every ``stride``-th pixel centre,
    and the pixels' flat indices. Pixel (u, v) has its centre at (u + 0.5, v + 0.5)."""
    h, w = shape
    us = np.arange(0, w, stride)
    vs = np.arange(0, h, stride)
    rays = np.empty((vs.size, us.size, 3), np.float32)
    rays[..., 0] = ((us + 0.5 - intrinsics.cx_px) / intrinsics.fx_px)[None, :]
    rays[..., 1] = ((vs + 0.5 - intrinsics.cy_px) / intrinsics.fy_px)[:, None]
    rays[..., 2] = 1.0
    return rays.reshape(-1, 3), (vs[:, None] * w + us[None, :]).reshape(-1)


def backproject(
    frame: Frame, stride: int = 1, min_depth_m: float = 0.0, max_depth_m: float = math.inf
) -> tuple[np.ndarray, np.ndarray]:
    """Depth returns of ``frame`` in ``odom``: ``(points (N, 3) float32 m, flat pixel
    index (N,))``.

    Same contract as :meth:`agents.robot.Frame.points_odom` (float32 instead of
    float64, pixel rays cached per camera), restricted to depths within
    ``[min_depth_m, max_depth_m]``.
    """
    rays, pixel = _pixel_rays(frame.intrinsics, frame.depth_m.shape, stride)
    depth = frame.depth_m.reshape(-1)[pixel]
    with np.errstate(invalid="ignore"):
        valid = (depth > 0) & (depth >= min_depth_m) & (depth <= max_depth_m)  # NaN fails all
    idx = np.flatnonzero(valid)
    pose = frame.odom_T_camera
    points = rays[idx] @ np.ascontiguousarray(pose[:3, :3].T, dtype=np.float32)
    points *= depth[idx, None]
    points += pose[:3, 3].astype(np.float32)
    return points, pixel[idx]


@dataclass(frozen=True)
class VoxelMapConfig:
    """Map resolution, storage format, memory budget and sensor model."""

    voxel_size_m: float = 0.1  # voxel edge
    feature_dim: int = 64  # must equal the encoder's ``dim``
    feature_dtype: str = "int8"  # unit directions as int8 (x127) or float16
    submap_size_m: float = 8.0  # square submap (tile) edge; the unit of spilling
    memory_budget_bytes: int = 256 * 2**20  # resident voxel arrays; beyond it, spill
    spill_dir: str | None = None  # where spilled submaps go; None: a private temp dir
    min_depth_m: float = 0.1  # depth returns nearer than this are ignored
    max_depth_m: float = 8.0  # and farther than this (noise grows with range)
    pixel_stride: int = 1  # back-project every n-th pixel in u and v
    max_feature_weight: int = 50  # frames; beyond, the running mean becomes an EMA
    hit_logodds: float = 0.85  # occupancy log-odds added per frame with a return in the voxel
    miss_logodds: float = 0.4  # subtracted per frame that sees through the voxel
    min_logodds: float = -2.0  # clamping keeps the map able to change its mind
    max_logodds: float = 3.5
    free_space_carving: bool = True  # voxels a frame sees through lose occupancy
    carve_margin_m: float = 0.25  # a voxel must lie this far in front of the measured depth
    carve_min_z_m: float = 0.15  # never carve voxels centred below this height (floor)

    def __post_init__(self) -> None:
        if self.voxel_size_m <= 0:
            raise ValueError(f"voxel_size_m must be positive, got {self.voxel_size_m}")
        if self.feature_dim <= 0:
            raise ValueError(f"feature_dim must be positive, got {self.feature_dim}")
        if self.feature_dtype not in FEATURE_DTYPES:
            raise ValueError(
                f"feature_dtype must be one of {FEATURE_DTYPES}, got {self.feature_dtype!r}"
            )
        if self.submap_size_m < self.voxel_size_m:
            raise ValueError("submap_size_m must be at least one voxel")
        if self.pixel_stride < 1 or self.max_feature_weight < 1:
            raise ValueError("pixel_stride and max_feature_weight must be >= 1")
        if not 0 <= self.min_depth_m < self.max_depth_m:
            raise ValueError("need 0 <= min_depth_m < max_depth_m")

    @property
    def submap_voxels(self) -> int:
        """Voxels along one submap edge."""
        return max(1, round(self.submap_size_m / self.voxel_size_m))


@dataclass(frozen=True)
class IntegrationStats:
    """What one call to :meth:`VoxelMap.integrate` did."""

    points: int  # depth returns fused
    voxels_hit: int  # distinct voxels those returns fell into
    voxels_new: int  # of which were created now
    voxels_carved: int  # existing voxels this frame saw through
    submaps_spilled: int  # written to disk to stay within the budget
    submaps_loaded: int  # read back from disk because this frame reached them


@dataclass(frozen=True)
class MapStats:
    """Size of the map: everything stored, and what is resident in memory."""

    voxels: int  # stored voxels, resident or spilled
    resident_voxels: int
    resident_bytes: int  # voxel arrays and indices in memory (capacity, not just size)
    resident_submaps: int
    spilled_submaps: int

    @property
    def bytes_per_voxel(self) -> float:
        return self.resident_bytes / max(self.resident_voxels, 1)


@dataclass(frozen=True, eq=False)
class VoxelBlock:
    """One submap's voxels, as :meth:`VoxelMap.blocks` yields them. The arrays are views
    into the map's storage: read them, never write them."""

    tile: tuple[int, int]
    keys: np.ndarray  # (n,) int64 packed voxel keys
    features: np.ndarray  # (n, D) int8 or float16 unit directions (see ``feature_scale``)
    magnitude: np.ndarray  # (n,) float16 norm of the running mean (0: no feature yet)
    feature_weight: np.ndarray  # (n,) uint16 frames fused into the feature
    observations: np.ndarray  # (n,) uint16 frames with a return in the voxel
    logodds: np.ndarray  # (n,) float16 occupancy log-odds (> 0: occupied)
    background: np.ndarray | None  # (n,) float32 log sum_b exp(cos_b / T); see set_background
    voxel_size_m: float
    feature_scale: float  # stored value * feature_scale = direction component

    def __len__(self) -> int:
        return int(self.keys.size)

    def positions_m(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Voxel centres (n, 3) in ``odom``, metres (all rows, or the given ones)."""
        keys = self.keys if rows is None else self.keys[rows]
        return (unpack_keys(keys) + 0.5) * self.voxel_size_m

    def occupied(self) -> np.ndarray:
        """(n,) bool: occupancy log-odds above zero."""
        return self.logodds > 0

    def directions(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Feature directions (n, D) float32, dequantised (all rows, or the given ones)."""
        feats = self.features if rows is None else self.features[rows]
        return feats.astype(np.float32) * np.float32(self.feature_scale)

    def similarity(self, unit_queries: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosine similarity (n, k) float32 between voxel features and unit query rows.

        Features are dequantised in cache-sized chunks; nothing is renormalised (the
        stored directions are unit at insert time).
        """
        feats = self.features if rows is None else self.features[rows]
        q = (np.asarray(unit_queries, dtype=np.float32) * self.feature_scale).T
        out = np.empty((feats.shape[0], q.shape[1]), dtype=np.float32)
        buf = np.empty((min(_SCORE_CHUNK_ROWS, feats.shape[0]), feats.shape[1]), np.float32)
        for start in range(0, feats.shape[0], _SCORE_CHUNK_ROWS):
            stop = min(start + _SCORE_CHUNK_ROWS, feats.shape[0])
            chunk = buf[: stop - start]
            np.copyto(chunk, feats[start:stop], casting="unsafe")
            np.matmul(chunk, q, out=out[start:stop])
        return out


class _Submap:
    """Growable column arrays of one tile plus the key -> row index."""

    _COLUMNS = (
        "keys",
        "features",
        "magnitude",
        "feature_weight",
        "observations",
        "logodds",
        "background",
        "background_stale",
    )

    def __init__(self, tile: tuple[int, int], dim: int, dtype: str, capacity: int) -> None:
        self.tile = tile
        self.size = 0
        self.keys = np.empty(capacity, np.int64)
        self.features = np.zeros((capacity, dim), np.dtype(dtype))
        self.magnitude = np.zeros(capacity, np.float16)
        self.feature_weight = np.zeros(capacity, np.uint16)
        self.observations = np.zeros(capacity, np.uint16)
        self.logodds = np.zeros(capacity, np.float16)
        self.background = np.zeros(capacity, np.float32)  # cached softmax denominator
        self.background_stale = np.ones(capacity, bool)  # feature changed since cached
        self.background_epoch = -1  # which background set the cache holds
        self.order = np.empty(0, np.int32)  # argsort of keys[:size]

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, c).nbytes for c in self._COLUMNS) + self.order.nbytes

    def block(self, voxel_size_m: float, feature_scale: float, with_background: bool) -> VoxelBlock:
        n = self.size
        return VoxelBlock(
            tile=self.tile,
            keys=self.keys[:n],
            features=self.features[:n],
            magnitude=self.magnitude[:n],
            feature_weight=self.feature_weight[:n],
            observations=self.observations[:n],
            logodds=self.logodds[:n],
            background=self.background[:n] if with_background else None,
            voxel_size_m=voxel_size_m,
            feature_scale=feature_scale,
        )

    def lookup(self, sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``sorted_keys`` (-1 where absent) and their insertion positions."""
        n = self.size
        pos = np.searchsorted(self.keys[:n], sorted_keys, sorter=self.order)
        rows = np.full(sorted_keys.size, -1, dtype=np.int64)
        inside = pos < n
        cand = self.order[pos[inside]]
        hit = self.keys[cand] == sorted_keys[inside]
        rows[np.flatnonzero(inside)[hit]] = cand[hit]
        return rows, pos

    def append(self, sorted_new_keys: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Add absent keys (sorted, with positions from :meth:`lookup`); returns rows."""
        m = sorted_new_keys.size
        self._reserve(self.size + m)
        rows = np.arange(self.size, self.size + m, dtype=np.int64)
        self.keys[rows] = sorted_new_keys
        self.order = np.insert(self.order, positions, rows.astype(np.int32))
        self.size += m
        return rows

    def _reserve(self, needed: int) -> None:
        cap = self.keys.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, int(cap * _GROWTH) + 1)
        for name in self._COLUMNS:
            old = getattr(self, name)
            grown = np.zeros((new_cap, *old.shape[1:]), old.dtype)
            if name == "background_stale":
                grown[:] = True
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    def save(self, path: Path) -> None:
        n = self.size
        np.savez(
            path,
            tile=np.array(self.tile),
            background_epoch=np.array(self.background_epoch),
            **{c: getattr(self, c)[:n] for c in self._COLUMNS},
        )

    @classmethod
    def load(cls, path: Path) -> _Submap:
        with np.load(path) as data:
            sub = cls.__new__(cls)
            sub.tile = (int(data["tile"][0]), int(data["tile"][1]))
            sub.background_epoch = int(data["background_epoch"])
            for c in cls._COLUMNS:
                setattr(sub, c, data[c])
        sub.size = int(sub.keys.shape[0])
        sub.order = np.argsort(sub.keys, kind="stable").astype(np.int32)
        return sub


class VoxelMap:
    """Sparse voxel map with per-voxel features, occupancy and a bounded memory budget.

    Not thread-safe. Call :meth:`close` (or use it as a context manager) to delete a
    private spill directory; a user-given ``spill_dir`` is left in place.
    """

    def __init__(self, config: VoxelMapConfig | None = None) -> None:
        self.config = config or VoxelMapConfig()
        cfg = self.config
        self._feature_scale = 1.0 / _INT8_SCALE if cfg.feature_dtype == "int8" else 1.0
        self._resident: dict[tuple[int, int], _Submap] = {}
        self._spilled: dict[tuple[int, int], tuple[Path, int]] = {}  # tile -> (file, voxels)
        self._last_camera_xy = np.zeros(2)
        self._revision = 0
        self._background: tuple[np.ndarray, float] | None = None  # (unit rows (B, D), T)
        self._background_epoch = 0
        if cfg.spill_dir is None:
            self._spill_dir = Path(tempfile.mkdtemp(prefix="voxelmap-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._spill_dir, True)
        else:
            self._spill_dir = Path(cfg.spill_dir)
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            self._cleanup = None

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Drop everything; remove the spill directory if the map created it."""
        self._resident.clear()
        self._spilled.clear()
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> VoxelMap:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ fusion

    def integrate(self, frame: Frame, features: FrameFeatures | None = None) -> IntegrationStats:
        """Fuse one RGB-D frame; ``features`` (from an encoder) may be omitted.

        Depth returns outside ``[min_depth_m, max_depth_m]`` are ignored. With
        ``free_space_carving``, resident voxels that this frame sees through lose
        occupancy. Raises ``ValueError`` if the features' dimension or image size
        does not match.
        """
        cfg = self.config
        points, pixel = backproject(frame, cfg.pixel_stride, cfg.min_depth_m, cfg.max_depth_m)
        rows = table = None
        if features is not None:
            if features.index.shape != frame.depth_m.shape:
                raise ValueError(
                    f"feature index image {features.index.shape} != depth image {frame.depth_m.shape}"
                )
            rows = features.index.reshape(-1)[pixel]
            table = features.table
        carve = frame if cfg.free_space_carving else None
        return self._integrate(points, frame.odom_T_camera[:3, 3], rows, table, carve)

    def integrate_points(
        self,
        points_m: np.ndarray,
        origin_m: np.ndarray,
        feature_rows: np.ndarray | None = None,
        feature_table: np.ndarray | None = None,
    ) -> IntegrationStats:
        """Fuse depth returns ``points_m`` (N, 3, odom) seen from sensor ``origin_m``.

        ``feature_rows`` (N,) int index rows of ``feature_table`` (S, D) unit features
        (-1: no feature for that point). A voxel's observation of this frame is the mean
        feature of its points; it enters the voxel's running mean with weight
        ``1 / min(frames, max_feature_weight)``. Without an image there is no
        free-space carving.
        """
        points_m = np.asarray(points_m).reshape(-1, 3)
        return self._integrate(points_m, origin_m, feature_rows, feature_table)

    def _integrate(
        self,
        points_m: np.ndarray,
        origin_m: np.ndarray,
        feature_rows: np.ndarray | None,
        feature_table: np.ndarray | None,
        carve: Frame | None = None,
    ) -> IntegrationStats:
        """Fuse the points, carve free space along the rays of ``carve`` (the frame they
        came from) when given, then hold the memory budget."""
        hit_keys, touched, new, loaded = self._fuse(points_m, origin_m, feature_rows, feature_table)
        carved = self._carve(carve, points_m, hit_keys) if carve is not None else 0
        return IntegrationStats(
            points=int(points_m.shape[0]),
            voxels_hit=int(hit_keys.size),
            voxels_new=new,
            voxels_carved=carved,
            submaps_spilled=self._enforce_budget(recent=touched),
            submaps_loaded=loaded,
        )

    def _fuse(
        self,
        points_m: np.ndarray,
        origin_m: np.ndarray,
        feature_rows: np.ndarray | None,
        feature_table: np.ndarray | None,
    ) -> tuple[np.ndarray, set[tuple[int, int]], int, int]:
        """Hits and features into the voxels; returns (sorted hit keys, touched tiles,
        new voxels, submaps loaded from disk)."""
        cfg = self.config
        if feature_table is not None and feature_table.shape[1] != cfg.feature_dim:
            raise ValueError(
                f"features have dimension {feature_table.shape[1]}, the map stores {cfg.feature_dim}"
            )
        self._last_camera_xy = np.asarray(origin_m, dtype=np.float64).reshape(3)[:2].copy()
        self._revision += 1
        keys = pack_keys(np.floor(points_m / cfg.voxel_size_m))
        ukeys, inverse = np.unique(keys, return_inverse=True)
        frame_feat, has_feat = self._frame_features(
            ukeys.size, inverse, feature_rows, feature_table
        )
        touched: set[tuple[int, int]] = set()
        loaded = new = 0
        for tile, sel in self._group(self._tiles_of(ukeys)):
            loaded += self._make_resident(tile)
            sub = self._resident[tile]
            touched.add(tile)
            sk = ukeys[sel]
            rows, pos = sub.lookup(sk)
            absent = rows < 0
            if absent.any():
                rows[absent] = sub.append(sk[absent], pos[absent])
                new += int(absent.sum())
            self._update_hits(sub, rows, frame_feat[sel], has_feat[sel])
        return ukeys, touched, new, loaded

    def _frame_features(
        self,
        n_voxels: int,
        inverse: np.ndarray,
        feature_rows: np.ndarray | None,
        feature_table: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean feature per hit voxel (n_voxels, D) and whether it has any."""
        dim = self.config.feature_dim
        if feature_rows is None or feature_table is None:
            return np.zeros((n_voxels, dim), np.float32), np.zeros(n_voxels, bool)
        feature_rows = np.asarray(feature_rows).reshape(-1)
        valid = feature_rows >= 0
        counts = sparse.csr_matrix(
            (np.ones(int(valid.sum()), np.float32), (inverse[valid], feature_rows[valid])),
            shape=(n_voxels, feature_table.shape[0]),
        )
        total = np.asarray(counts.sum(axis=1)).reshape(-1)
        mean = np.asarray(counts @ np.asarray(feature_table, np.float32), dtype=np.float32)
        has = total > 0
        mean[has] /= total[has, None]
        return mean, has

    def _update_hits(
        self, sub: _Submap, rows: np.ndarray, feat: np.ndarray, has: np.ndarray
    ) -> None:
        cfg = self.config
        sub.observations[rows] = np.minimum(sub.observations[rows].astype(np.int32) + 1, 65535)
        lo = sub.logodds[rows].astype(np.float32) + cfg.hit_logodds
        sub.logodds[rows] = np.minimum(lo, cfg.max_logodds)
        if not has.any():
            return
        rows, feat = rows[has], feat[has]
        weight = np.minimum(sub.feature_weight[rows].astype(np.int32) + 1, cfg.max_feature_weight)
        old = sub.features[rows].astype(np.float32) * (
            self._feature_scale * sub.magnitude[rows].astype(np.float32)[:, None]
        )
        mean = old + (feat - old) / weight[:, None]
        norm = np.linalg.norm(mean, axis=1)
        direction = mean / np.maximum(norm, 1e-12)[:, None]
        sub.features[rows] = self._quantise(direction)
        sub.magnitude[rows] = norm
        sub.feature_weight[rows] = weight
        sub.background_stale[rows] = True

    def _quantise(self, direction: np.ndarray) -> np.ndarray:
        if self.config.feature_dtype == "int8":
            return np.clip(np.rint(direction * _INT8_SCALE), -127, 127).astype(np.int8)
        return direction.astype(np.float16)

    def _carve(self, frame: Frame, points_m: np.ndarray, hit_keys: np.ndarray) -> int:
        """Projective free-space carving: a resident voxel that projects into the image
        in front of the measured depth by more than ``carve_margin_m`` was seen through,
        so its occupancy drops by ``miss_logodds``. Only voxels inside the bounding box
        of the camera and this frame's returns can qualify (every ray lies in it)."""
        cfg = self.config
        if points_m.shape[0] == 0:
            return 0
        pose = frame.odom_T_camera
        lo = np.minimum(points_m.min(axis=0), pose[:3, 3])
        hi = np.maximum(points_m.max(axis=0), pose[:3, 3])
        lo_idx = np.floor(lo / cfg.voxel_size_m).astype(np.int64)
        hi_idx = np.floor(hi / cfg.voxel_size_m).astype(np.int64)
        lo_idx[2] = max(lo_idx[2], int(np.floor(cfg.carve_min_z_m / cfg.voxel_size_m)))
        edge = cfg.submap_voxels
        rot = pose[:3, :3].T  # odom -> camera
        trans = -rot @ pose[:3, 3]
        k = frame.intrinsics
        h, w = frame.depth_m.shape
        carved = 0
        for tile, sub in self._resident.items():
            if not (
                lo_idx[0] < (tile[0] + 1) * edge
                and hi_idx[0] >= tile[0] * edge
                and lo_idx[1] < (tile[1] + 1) * edge
                and hi_idx[1] >= tile[1] * edge
            ):
                continue
            n = sub.size
            idx = unpack_keys(sub.keys[:n])
            cand = np.flatnonzero(
                (idx >= lo_idx).all(axis=1)
                & (idx <= hi_idx).all(axis=1)
                & (sub.logodds[:n] > cfg.min_logodds)
            )
            if cand.size == 0:
                continue
            centre = (idx[cand] + 0.5) * cfg.voxel_size_m
            cam = centre @ rot.T + trans
            z = cam[:, 2]
            front = z > cfg.min_depth_m
            cand, cam, z = cand[front], cam[front], z[front]
            u = np.floor(k.fx_px * cam[:, 0] / z + k.cx_px).astype(np.int64)
            v = np.floor(k.fy_px * cam[:, 1] / z + k.cy_px).astype(np.int64)
            inside = (u >= 0) & (u < w) & (v >= 0) & (v < h)
            cand, z = cand[inside], z[inside]
            measured = frame.depth_m[v[inside], u[inside]]
            seen_through = (measured > 0) & (z < measured - cfg.carve_margin_m)
            rows = cand[seen_through]
            if rows.size == 0:
                continue
            keys = sub.keys[rows]
            pos = np.minimum(np.searchsorted(hit_keys, keys), hit_keys.size - 1)
            rows = rows[hit_keys[pos] != keys]  # a return in the voxel this frame outweighs a pass
            lo_odds = sub.logodds[rows].astype(np.float32) - cfg.miss_logodds
            sub.logodds[rows] = np.maximum(lo_odds, cfg.min_logodds)
            carved += rows.size
        return carved

    # ------------------------------------------------------------------ submaps

    def _tiles_of(self, keys: np.ndarray) -> np.ndarray:
        """(N, 2) int64 tile coordinates of packed keys."""
        idx = unpack_keys(keys)[:, :2]
        return np.floor_divide(idx, self.config.submap_voxels)

    @staticmethod
    def _group(tiles: np.ndarray) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """Yield (tile, row indices) for each distinct tile, in sorted tile order."""
        if tiles.shape[0] == 0:
            return
        packed = ((tiles[:, 0] + _AXIS_OFFSET) << 32) | (tiles[:, 1] + _AXIS_OFFSET)
        if (packed == packed[0]).all():
            yield (int(tiles[0, 0]), int(tiles[0, 1])), np.arange(tiles.shape[0])
            return
        uniq, inverse = np.unique(packed, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(uniq.size + 1))
        for k in range(uniq.size):
            members = order[bounds[k] : bounds[k + 1]]
            yield (int(tiles[members[0], 0]), int(tiles[members[0], 1])), members

    def _make_resident(self, tile: tuple[int, int]) -> int:
        """Ensure ``tile`` is in memory (creating or loading it); 1 if it was loaded."""
        if tile in self._resident:
            return 0
        if tile in self._spilled:
            path, _ = self._spilled.pop(tile)
            self._resident[tile] = _Submap.load(path)
            path.unlink()
            return 1
        self._resident[tile] = _Submap(
            tile, self.config.feature_dim, self.config.feature_dtype, _INITIAL_CAPACITY
        )
        return 0

    def _tile_distance(self, tile: tuple[int, int]) -> float:
        edge = self.config.submap_voxels * self.config.voxel_size_m
        centre = (np.array(tile, dtype=float) + 0.5) * edge
        return float(np.hypot(*(centre - self._last_camera_xy)))

    def _enforce_budget(self, recent: set[tuple[int, int]]) -> int:
        """Spill submaps until within budget: first those the latest frame did not touch,
        then (only if one frame's footprint alone exceeds the budget) the touched ones;
        farthest from the latest camera first. Afterwards resident bytes <= budget."""
        spilled = 0
        budget = self.config.memory_budget_bytes
        if self.resident_bytes() <= budget:
            return 0
        victims = sorted(self._resident, key=lambda t: (t in recent, -self._tile_distance(t), t))
        for tile in victims:
            if self.resident_bytes() <= budget:
                break
            self.spill(tile)
            spilled += 1
        return spilled

    def spill(self, tile: tuple[int, int]) -> Path:
        """Write a resident submap to disk and drop it from memory; returns the file."""
        sub = self._resident.pop(tile)
        path = self._spill_dir / f"submap_{tile[0]}_{tile[1]}.npz"
        sub.save(path)
        self._spilled[tile] = (path, sub.size)
        return path

    # ------------------------------------------------------------------ reading

    def set_background(self, unit_features: np.ndarray, temperature: float) -> None:
        """Cache, per voxel, ``log sum_b exp(cos(f, b) / temperature)`` over the rows
        ``b`` of ``unit_features`` (B, D): the background half of grounding's softmax.

        The background set is fixed per map, so a query then needs one cosine per
        voxel instead of 1 + B. The cache is filled lazily by :meth:`blocks`, only for
        voxels whose feature changed since; setting a different set invalidates it.
        """
        feats = np.ascontiguousarray(unit_features, dtype=np.float32)
        if feats.ndim != 2 or feats.shape[1] != self.config.feature_dim:
            raise ValueError(f"background features must be (B, {self.config.feature_dim})")
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        current = self._background
        if current is not None and current[1] == temperature and np.array_equal(current[0], feats):
            return
        self._background = (feats, float(temperature))
        self._background_epoch += 1

    def _refresh_background(self, sub: _Submap) -> None:
        feats, temperature = self._background
        n = sub.size
        if sub.background_epoch != self._background_epoch:
            rows = np.arange(n)
        else:
            rows = np.flatnonzero(sub.background_stale[:n])
        if rows.size:
            block = sub.block(self.config.voxel_size_m, self._feature_scale, with_background=False)
            z = block.similarity(feats, rows if rows.size < n else None) / temperature
            top = z.max(axis=1)
            sub.background[rows] = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
            sub.background_stale[rows] = False
        sub.background_epoch = self._background_epoch

    def blocks(self) -> Iterator[VoxelBlock]:
        """Every submap's voxels in sorted tile order; spilled ones are streamed from disk
        without becoming resident (resident memory grows by one submap at most).

        With a background set (:meth:`set_background`) each block's ``background``
        column is brought up to date first (for a streamed submap, in its temporary
        copy only)."""
        cfg = self.config
        with_background = self._background is not None
        for tile in sorted(set(self._resident) | set(self._spilled)):
            sub = self._resident.get(tile)
            if sub is None:
                sub = _Submap.load(self._spilled[tile][0])
            if with_background:
                self._refresh_background(sub)
            yield sub.block(cfg.voxel_size_m, self._feature_scale, with_background)

    def stats(self) -> MapStats:
        resident_voxels = sum(s.size for s in self._resident.values())
        return MapStats(
            voxels=resident_voxels + sum(n for _, n in self._spilled.values()),
            resident_voxels=resident_voxels,
            resident_bytes=self.resident_bytes(),
            resident_submaps=len(self._resident),
            spilled_submaps=len(self._spilled),
        )

    def forget(self, points_m: np.ndarray) -> int:
        """Mark the voxels holding ``points_m`` free: the robot took away what was there
        (a cover it lifted), which a camera may never see through again when what lay
        under it is within ``carve_margin_m``. Returns how many voxels were occupied."""
        cfg = self.config
        keys = np.unique(
            pack_keys(np.floor(np.asarray(points_m).reshape(-1, 3) / cfg.voxel_size_m))
        )
        forgotten = 0
        for tile, sel in self._group(self._tiles_of(keys)):
            if tile not in self._resident and tile not in self._spilled:
                continue
            self._make_resident(tile)
            sub = self._resident[tile]
            rows, _ = sub.lookup(keys[sel])
            rows = rows[rows >= 0]
            forgotten += int((sub.logodds[rows] > 0).sum())
            sub.logodds[rows] = cfg.min_logodds
        self._revision += 1
        return forgotten

    def resident_bytes(self) -> int:
        """Bytes of voxel arrays and indices held in memory (allocated capacity)."""
        return sum(s.nbytes for s in self._resident.values())

    @property
    def revision(self) -> int:
        """Increases with every integrated frame; derived products may cache on it."""
        return self._revision
