"""The twin's image service payloads: simulator frames as Spot ``ImageResponse``s.

RGB is served raw (``PIXEL_FORMAT_RGB_U8``, or JPEG on request), depth as Spot does
(``PIXEL_FORMAT_DEPTH_U16`` in millimetres, registered to the visual image), and the
twin-only segmentation as ``PIXEL_FORMAT_GREYSCALE_U16`` of ``body id + 1`` with the
segment phrases in the capture parameters (see ``hardware/cameras.py``). Each shot
carries a frame-tree snapshot ``odom -> body -> sensor`` taken at the render.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from bosdyn.api import image_pb2

from agents.robot import CameraIntrinsics, Frame
from hardware import frames
from hardware.cameras import DEPTH_SCALE, SEGMENT_PHRASES_PARAM, SPOT_CAMERAS

VISUAL, DEPTH, SEGMENTATION = "visual", "depth", "segmentation"
U16_MAX = np.iinfo(np.uint16).max


@dataclass(frozen=True)
class Source:
    name: str
    camera: str  # interface camera name rendered for it
    kind: str  # visual, depth or segmentation
    sensor_frame: str


def source_table() -> dict[str, Source]:
    """Every source the twin serves, by name ("front" is the same camera as "body")."""
    table: dict[str, Source] = {}
    for camera, s in SPOT_CAMERAS.items():
        if camera == "front":
            continue
        for kind, name in ((VISUAL, s.visual), (DEPTH, s.depth), (SEGMENTATION, s.segmentation)):
            table[name] = Source(name, camera, kind, s.sensor_frame)
    return table


def describe(source: Source, k: CameraIntrinsics) -> image_pb2.ImageSource:
    """The ``ImageSource`` entry of ListImageSources (and of every response)."""
    fmt = image_pb2.Image
    out = image_pb2.ImageSource(name=source.name, cols=k.width_px, rows=k.height_px)
    out.pinhole.CopyFrom(frames.pinhole_from_intrinsics(k))
    if source.kind == VISUAL:
        out.image_type = out.IMAGE_TYPE_VISUAL
        out.pixel_formats.append(fmt.PIXEL_FORMAT_RGB_U8)
        out.image_formats.extend([fmt.FORMAT_RAW, fmt.FORMAT_JPEG])
    elif source.kind == DEPTH:
        out.image_type = out.IMAGE_TYPE_DEPTH
        out.depth_scale = DEPTH_SCALE
        out.pixel_formats.append(fmt.PIXEL_FORMAT_DEPTH_U16)
        out.image_formats.append(fmt.FORMAT_RAW)
    else:
        out.image_type = out.IMAGE_TYPE_VISUAL
        out.pixel_formats.append(fmt.PIXEL_FORMAT_GREYSCALE_U16)
        out.image_formats.append(fmt.FORMAT_RAW)
    return out


def respond(
    request: image_pb2.ImageRequest,
    source: Source,
    frame: Frame,
    odom_T_body: np.ndarray,
    acquisition_s: float,
) -> image_pb2.ImageResponse:
    """One ``ImageResponse`` for ``request`` from the rendered ``frame``."""
    fmt = image_pb2.Image
    resp = image_pb2.ImageResponse(status=image_pb2.ImageResponse.STATUS_OK)
    resp.source.CopyFrom(describe(source, frame.intrinsics))
    if request.resize_ratio not in (0.0, 1.0):
        resp.status = resp.STATUS_UNSUPPORTED_RESIZE_RATIO_REQUESTED
        return resp
    wanted_pixels = request.pixel_format or resp.source.pixel_formats[0]
    if wanted_pixels not in resp.source.pixel_formats:
        resp.status = resp.STATUS_UNSUPPORTED_PIXEL_FORMAT_REQUESTED
        return resp
    wanted_format = request.image_format or fmt.FORMAT_RAW
    if wanted_format not in resp.source.image_formats:
        resp.status = resp.STATUS_UNSUPPORTED_IMAGE_FORMAT_REQUESTED
        return resp

    shot = resp.shot
    shot.acquisition_time.FromNanoseconds(int(acquisition_s * 1e9))
    shot.frame_name_image_sensor = source.sensor_frame
    body_T_camera = np.linalg.inv(odom_T_body) @ frame.odom_T_camera
    shot.transforms_snapshot.CopyFrom(
        frames.snapshot(
            {
                frames.ODOM: ("", frames.se3_from_matrix(np.eye(4))),
                frames.VISION: (frames.ODOM, frames.se3_from_matrix(np.eye(4))),
                frames.BODY: (frames.ODOM, frames.se3_from_matrix(odom_T_body)),
                source.sensor_frame: (frames.BODY, frames.se3_from_matrix(body_T_camera)),
            }
        )
    )
    h, w = frame.depth_m.shape
    img = shot.image
    img.rows, img.cols, img.pixel_format, img.format = h, w, wanted_pixels, wanted_format
    if source.kind == VISUAL:
        if wanted_format == fmt.FORMAT_JPEG:
            from PIL import Image

            buf = io.BytesIO()
            quality = int(request.quality_percent) if request.quality_percent > 0 else 90
            Image.fromarray(frame.rgb).save(buf, format="JPEG", quality=quality)
            img.data = buf.getvalue()
        else:
            img.data = np.ascontiguousarray(frame.rgb, dtype=np.uint8).tobytes()
    elif source.kind == DEPTH:
        mm = np.rint(np.nan_to_num(frame.depth_m, nan=0.0) * DEPTH_SCALE)
        img.data = np.clip(mm, 0, U16_MAX).astype("<u2").tobytes()
    else:
        seg = frame.segmentation if frame.segmentation is not None else np.full((h, w), -1)
        img.data = np.clip(seg.astype(np.int64) + 1, 0, U16_MAX).astype("<u2").tobytes()
        table = shot.capture_params.custom_params.values[SEGMENT_PHRASES_PARAM].dict_value
        for body_id, phrase in (frame.segment_phrases or {}).items():
            table.values[str(int(body_id) + 1)].string_value.value = str(phrase)
    return resp
