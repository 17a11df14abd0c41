"""The VLM interface: answer a question about what one camera frame shows.

:class:`VLMBackend` is implemented by the simulator's VLM (in ``envs``, answering only
from what the camera sees now) and by :class:`OpenAIVisionBackend`, which sends the
frame as an image to any OpenAI-compatible vision model through an
:class:`~agents.llm.base.LLMBackend` (so vision calls can be recorded, replayed and
cached like text calls).

Usage is counted for every implementation: the base class wraps each subclass's
:meth:`VLMBackend.answer` so that every returned :class:`VLMAnswer` is added to
:attr:`VLMBackend.usage` (a call made through ``super().answer(...)`` counts once).
"""

from __future__ import annotations

import abc
import base64
import functools
import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.llm.base import (
    ChatRequest,
    CountsUsage,
    LLMBackend,
    LLMConfigError,
    Message,
    image_part,
    text_part,
)
from agents.robot import Frame


@dataclass(frozen=True)
class VLMAnswer:
    """A VLM's answer and its token cost (server-reported or estimated)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class VLMBackend(CountsUsage, abc.ABC):
    """Answers questions about single frames; counts calls and tokens in :attr:`usage`."""

    _guard = threading.local()  # per thread: {id(backend): nesting depth of answer()}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        answer = cls.__dict__.get("answer")
        if answer is not None and not getattr(answer, "__isabstractmethod__", False):
            cls.answer = _counted(answer)  # type: ignore[method-assign]

    @abc.abstractmethod
    def answer(
        self, frame: Frame, question: str, target_px: tuple[int, int] | None = None
    ) -> VLMAnswer:
        """Answer ``question`` about ``frame``.

        ``target_px`` is the pixel ``(u, v)`` (column, row) of the object the question is
        about, when known. Implementations raise only
        :class:`~agents.llm.base.LLMError` subclasses.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release resources. Safe to call twice."""


def _counted(
    method: Callable[..., VLMAnswer],
) -> Callable[..., VLMAnswer]:
    @functools.wraps(method)
    def answer(self: VLMBackend, *args: Any, **kwargs: Any) -> VLMAnswer:
        depths = VLMBackend._guard.__dict__.setdefault("depths", {})
        depth = depths.get(id(self), 0)
        depths[id(self)] = depth + 1
        try:
            result = method(self, *args, **kwargs)
        finally:
            if depth:
                depths[id(self)] = depth
            else:
                del depths[id(self)]
        if depth == 0:
            self.usage.record(result.prompt_tokens, result.completion_tokens, purpose="vlm")
        return result

    return answer


# --------------------------------------------------------------------------- encoding


def encode_image(
    rgb: np.ndarray,
    *,
    image_format: str = "PNG",
    max_side_px: int | None = None,
    target_px: tuple[int, int] | None = None,
    jpeg_quality: int = 90,
) -> str:
    """``rgb`` (H, W, 3) uint8 as a ``data:image/...;base64,`` URL.

    ``max_side_px`` shrinks the image (keeping its aspect) so its longer side fits;
    ``target_px`` (u, v) in the original image's pixels is marked with a red ring.
    """
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        raise LLMConfigError("image encoding needs Pillow: pip install pillow") from None
    array = np.asarray(rgb)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {array.shape} {array.dtype}")
    image = Image.fromarray(np.ascontiguousarray(array))
    scale = 1.0
    if max_side_px is not None and max(image.size) > max_side_px:
        scale = max_side_px / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.BILINEAR)
    if target_px is not None:
        u, v = target_px[0] * scale, target_px[1] * scale
        r = max(4.0, max(image.size) / 30)
        ImageDraw.Draw(image).ellipse(
            (u - r, v - r, u + r, v + r), outline=(255, 0, 0), width=max(1, round(r / 4))
        )
    fmt = image_format.upper()
    if fmt not in ("PNG", "JPEG"):
        raise ValueError(f"image_format must be PNG or JPEG, got {image_format!r}")
    buf = io.BytesIO()
    image.save(buf, format=fmt, **({"quality": jpeg_quality} if fmt == "JPEG" else {}))
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


DEFAULT_VLM_SYSTEM_PROMPT = (
    "You are the eyes of a mobile robot. Answer the question about the camera image "
    "briefly and factually. Describe only what is visible; say so when you cannot tell."
)


class OpenAIVisionBackend(VLMBackend):
    """A VLM behind any :class:`~agents.llm.base.LLMBackend` that accepts image parts.

    Typically ``OpenAIVisionBackend(OpenAIBackend("gpt-4o-mini"))``; wrap the LLM backend
    in a recorder or cache to record or cache vision calls. Give it its own LLM backend
    instance so that policy (text) and VLM usage stay apart; its requests carry the
    purpose ``"vlm"``.
    """

    def __init__(
        self,
        llm: LLMBackend,
        *,
        model: str = "",
        system_prompt: str = DEFAULT_VLM_SYSTEM_PROMPT,
        image_format: str = "PNG",
        max_side_px: int | None = 640,
        max_tokens: int | None = 300,
        temperature: float = 0.0,
        mark_target: bool = True,
    ) -> None:
        self.llm = llm
        self.model = model
        self.system_prompt = system_prompt
        self.image_format = image_format
        self.max_side_px = max_side_px
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.mark_target = mark_target

    def __repr__(self) -> str:
        return f"OpenAIVisionBackend({self.llm!r}, image_format={self.image_format!r})"

    def request(
        self, frame: Frame, question: str, target_px: tuple[int, int] | None = None
    ) -> ChatRequest:
        """The chat request :meth:`answer` sends (text question + one image part)."""
        h, w = frame.rgb.shape[:2]
        text = question
        if target_px is not None:
            u, v = int(target_px[0]), int(target_px[1])
            where = " (marked with a red ring)" if self.mark_target else ""
            text = (
                f"{question}\nThe object in question is at pixel (u={u}, v={v}) of the "
                f"{w}x{h} image{where}."
            )
        url = encode_image(
            frame.rgb,
            image_format=self.image_format,
            max_side_px=self.max_side_px,
            target_px=target_px if self.mark_target else None,
        )
        return ChatRequest(
            messages=(
                Message.system(self.system_prompt),
                Message.user([text_part(text), image_part(url)]),
            ),
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            purpose="vlm",
        )

    def answer(
        self, frame: Frame, question: str, target_px: tuple[int, int] | None = None
    ) -> VLMAnswer:
        reply = self.llm.complete(self.request(frame, question, target_px))
        return VLMAnswer(reply.text, reply.prompt_tokens, reply.completion_tokens)

    def close(self) -> None:
        self.llm.close()
