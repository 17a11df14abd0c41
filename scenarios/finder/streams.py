"""Pre-captured RGB-D streams with poses, stored compactly in one ``.npz`` per environment.

=================  ===================  ===========================================
array              dtype, shape         meaning
=================  ===================  ===========================================
rgb                uint8 (N, H, W, 3)   body camera colour images
depth_mm           uint16 (N, H, W)     depth along the optical axis, millimetres;
                                        0 = no return
odom_T_camera      float64 (N, 4, 4)    optical frame (+z forward, +x right, +y down)
                                        in the world (odom) frame, metres
odom_T_body        float64 (N, 3)       base pose when captured: x (m), y (m), yaw (rad)
stamp_s            float64 (N,)         episode clock at capture, seconds
camera             uint8 (N,)           index into ``meta["cameras"]``
intrinsics         float64 (6,)         width_px, height_px, fx_px, fy_px, cx_px, cy_px
segment            uint8 (N, H, W)      simulation only: segment index per pixel, 0 =
                                        none; ``meta["phrases"][k]`` is what the
                                        camera-feature model sees for segment k
meta               str (JSON)           scene id, cameras, phrases, segment objects
=================  ===================  ===========================================

Poses and intrinsics are kept as float64: they are a few hundred bytes, and rounding them
would move back-projected points. ``meta["objects"]`` (segment index -> scene object id)
is ground truth for evaluation and tests; nothing a policy runs on may read it.
Files are written with fixed zip timestamps, so the same capture gives the same bytes.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.robot import CameraIntrinsics, Frame

DEPTH_SCALE_M = 1e-3  # one depth unit, metres
MAX_DEPTH_M = 65.535  # what uint16 millimetres can hold
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True, eq=False)
class CapturedStream:
    """A loaded stream: arrays as stored, and :class:`Frame` views on demand."""

    scene: str
    cameras: tuple[str, ...]
    phrases: dict[int, str]  # segment index -> appearance phrase
    objects: dict[int, str]  # segment index -> scene object id (evaluation only)
    intrinsics: CameraIntrinsics
    rgb: np.ndarray
    depth_mm: np.ndarray
    odom_T_camera: np.ndarray
    odom_T_body: np.ndarray
    stamp_s: np.ndarray
    camera_index: np.ndarray
    segment: np.ndarray

    def __len__(self) -> int:
        return int(self.rgb.shape[0])

    def frame(self, i: int) -> Frame:
        """Frame ``i`` as the robot interface returns one (depth in metres)."""
        return Frame(
            rgb=self.rgb[i],
            depth_m=self.depth_mm[i].astype(np.float32) * np.float32(DEPTH_SCALE_M),
            intrinsics=self.intrinsics,
            odom_T_camera=self.odom_T_camera[i],
            stamp_s=float(self.stamp_s[i]),
            camera=self.cameras[int(self.camera_index[i])],
            segmentation=self.segment[i].astype(np.int32),
            segment_phrases=self.phrases,
        )

    def frames(self) -> Iterator[Frame]:
        for i in range(len(self)):
            yield self.frame(i)

    def pixels_of(self, object_id: str) -> np.ndarray:
        """Per frame, how many pixels show ``object_id`` (evaluation and tests only)."""
        idx = [k for k, oid in self.objects.items() if oid == object_id]
        if not idx:
            return np.zeros(len(self), dtype=np.int64)
        return (self.segment == idx[0]).reshape(len(self), -1).sum(axis=1)


def write_stream(
    path: str | Path,
    frames: list[Frame],
    base_poses: list[tuple[float, ...]],
    scene: str,
    objects_by_segment: dict[int, str],
) -> Path:
    """Store frames captured from one scene; segment ids are remapped to small indices.

    ``objects_by_segment`` maps a frame's segmentation id (a pybullet body) to the scene
    object id, or to "" for floor and walls, whose phrases come from the frames."""
    if not frames:
        raise ValueError("no frames to store")
    k = frames[0].intrinsics
    cameras = sorted({f.camera for f in frames})
    phrases: dict[int, str] = {}
    objects: dict[int, str] = {}
    remap: dict[int, int] = {}
    for body in sorted({b for f in frames for b in (f.segment_phrases or {})}):
        if len(remap) >= 254:
            raise ValueError("more than 254 segments do not fit uint8 indices")
        idx = len(remap) + 1
        remap[body] = idx
        phrases[idx] = frames[0].segment_phrases[body]
        if objects_by_segment.get(body):
            objects[idx] = objects_by_segment[body]
    lut_keys = np.array(sorted(remap), dtype=np.int64)
    lut_vals = np.array([remap[b] for b in lut_keys], dtype=np.uint8)
    seg = np.zeros((len(frames), k.height_px, k.width_px), dtype=np.uint8)
    for i, f in enumerate(frames):
        s = np.asarray(f.segmentation, dtype=np.int64)
        pos = np.clip(np.searchsorted(lut_keys, s), 0, len(lut_keys) - 1)
        seg[i] = np.where(lut_keys[pos] == s, lut_vals[pos], 0)
    depth = np.stack([np.nan_to_num(f.depth_m, nan=0.0, posinf=0.0) for f in frames])
    depth_mm = np.round(np.clip(depth, 0.0, MAX_DEPTH_M) / DEPTH_SCALE_M).astype(np.uint16)
    meta = {
        "scene": scene,
        "cameras": cameras,
        "phrases": {str(i): p for i, p in phrases.items()},
        "objects": {str(i): o for i, o in objects.items()},
    }
    arrays = {
        "rgb": np.stack([f.rgb for f in frames]).astype(np.uint8),
        "depth_mm": depth_mm,
        "odom_T_camera": np.stack([f.odom_T_camera for f in frames]).astype(np.float64),
        "odom_T_body": np.asarray(base_poses, dtype=np.float64).reshape(len(frames), 3),
        "stamp_s": np.array([f.stamp_s for f in frames], dtype=np.float64),
        "camera": np.array([cameras.index(f.camera) for f in frames], dtype=np.uint8),
        "intrinsics": np.array(
            [k.width_px, k.height_px, k.fx_px, k.fy_px, k.cx_px, k.cy_px], dtype=np.float64
        ),
        "segment": seg,
        "meta": np.array(json.dumps(meta, sort_keys=True)),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue(), compresslevel=9)
    return path


def load_stream(path: str | Path) -> CapturedStream:
    with np.load(Path(path), allow_pickle=False) as z:
        meta = json.loads(str(z["meta"].reshape(-1)[0]))
        k = z["intrinsics"]
        return CapturedStream(
            scene=meta["scene"],
            cameras=tuple(meta["cameras"]),
            phrases={int(i): p for i, p in meta["phrases"].items()},
            objects={int(i): o for i, o in meta["objects"].items()},
            intrinsics=CameraIntrinsics(int(k[0]), int(k[1]), *(float(v) for v in k[2:])),
            rgb=z["rgb"],
            depth_mm=z["depth_mm"],
            odom_T_camera=z["odom_T_camera"],
            odom_T_body=z["odom_T_body"],
            stamp_s=z["stamp_s"],
            camera_index=z["camera"],
            segment=z["segment"],
        )
