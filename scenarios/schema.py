"""Scenario files: the pydantic models that define and validate them.

A scenario says what the world holds and what success means; ``envs`` only builds and
steps the engine from it. All lengths are metres, all angles degrees in the file
(``yaw_deg``), converted to radians in code. Unknown keys are errors everywhere.

Cross-field rules checked here (each error names the path inside the file):
* object ids are unique and every reference (``on``, ``in``, ``covers``, fact
  conditions, success entities, oracle steps) names an existing object;
* every object lies inside the environment extent;
* objects do not overlap unless related (one rests on, in, or is covered by the other);
* the robot's start footprint overlaps no object or wall.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Colour = tuple[
    Annotated[float, Field(ge=0, le=1)],
    Annotated[float, Field(ge=0, le=1)],
    Annotated[float, Field(ge=0, le=1)],
]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=64)]


def _ordered_box(v: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    if not (v[0] < v[2] and v[1] < v[3]):
        raise ValueError("must be x_min < x_max and y_min < y_max")
    return v


Box2 = Annotated[tuple[float, float, float, float], AfterValidator(_ordered_box)]
"""An axis-aligned rectangle in metres: x_min, y_min, x_max, y_max."""

NAMED_COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.12, 0.10),
    "dark_red": (0.45, 0.05, 0.05),
    "orange": (0.95, 0.50, 0.10),
    "yellow": (0.95, 0.85, 0.15),
    "green": (0.15, 0.60, 0.20),
    "dark_green": (0.10, 0.30, 0.12),
    "blue": (0.12, 0.30, 0.80),
    "navy": (0.08, 0.12, 0.35),
    "light_blue": (0.45, 0.70, 0.95),
    "purple": (0.50, 0.20, 0.60),
    "pink": (0.95, 0.55, 0.70),
    "brown": (0.45, 0.30, 0.15),
    "tan": (0.80, 0.68, 0.48),
    "black": (0.08, 0.08, 0.08),
    "dark_grey": (0.25, 0.25, 0.27),
    "grey": (0.50, 0.50, 0.52),
    "light_grey": (0.78, 0.78, 0.80),
    "white": (0.95, 0.95, 0.95),
    "silver": (0.72, 0.74, 0.78),
}


class TaskType(StrEnum):
    disambiguation = "disambiguation"
    functional = "functional"
    occlusion = "occlusion"
    retrieval = "retrieval"


class ObjectKind(StrEnum):
    barrel = "barrel"
    tarp = "tarp"
    cart = "cart"
    bag = "bag"
    box = "box"
    lid = "lid"
    table = "table"
    sign = "sign"
    shelf = "shelf"
    chair = "chair"
    bin = "bin"
    crate = "crate"
    cabinet = "cabinet"
    counter = "counter"
    plant = "plant"
    vase = "vase"
    laptop = "laptop"
    tool = "tool"
    misc = "misc"


class Shape(StrEnum):
    box = "box"
    cylinder = "cylinder"  # size = (diameter, diameter, height)
    sphere = "sphere"  # size = (diameter, diameter, diameter)
    drape = "drape"  # a tarp: top sheet plus four hanging sides, open underneath


class Part(Strict):
    """An extra primitive of a composite object, in the object's frame."""

    shape: Literal["box", "cylinder", "sphere"]
    size: Vec3 = Field(description="metres: box x,y,z; cylinder diameter,diameter,height")
    offset: Vec3 = Field((0.0, 0.0, 0.0), description="metres, part centre in object frame")
    colour: str | Colour | None = None

    @field_validator("size")
    @classmethod
    def _positive(cls, v: Vec3) -> Vec3:
        if min(v) <= 0:
            raise ValueError("every size component must be > 0 metres")
        return v


class Pose(Strict):
    """Object or robot pose: x, y in metres; z of the object's base (None = resting on
    its support or the floor); yaw in degrees, CCW from +x."""

    x: float
    y: float
    z: float | None = None
    yaw_deg: float = 0.0

    @property
    def yaw_rad(self) -> float:
        return math.radians(self.yaw_deg)


class Condition(Strict):
    """When a fact can be seen. Exactly one field is set.

    ``not_covered_by``: hidden while that object (a tarp, a lid) covers this one.
    ``opened``: hidden until that container is opened (its lid taken off).
    """

    not_covered_by: Identifier | None = None
    opened: Identifier | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Condition:
        if (self.not_covered_by is None) == (self.opened is None):
            raise ValueError("set exactly one of 'not_covered_by' or 'opened'")
        return self

    def referenced(self) -> str:
        return self.not_covered_by or self.opened or ""


class Fact(Strict):
    """Something an inspection reveals when the object is seen and the condition holds."""

    text: str = Field(min_length=1, max_length=400)
    visible_when: Condition | None = None


class SceneObject(Strict):
    id: Identifier
    kind: ObjectKind
    shape: Shape
    size: Vec3 = Field(description="metres, bounding size x, y, z in the object frame")
    pose: Pose
    colour: str | Colour = "grey"
    appearance: str = Field(
        min_length=1,
        max_length=200,
        description="the phrase a camera-feature model would associate with it",
    )
    parts: list[Part] = Field(default_factory=list, description="extra primitives")
    facts: list[Fact] = Field(default_factory=list)
    graspable: bool = False
    movable: bool = False
    on: Identifier | None = Field(None, description="rests on top of this object")
    inside: Identifier | None = Field(None, alias="in", description="lies inside this container")
    covers: list[Identifier] = Field(default_factory=list, description="drapes over these")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("size")
    @classmethod
    def _positive(cls, v: Vec3) -> Vec3:
        if min(v) <= 0:
            raise ValueError("every size component must be > 0 metres")
        return v

    @field_validator("colour")
    @classmethod
    def _known_colour(cls, v):
        if isinstance(v, str) and v not in NAMED_COLOURS:
            raise ValueError(
                f"unknown colour {v!r}; use an RGB triple in [0, 1] or one of "
                + ", ".join(sorted(NAMED_COLOURS))
            )
        return v

    @model_validator(mode="after")
    def _one_support(self) -> SceneObject:
        if self.on and self.inside:
            raise ValueError("an object cannot be both 'on' and 'in' another")
        if self.shape is Shape.drape and not self.covers:
            raise ValueError("a drape (tarp) must list what it 'covers'")
        return self

    def rgb(self) -> tuple[float, float, float]:
        return resolve_colour(self.colour)


def resolve_colour(c: str | Colour | None, default=(0.5, 0.5, 0.5)) -> tuple[float, float, float]:
    if c is None:
        return default
    if isinstance(c, str):
        return NAMED_COLOURS[c]
    return (float(c[0]), float(c[1]), float(c[2]))


class Wall(Strict):
    start: Vec2 = Field(alias="from")
    end: Vec2 = Field(alias="to")
    thickness: float = Field(0.15, gt=0)
    height: float = Field(2.0, gt=0)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Room(Strict):
    name: Identifier
    bounds: Box2 = Field(description="x_min, y_min, x_max, y_max")
    floor: int = Field(0, description="floor index (a label: the sim is one level)")
    description: str = ""


class Region(Strict):
    """A named place an oracle or a staging sheet can refer to (e.g. a drop zone)."""

    name: Identifier
    x: float
    y: float
    description: str = ""


class Environment(Strict):
    name: str = Field(min_length=1, description="e.g. lab, office, outdoor_park")
    extent: Box2 = Field(description="metres: x_min, y_min, x_max, y_max of the walkable world")
    outdoor: bool = False
    walls: list[Wall] = Field(default_factory=list)
    rooms: list[Room] = Field(default_factory=list)
    regions: list[Region] = Field(default_factory=list)


class RobotStart(Strict):
    pose: Pose


class FinalState(Strict):
    """Optional end condition: ``object`` rests within ``within_m`` of a point or region."""

    object: Identifier
    near: Identifier | Vec2
    within_m: float = Field(1.0, gt=0)


class Success(Strict):
    """What satisfies the task.

    ``entities``: the answer must point at one of these objects (its position within
    ``radius_m`` of the object's footprint). ``answer_contains``: the answer text must
    contain at least one of these phrases (case-insensitive). ``final_state``: checked
    when the answer is given. At least one of the three is required.
    """

    entities: list[Identifier] = Field(default_factory=list)
    answer_contains: list[str] = Field(default_factory=list)
    radius_m: float = Field(0.5, gt=0)
    final_state: FinalState | None = None

    @model_validator(mode="after")
    def _something(self) -> Success:
        if not (self.entities or self.answer_contains or self.final_state):
            raise ValueError("give at least one of entities, answer_contains, final_state")
        return self


class OracleStep(Strict):
    """One step-by-step instruction for the Oracle baseline.

    goto: ``object`` (go near it) or ``region`` or ``xy``; inspect: ``object`` +
    ``question``; grasp: ``object``; place: ``region`` or ``xy``; answer: ``text`` and
    optionally ``object``.
    """

    action: Literal["goto", "inspect", "grasp", "place", "answer"]
    object: Identifier | None = None
    region: Identifier | None = None
    xy: Vec2 | None = None
    question: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _arguments(self) -> OracleStep:
        a = self.action
        need = {
            "goto": self.object or self.region or self.xy,
            "inspect": self.object and self.question,
            "grasp": self.object,
            "place": self.region or self.xy,
            "answer": self.text,
        }[a]
        if not need:
            hint = {
                "goto": "object, region or xy",
                "inspect": "object and question",
                "grasp": "object",
                "place": "region or xy",
                "answer": "text",
            }[a]
            raise ValueError(f"'{a}' needs {hint}")
        return self


class Task(Strict):
    text: str = Field(min_length=3, max_length=1000)
    type: TaskType
    budget: int = Field(20, ge=1, le=500, description="action budget N")


class Scenario(Strict):
    id: Identifier
    title: str = Field(min_length=1)
    environment: Environment
    objects: list[SceneObject] = Field(min_length=1)
    robot: RobotStart
    task: Task
    success: Success
    oracle: list[OracleStep] = Field(min_length=1)
    staging_notes: str = ""
    tags: list[str] = Field(default_factory=list)

    def object(self, object_id: str) -> SceneObject:
        for o in self.objects:
            if o.id == object_id:
                return o
        raise KeyError(object_id)

    def region(self, name: str) -> Region:
        for r in self.environment.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    @model_validator(mode="after")
    def _cross_references(self) -> Scenario:
        from scenarios import geometry  # local: geometry imports this module's types

        geometry.check_scenario(self)
        return self
