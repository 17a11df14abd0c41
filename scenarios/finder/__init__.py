"""The Finder retrieval set: object queries over the paper environments, with ground truth.

Per environment (``lab``, ``office``, ``outdoor_park``) one YAML file names the paper
scenario whose layout it uses (``scene``), declares every instance of each category in
that scene, and lists queries as in the Finder paper's evaluation:

* simple queries carry an explicit room or floor prior ("the sofa in the lounge");
* hard queries are scene-wide: visual ("the navy backpack"), relational ("the vase on
  the dark counter beside the sink") or contextual ("somewhere to wash my hands").

Each query lists every valid instance with its ground-truth 3-D centroid (metres, the
scene's world frame; the centre of the object's box). Validation checks the file against
its scene: objects exist, centroids match the scene geometry to 1 cm, room-prior targets
lie in the room, and a simple query lists *every* instance of its category in its room.

Pre-captured RGB-D streams (:mod:`scenarios.finder.streams`) and Success@r / LocErr
(:mod:`scenarios.finder.metrics`) complete the set; ``cluetwin capture-finder`` rebuilds
the streams (:mod:`scenarios.finder.capture`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from scenarios.geometry import base_heights
from scenarios.loader import Issue, ScenarioError, find_scenario, load_scenario, read_yaml
from scenarios.loader import _issues_from_validation as _issues
from scenarios.schema import Identifier, Scenario, Strict, Vec3

FINDER_DIR = Path(__file__).resolve().parent
STREAMS_DIR = FINDER_DIR / "streams"
ENVIRONMENTS = ("lab", "office", "outdoor_park")
CENTROID_TOLERANCE_M = 0.01

SIMPLE_KINDS = ("room", "floor")
HARD_KINDS = ("visual", "relational", "contextual")


class Target(Strict):
    """One valid answer: a scene object and its ground-truth centroid (metres, world)."""

    object: Identifier
    centroid_m: Vec3


class FinderQuery(Strict):
    id: Identifier
    text: str = Field(min_length=3, max_length=400)
    difficulty: Literal["simple", "hard"]
    kind: Literal["room", "floor", "visual", "relational", "contextual"]
    category: Identifier = Field(description="the category a prediction must match")
    room: Identifier | None = Field(None, description="simple 'room' queries: the room prior")
    floor: int | None = Field(None, description="simple 'floor' queries: the floor prior")
    targets: list[Target] = Field(min_length=1, description="every valid instance")

    @model_validator(mode="after")
    def _prior_matches_difficulty(self) -> FinderQuery:
        if self.difficulty == "simple":
            if self.kind not in SIMPLE_KINDS:
                raise ValueError(f"a simple query is a {' or '.join(SIMPLE_KINDS)} query")
            if self.kind == "room" and self.room is None:
                raise ValueError("a room query needs its 'room' prior")
            if self.kind == "floor" and self.floor is None:
                raise ValueError("a floor query needs its 'floor' prior")
        else:
            if self.kind not in HARD_KINDS:
                raise ValueError(f"a hard query is {', '.join(HARD_KINDS)}")
            if self.room is not None or self.floor is not None:
                raise ValueError("a hard query is scene-wide: no room or floor prior")
        ids = [t.object for t in self.targets]
        if len(set(ids)) != len(ids):
            raise ValueError("a target is listed twice")
        return self


class FinderSet(Strict):
    environment: Literal["lab", "office", "outdoor_park"]
    scene: Identifier = Field(description="id of the paper scenario whose layout is used")
    stream: str = Field(description="file name of the captured RGB-D stream (streams/)")
    categories: dict[Identifier, list[Identifier]] = Field(
        description="every instance of each category in the scene"
    )
    queries: list[FinderQuery] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> FinderSet:
        ids = [q.id for q in self.queries]
        if len(set(ids)) != len(ids):
            raise ValueError("query ids must be unique")
        return self

    def query(self, query_id: str) -> FinderQuery:
        for q in self.queries:
            if q.id == query_id:
                return q
        raise KeyError(query_id)


def object_centroid(scene: Scenario, object_id: str, heights: dict | None = None):
    """Centre of an object's box in the world frame (metres)."""
    o = scene.object(object_id)
    z0 = (heights or base_heights(scene))[object_id]
    return (o.pose.x, o.pose.y, round(z0 + o.size[2] / 2, 4))


def check_against_scene(fset: FinderSet, scene: Scenario) -> list[Issue]:
    """Problems of a set with respect to its scene, each with its path in the file."""
    issues: list[Issue] = []
    ids = {o.id for o in scene.objects}
    heights = base_heights(scene)
    rooms = {r.name: r for r in scene.environment.rooms}
    for cat, members in fset.categories.items():
        for j, m in enumerate(members):
            if m not in ids:
                issues.append(Issue(f"categories.{cat}[{j}]", f"no object {m!r} in {scene.id}"))
    for i, q in enumerate(fset.queries):
        p = f"queries[{i}]"
        members = set(fset.categories.get(q.category, []))
        if q.category not in fset.categories:
            issues.append(Issue(f"{p}.category", f"unknown category {q.category!r}"))
        if q.room is not None and q.room not in rooms:
            issues.append(Issue(f"{p}.room", f"no room {q.room!r}; rooms: {', '.join(rooms)}"))
        for j, t in enumerate(q.targets):
            tp = f"{p}.targets[{j}]"
            if t.object not in ids:
                issues.append(Issue(f"{tp}.object", f"no object {t.object!r} in {scene.id}"))
                continue
            if t.object not in members:
                issues.append(Issue(f"{tp}.object", f"{t.object!r} is not a {q.category}"))
            truth = object_centroid(scene, t.object, heights)
            err = max(abs(a - b) for a, b in zip(t.centroid_m, truth, strict=True))
            if err > CENTROID_TOLERANCE_M:
                issues.append(
                    Issue(f"{tp}.centroid_m", f"{list(t.centroid_m)} but the scene has {truth}")
                )
        known_prior = q.room is None or q.room in rooms
        if q.difficulty == "simple" and known_prior:  # the prior selects exactly the targets
            expected = {m for m in members if m in ids and _in_prior(scene, m, q, rooms)}
            listed = {t.object for t in q.targets}
            if listed != expected:
                issues.append(
                    Issue(
                        f"{p}.targets",
                        f"the {q.category} instances matching the prior are "
                        f"{sorted(expected)}, the query lists {sorted(listed)}",
                    )
                )
    return issues


def _in_prior(scene: Scenario, object_id: str, q: FinderQuery, rooms: dict) -> bool:
    o = scene.object(object_id)
    if q.kind == "room":
        x0, y0, x1, y1 = rooms[q.room].bounds
        return x0 <= o.pose.x <= x1 and y0 <= o.pose.y <= y1
    return any(
        r.floor == q.floor
        and r.bounds[0] <= o.pose.x <= r.bounds[2]
        and r.bounds[1] <= o.pose.y <= r.bounds[3]
        for r in rooms.values()
    )


def load_finder_set(name_or_path: str | Path) -> FinderSet:
    """A shipped set by environment name, or a file; validated against its scene."""
    path = Path(name_or_path)
    if str(name_or_path) in ENVIRONMENTS:
        path = FINDER_DIR / f"{name_or_path}.yaml"
    try:
        data = read_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(path, [Issue("", f"cannot read file: {exc.strerror or exc}")]) from None
    try:
        fset = FinderSet.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(path, _issues(err)) from None
    issues = check_against_scene(fset, scene_of(fset))
    if issues:
        raise ScenarioError(path, issues)
    return fset


def scene_of(fset: FinderSet) -> Scenario:
    return load_scenario(find_scenario(fset.scene))


def stream_path(fset: FinderSet, streams_dir: str | Path = STREAMS_DIR) -> Path:
    return Path(streams_dir) / fset.stream


__all__ = [
    "ENVIRONMENTS",
    "FINDER_DIR",
    "STREAMS_DIR",
    "FinderQuery",
    "FinderSet",
    "Target",
    "check_against_scene",
    "load_finder_set",
    "object_centroid",
    "scene_of",
    "stream_path",
]
