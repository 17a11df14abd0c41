"""The simulator's VLM: answers only from what the rendered frame shows.

It looks at the segmentation of the frame it is given, keeps the objects with enough
visible pixels around the target pixel, and reports their appearance and those facts
whose visibility condition holds now. An object the camera cannot see (a sign under a
tarp) contributes nothing, whatever the question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.robot import Frame
from envs.world import World

IMAGE_TOKENS = 85  # what a low-detail image costs an OpenAI-style VLM, per image


@dataclass(frozen=True)
class SimVLMConfig:
    min_pixel_fraction: float = 0.002  # an object counts as seen above this image share
    window_fraction: float = 0.35  # look within this share of the image width around the target
    max_objects: int = 4  # report at most this many objects per answer


@dataclass(frozen=True)
class SimVLMAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seen: tuple[str, ...]  # object ids seen (for logs and tests, never shown to agents)


class SimVLM:
    """Deterministic stand-in for a VLM over sim frames (needs ``frame.segmentation``)."""

    def __init__(self, world: World, config: SimVLMConfig = SimVLMConfig()):
        self.world = world
        self.config = config

    def visible_objects(
        self, frame: Frame, target_px: tuple[int, int] | None
    ) -> list[tuple[str, int]]:
        """``[(object_id, pixel_count)]`` seen around ``target_px``, most prominent first."""
        seg = frame.segmentation
        if seg is None:
            raise ValueError("the sim VLM needs a frame with a segmentation image")
        h, w = seg.shape
        u, v = target_px if target_px is not None else (w // 2, h // 2)
        r = int(math.ceil(self.config.window_fraction * w))
        win = seg[max(0, v - r) : v + r + 1, max(0, u - r) : u + r + 1]
        ids, counts = np.unique(win[win >= 0], return_counts=True)
        threshold = self.config.min_pixel_fraction * h * w
        at_target = int(seg[min(max(v, 0), h - 1), min(max(u, 0), w - 1)])
        seen = [
            (self.world.by_body[int(b)], int(c))
            for b, c in zip(ids, counts, strict=True)
            if int(b) in self.world.by_body and c >= threshold
        ]
        seen.sort(key=lambda oc: (self.world.objects[oc[0]].body != at_target, -oc[1], oc[0]))
        return seen[: self.config.max_objects]

    def answer(
        self, frame: Frame, question: str, target_px: tuple[int, int] | None = None
    ) -> SimVLMAnswer:
        seen = self.visible_objects(frame, target_px)
        if not seen:
            text = "I cannot make out any object at the target; the view shows only floor or walls."
        else:
            parts = []
            for i, (oid, _) in enumerate(seen):
                spec = self.world.objects[oid].spec
                facts = [f.text for f in spec.facts if self.world.condition_holds(f.visible_when)]
                lead = "At the target I see" if i == 0 else "Nearby I also see"
                line = f"{lead} a {spec.appearance}"
                if facts:
                    line += ": " + "; ".join(facts)
                parts.append(line + ".")
            text = " ".join(parts)
        prompt_tokens = IMAGE_TOKENS + estimate_tokens(question)
        return SimVLMAnswer(text, prompt_tokens, estimate_tokens(text), tuple(o for o, _ in seen))


def estimate_tokens(text: str) -> int:
    """About four characters per token, the usual rule of thumb for English text."""
    return max(1, math.ceil(len(text) / 4))
