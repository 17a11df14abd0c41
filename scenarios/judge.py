"""The success judge: does an answer satisfy the scenario? (CLUE paper, Eq. 1)

Only the judge and the Oracle read ground truth. An answer points at an entity by a
position in the world frame; it hits an object when the point lies within
``success.radius_m`` of that object's current footprint.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scenarios.geometry import Footprint
from scenarios.schema import Scenario


@dataclass(frozen=True)
class Verdict:
    success: bool
    reward: float  # +1 in a goal state, -1 otherwise (an answer was given)
    hit: str | None  # the object the answer points at, if any
    reasons: list[str] = field(default_factory=list)


def pointed_object(
    footprints: dict[str, Footprint], x: float, y: float, radius_m: float, candidates=None
) -> str | None:
    """The object (among ``candidates`` if given) nearest to (x, y) within ``radius_m``."""
    best, best_d = None, radius_m
    for oid, fp in sorted(footprints.items()):
        if candidates is not None and oid not in candidates:
            continue
        d = fp.distance_to(x, y)
        if d <= best_d:
            best, best_d = oid, d
    return best


def judge(
    scenario: Scenario,
    footprints: dict[str, Footprint],
    text: str,
    point: tuple[float, float] | None,
) -> Verdict:
    """Judge an answer given the objects' current footprints (metres, world frame)."""
    s = scenario.success
    reasons: list[str] = []
    hit = None
    if point is not None:
        # the target entities win ties: pointing at a sign on the right barrel counts
        hit = pointed_object(footprints, point[0], point[1], s.radius_m, set(s.entities) or None)
        if hit is None:
            hit = pointed_object(footprints, point[0], point[1], s.radius_m)
    ok = True
    if s.entities:
        if point is None:
            ok = False
            reasons.append("the answer names no location")
        elif hit not in s.entities:
            ok = False
            reasons.append(
                f"the answer points at {hit or 'nothing'}, not at {' or '.join(s.entities)}"
            )
    if s.answer_contains:
        low = text.lower()
        if not any(phrase.lower() in low for phrase in s.answer_contains):
            ok = False
            reasons.append(
                "the answer text lacks " + " / ".join(repr(a) for a in s.answer_contains)
            )
    if s.final_state is not None:
        fs = s.final_state
        if isinstance(fs.near, str) and fs.near in footprints:
            tx, ty = footprints[fs.near].centre
        elif isinstance(fs.near, str):
            region = scenario.region(fs.near)
            tx, ty = region.x, region.y
        else:
            tx, ty = fs.near
        d = footprints[fs.object].distance_to(tx, ty)
        if d > fs.within_m:
            ok = False
            reasons.append(f"{fs.object} is {d:.2f} m from {fs.near}, more than {fs.within_m} m")
    return Verdict(ok, 1.0 if ok else -1.0, hit, reasons)
