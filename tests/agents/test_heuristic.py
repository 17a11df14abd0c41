"""The offline heuristic responder: whole synthetic episodes, parsing, repair, determinism.

No simulator: :class:`ScriptedWorld` plays the policy's side of the loop. It keeps an
observation graph, answers map queries, walks, inspects (with scripted VLM answers),
grasps and places, and renders each step with the real prompt code
(:func:`agents.clue.prompt.render_user_message`) in the policy's line formats. The
responder sees only that text.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import pytest

from agents.clue.heuristic import HeuristicResponder, judge, parse_view, respond, split_args
from agents.clue.lexicon import parse_task, scan_cues
from agents.clue.prompt import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_NO_TOUR,
    StepContext,
    history_line,
    node_line,
    render_user_message,
)
from agents.clue.schema import StepReply
from agents.llm.base import ChatRequest, Message
from agents.llm.structured import complete_structured, parse_reply

pytestmark = pytest.mark.timeout(60)

# --------------------------------------------------------------------------- a scripted world


@dataclass
class Thing:
    """Ground truth of the scripted world (never shown to the responder)."""

    key: str
    concepts: tuple[str, ...]  # map queries that return it (false positives included)
    xy: tuple[float, float]
    look: str  # the VLM's answer when nothing covers it
    covers: str | None = None  # key of the thing this one lies on
    graspable: bool = False
    hidden: bool = False  # only mapped once the robot has visited a frontier


@dataclass
class ScriptedWorld:
    task: str
    things: list[Thing]
    budget: int = 20
    robot_xy: tuple[float, float] = (1.0, 1.0)
    use_tour: bool = True
    frontiers: tuple[tuple[float, float], ...] = ()
    validate: bool = True
    nodes: dict[str, dict] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    holding: str | None = None
    hypothesis: dict | None = None
    new_obs: list[str] = field(default_factory=list)
    tour: list[str] = field(default_factory=list)
    answer: tuple[str, str | None] | None = None
    explored: bool = False
    moved: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    prompts: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ rendering
    def context(self, step: int) -> StepContext:
        lines = [
            node_line(n, a["kind"], a["xy"], a["description"])
            for n, a in sorted(self.nodes.items())
        ]
        return StepContext(
            task=self.task,
            step=step,
            budget=self.budget,
            robot_xy=self.robot_xy,
            holding=self.holding,
            nodes=lines,
            tour=(self.tour if self.use_tour else None),
            new_observations=self.new_obs or ["episode start"],
            history=self.history,
            hypothesis=self.hypothesis,
        )

    def request(self, step: int) -> ChatRequest:
        user = render_user_message(self.context(step))
        self.prompts.append(user)
        system = SYSTEM_PROMPT if self.use_tour else SYSTEM_PROMPT_NO_TOUR
        return ChatRequest(
            messages=(Message.system(system), Message.user(user)), purpose="clue.step"
        )

    # ------------------------------------------------------------------ graph
    def _name(self, stem: str) -> str:
        k = self.counters.get(stem, 0) + 1
        self.counters[stem] = k
        return f"{stem}_{k}"

    def _thing_at(self, xy, radius=0.6) -> list[Thing]:
        near = [t for t in self.things if math.dist(t.xy, xy) <= radius and t.key not in self.moved]
        return sorted(near, key=lambda t: (t.covers is None, math.dist(t.xy, xy)))

    def query(self, concept: str) -> tuple[str, str]:
        stem = re.sub(r"[^a-z0-9]+", "_", concept.lower()).strip("_")
        found = [
            t
            for t in self.things
            if concept in t.concepts
            and (self.explored or not t.hidden)
            and t.key not in self.moved
            and self.holding_key() != t.key
        ]
        ops, names = [], []
        for t in found:
            name = next(
                (
                    n
                    for n, a in self.nodes.items()
                    if a.get("concept") == concept and math.dist(a["xy"], t.xy) < 0.5
                ),
                None,
            )
            if name is None:
                name = self._name(stem)
                desc = f"possible {concept} (confidence 0.6{len(names)}, 40 voxels, 0.6 x 0.9 m)"
                self.nodes[name] = {
                    "kind": "object",
                    "xy": t.xy,
                    "description": desc,
                    "concept": concept,
                }
                dx, dy = self.robot_xy[0] - t.xy[0], self.robot_xy[1] - t.xy[1]
                d = math.hypot(dx, dy) or 1.0
                vp = (t.xy[0] + 1.2 * dx / d, t.xy[1] + 1.2 * dy / d)
                self.nodes[f"near_{name}"] = {
                    "kind": "region",
                    "xy": vp,
                    "description": f"viewpoint 1.2 m from {name}, facing it (yaw 0.00 rad)",
                }
                ops.append(f"add_node(name={name}, type=object, ...)")
            if name not in names:
                names.append(name)
        if not names:
            for xy in self.frontiers:
                if not any(math.dist(a["xy"], xy) < 0.5 for a in self.nodes.values()):
                    name = self._name("frontier")
                    self.nodes[name] = {
                        "kind": "region",
                        "xy": xy,
                        "description": "edge of the mapped area; unexplored space beyond",
                    }
                    ops.append(f"add_node(name={name}, type=region, ...)")
            self.tour = []
            return "no candidates", ops
        order, pos, left = [], self.robot_xy, list(names)
        while left:
            nxt = min(left, key=lambda n: (math.dist(pos, self.nodes[n]["xy"]), n))
            order.append(nxt)
            left.remove(nxt)
            pos = self.nodes[nxt]["xy"]
        self.tour = order
        return f"{len(names)} candidates: {', '.join(sorted(names))}", ops

    def holding_key(self) -> str | None:
        if self.holding is None:
            return None
        return self.nodes[self.holding].get("thing")

    # ------------------------------------------------------------------ acting
    def act(self, reply: StepReply, step: int) -> bool:
        a = reply.action
        args = a.args
        self.hypothesis = reply.hypothesis.model_dump()
        self.actions.append(a.name)
        if a.name == "answer":
            self.answer = (args.text or "", args.entity)
            return True
        ops: list[str] = []
        if a.name == "query":
            status, text = "ok", None
            text, ops = self.query(args.concept)
        elif a.name == "goto":
            self.robot_xy = tuple(self.nodes[args.region]["xy"])
            if args.region.startswith("frontier"):
                self.explored = True
            status, text = "ok", f"arrived at {args.region}"
        elif a.name == "inspect":
            node = self.nodes[args.object]
            d = math.dist(self.robot_xy, node["xy"])
            if d > 2.8:
                status, text = "rejected", f"{args.object} is {d:.1f} m away; go near it first"
            else:
                seen = self._thing_at(node["xy"])
                if not seen:
                    text = "I cannot make out any object at the target; only floor or walls."
                else:
                    text = seen[0].look
                    extra = [t for t in self.things if t is not seen[0] and t.key in self.moved]
                    extra = [t for t in extra if math.dist(t.xy, node["xy"]) < 2.0]
                    if extra:
                        text += " Nearby I also see " + extra[0].look.split(" see ", 1)[-1]
                base = node["description"].split("; inspection:")[0]
                node["description"] = f"{base}; inspection: {text[:240]}"
                status = "ok"
        elif a.name == "grasp":
            node = self.nodes[args.object]
            d = math.dist(self.robot_xy, node["xy"])
            seen = self._thing_at(node["xy"])
            if self.holding:
                status, text = (
                    "rejected",
                    f"the gripper already holds {self.holding}; place it first",
                )
            elif d > 1.7:
                status, text = "rejected", f"{args.object} is {d:.1f} m away; go near it first"
            elif seen and seen[0].covers and not seen[0].graspable:
                status = "failed"
                text = "TargetOccluded: the object is covered by something; remove that first"
            elif not seen or not seen[0].graspable:
                status, text = "failed", "NothingThere: nothing graspable at the target"
            else:
                node["thing"] = seen[0].key
                self.holding = args.object
                node["description"] = "held by the robot"
                spot = self._name("free_spot")
                xy = (self.robot_xy[0] - 1.2, self.robot_xy[1])
                self.nodes[spot] = {
                    "kind": "region",
                    "xy": xy,
                    "description": "free floor within arm's reach for putting things down",
                }
                status, text = "ok", f"holding {args.object}"
        else:  # place
            if self.holding != args.object:
                status, text = "rejected", f"the robot is not holding {args.object}"
            else:
                d = math.dist(self.robot_xy, self.nodes[args.region]["xy"])
                if d > 1.5:
                    status, text = "rejected", f"{args.region} is {d:.1f} m away"
                else:
                    key = self.nodes[args.object]["thing"]
                    self.moved.add(key)
                    self.nodes[args.object]["xy"] = self.nodes[args.region]["xy"]
                    self.nodes[args.object]["description"] = f"moved by the robot to {args.region}"
                    self.holding = None
                    status, text = "ok", f"placed {args.object} at {args.region}"
        shown = [v for v in (args.object, args.region) if v]
        if args.concept:
            shown.append(repr(args.concept))
        if args.question:
            shown.append(repr(args.question))
        self.history.append(history_line(step, a.name, shown, status, text))
        self.new_obs = ops + [f"result of {a.signature()}: {status}: {text}"]
        return False

    def validator(self, reply: StepReply) -> str | None:
        a = reply.action
        for _, name, kind in a.node_args():
            if name not in self.nodes or self.nodes[name]["kind"] != kind:
                return f"unknown {kind} '{name}' in {a.name}"
        return None

    def run(self, responder: HeuristicResponder | None = None) -> ScriptedWorld:
        responder = responder or HeuristicResponder()
        for step in range(1, self.budget + 1):
            request = self.request(step)
            result = complete_structured(
                responder, request, StepReply, validator=self.validator if self.validate else None
            )
            assert len(result.attempts) == 1, result.attempts  # the responder never needs repair
            reply = parse_reply(result.reply.text, StepReply)
            assert reply == result.value
            assert self.validator(reply) is None
            if self.act(reply, step):
                break
        return self

    def entity_of(self, thing_key: str) -> list[str]:
        """Node names that sit on a thing (for assertions)."""
        t = next(t for t in self.things if t.key == thing_key)
        return [
            n
            for n, a in self.nodes.items()
            if a["kind"] == "object" and math.dist(a["xy"], t.xy) < 0.6
        ]


# --------------------------------------------------------------------------- worlds


def barrel_world(task: str, **kw) -> ScriptedWorld:
    """A trash bin the map mistakes for a barrel, closest to the start; two barrels under
    coverings, labels beneath (water, corrosive)."""
    cover = ("tarp", "sheet", "cover")
    things = [
        Thing(
            "bin",
            ("barrel", "drum", "container"),
            (2.6, 3.8),
            "At the target I see a grey plastic waste bin: an open bin with crumpled paper inside.",
        ),
        Thing(
            "keg_a",
            ("barrel", "drum", "container"),
            (6.0, 2.0),
            "At the target I see a blue plastic drum: a blue drum with a screw-top lid. "
            "Nearby I also see a white sticker: the sticker reads: potable water, rinse only.",
        ),
        Thing(
            "cover_a",
            ("barrel", "drum", *cover),
            (6.0, 2.0),
            "At the target I see an olive canvas sheet draped over a drum: the sheet hides "
            "whatever is written on top.",
            covers="keg_a",
            graspable=True,
        ),
        Thing(
            "keg_b",
            ("barrel", "drum", "container"),
            (5.0, 7.5),
            "At the target I see a blue plastic drum: a blue drum with a screw-top lid. "
            "Nearby I also see an orange sticker: the sticker reads: WARNING - hydrochloric acid, "
            "corrosive.",
        ),
        Thing(
            "cover_b",
            ("barrel", "drum", *cover),
            (5.0, 7.5),
            "At the target I see a brown canvas sheet draped over a drum: the sheet hides "
            "whatever is written on top.",
            covers="keg_b",
            graspable=True,
        ),
    ]
    return ScriptedWorld(task, things, **kw)


def cart_world(task: str, **kw) -> ScriptedWorld:
    things = [
        Thing(
            "bench",
            ("cart", "trolley", "table"),
            (2.5, 2.5),
            "At the target I see a wooden work bench: a heavy bench without wheels.",
        ),
        Thing(
            "flatbed",
            ("cart", "trolley", "wagon"),
            (4.0, 5.0),
            "At the target I see a low flatbed trolley on wheels: a single deck close to the "
            "floor with a push handle; no raised surface.",
        ),
        Thing(
            "dolly",
            ("cart", "trolley", "dolly", "hand truck"),
            (7.5, 1.5),
            "At the target I see a yellow hand truck: an upright two-wheeled hand truck with a "
            "toe plate; nothing to rest a laptop on.",
        ),
        Thing(
            "service",
            ("cart", "trolley", "wagon"),
            (8.0, 6.0),
            "At the target I see a grey service cart on casters: two shelves, the upper one "
            "flat, clear and wide enough for a laptop.",
        ),
    ]
    return ScriptedWorld(task, things, **kw)


def bag_world(task: str, **kw) -> ScriptedWorld:
    things = [
        Thing(
            "duffel",
            ("backpack", "bag"),
            (2.0, 3.0),
            "At the target I see a grey duffel bag: a sports duffel without visible branding.",
        ),
        Thing(
            "other_brand",
            ("backpack", "bag"),
            (4.5, 1.5),
            "At the target I see a black backpack: a black backpack with a white Fjallraven "
            "fox logo on the flap.",
        ),
        Thing(
            "plain",
            ("backpack", "bag"),
            (6.5, 4.0),
            "At the target I see a navy backpack: a navy backpack with an Eastpak brand label.",
        ),
        Thing(
            "target",
            ("backpack", "bag"),
            (9.0, 6.5),
            "At the target I see a black backpack: a black backpack with a small green Deuter "
            "patch on the front pocket.",
        ),
    ]
    return ScriptedWorld(task, things, **kw)


def _answered(world: ScriptedWorld, key: str) -> bool:
    assert world.answer is not None, world.history
    return world.answer[1] in world.entity_of(key)


# --------------------------------------------------------------------------- episodes


def test_hazard_barrel_episode_uncovers_and_answers_the_corrosive_one() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.").run()
    assert _answered(w, "keg_b"), w.history
    assert w.actions[:3] == ["query", "goto", "inspect"]
    assert "grasp" in w.actions and "place" in w.actions
    # the bin was inspected and ruled out, never answered
    final = w.hypothesis
    assert any(n in final["hypothesized"]["ruled_out"] for n in w.entity_of("bin"))
    assert "corrosive" in w.answer[0].lower() or "acid" in w.answer[0].lower()
    assert len(w.actions) <= 20


def test_reworded_hazard_task() -> None:
    w = barrel_world("Which drum has dangerous contents? Please find it for me.").run()
    assert _answered(w, "keg_b"), w.history
    w2 = barrel_world("find the container holding toxic chemicals").run()
    assert _answered(w2, "keg_b"), w2.history


def test_functional_cart_with_a_laptop_perch() -> None:
    task = (
        "I need something to move equipment out to the test field. "
        "Ideally it has somewhere to rest my laptop."
    )
    w = cart_world(task).run()
    assert _answered(w, "service"), w.history
    assert w.hypothesis["confirmed"]["objects"] == [w.answer[1]]


def test_functional_cart_reworded() -> None:
    w = cart_world("something with wheels to haul my gear, with room for a laptop on top").run()
    assert _answered(w, "service"), w.history
    assert "wheel" not in " ".join(h.split("->")[0] for h in w.history if "query(" in h)


def test_functional_cart_without_the_wish_answers_the_nearest_real_cart() -> None:
    w = cart_world("Fetch me a trolley so I can transport these boxes.").run()
    assert w.answer is not None
    assert any(w.answer[1] in w.entity_of(k) for k in ("flatbed", "dolly", "service"))
    assert w.answer[1] not in w.entity_of("bench")


def test_brand_backpack_rules_out_other_brands() -> None:
    w = bag_world("Where is my Deuter backpack? I left it somewhere on this floor.").run()
    assert _answered(w, "target"), w.history
    ruled = set(w.hypothesis["hypothesized"]["ruled_out"])
    for key in ("duffel", "other_brand", "plain"):
        assert set(w.entity_of(key)) <= ruled | set(), (key, ruled)


def test_broadens_the_query_when_the_precise_concept_finds_nothing() -> None:
    things = [
        Thing(
            "sack",
            ("bag",),
            (3.0, 3.0),
            "At the target I see a red rucksack: a red rucksack with two straps.",
        )
    ]
    w = ScriptedWorld("Find the red backpack.", things).run()
    queries = [h for h in w.history if ". query(" in h]
    assert [re.search(r"query\('([^']+)'", q).group(1) for q in queries] == [
        "backpack",
        "rucksack",
        "bag",
    ]
    assert _answered(w, "sack"), w.history


def test_explores_a_frontier_when_nothing_is_mapped_yet() -> None:
    things = [
        Thing(
            "ladder",
            ("ladder",),
            (9.0, 9.0),
            "At the target I see an aluminium ladder: a folding stepladder.",
            hidden=True,
        )
    ]
    w = ScriptedWorld("Find a ladder.", things, frontiers=((8.0, 8.0),)).run()
    lines = [h.split(" -> ")[0].split(". ", 1)[1] for h in w.history]
    assert lines[0] == "query('ladder')"
    assert "goto(frontier_1)" in lines
    assert lines.index("goto(frontier_1)") < max(
        i for i, x in enumerate(lines) if x == "query('ladder')"
    )
    assert _answered(w, "ladder"), w.history


def test_budget_end_answers_the_best_unconfirmed_hypothesis() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.", budget=4).run()
    assert w.actions[-1] == "answer"
    assert len(w.actions) == 4
    text, entity = w.answer
    assert entity in w.nodes and w.nodes[entity]["kind"] == "object"
    assert "unconfirmed" in text.lower()
    assert entity not in w.entity_of("bin")


def test_a_covering_that_cannot_be_lifted_is_given_up_without_looping() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.")
    for t in w.things:
        t.graspable = False
    w.run()
    assert w.answer is not None and w.answer[1] is not None
    assert "unconfirmed" in w.answer[0].lower()
    calls = [h.split(" -> ")[0].split(". ", 1)[1] for h in w.history]
    grasps = [c for c in calls if c.startswith("grasp(")]
    assert len(grasps) == len(set(grasps))  # a grasp that failed for cover is not retried
    walks = [c for c in calls if c.startswith("goto(")]
    assert all(a != b for a, b in zip(walks, walks[1:], strict=False))
    assert w.answer[1] not in w.entity_of("bin")


def test_nothing_found_anywhere_ends_with_an_honest_answer() -> None:
    w = ScriptedWorld("Find the espresso machine.", [], budget=8).run()
    assert w.answer is not None and w.answer[1] is None
    assert "could not find" in w.answer[0].lower()


def test_no_tour_ablation_still_succeeds() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.", use_tour=False).run()
    assert _answered(w, "keg_b"), w.history
    assert "Suggested visiting order" not in w.prompts[-1]


# --------------------------------------------------------------------------- contract


def _prompt_nodes(text: str) -> dict[str, str]:
    view = parse_view(text)
    return {n.name: n.kind for n in view.nodes.values()}


@pytest.mark.parametrize(
    "make",
    [
        lambda: barrel_world("Locate the barrel with the hazardous content."),
        lambda: cart_world("I need a cart for my field gear, ideally with a laptop shelf."),
        lambda: bag_world("Find my Deuter backpack"),
    ],
)
def test_every_reply_parses_and_names_only_graph_entities(make) -> None:
    w = make()
    responder = HeuristicResponder()
    for step in range(1, w.budget + 1):
        request = w.request(step)
        reply_text = responder.complete(request).text
        reply = parse_reply(reply_text, StepReply)
        nodes = _prompt_nodes(request.messages[-1].text())
        a = reply.action.args
        for name, kind in ((a.region, "region"), (a.object, "object"), (a.entity, "object")):
            if name:
                assert nodes.get(name) == kind, (name, kind, nodes)
        assert len(reply.hypothesis.goal) <= 400
        if w.act(reply, step):
            break
    assert w.answer is not None


def test_deterministic_byte_for_byte() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.")
    texts = []
    for step in range(1, 8):
        request = w.request(step)
        a = HeuristicResponder().complete(request).text
        b = HeuristicResponder().complete(request).text
        assert a == b == respond(request.messages)
        texts.append(a)
        w.act(parse_reply(a, StepReply), step)
    w2 = barrel_world("Locate the barrel with the hazardous content.").run()
    w3 = barrel_world("Locate the barrel with the hazardous content.").run()
    assert w2.history == w3.history and w2.answer == w3.answer


def test_tokens_are_estimated_and_counted() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.")
    responder = HeuristicResponder()
    result = complete_structured(responder, w.request(1), StepReply)
    reply = result.reply
    assert reply.tokens_source == "estimate"
    assert reply.prompt_tokens > 100 and reply.completion_tokens > 10
    assert responder.usage.calls == 1 and responder.usage.estimated_calls == 1
    assert result.value.action.name == "query"
    assert result.value.action.args.concept == "barrel"


def _advance_to_a_goto(w: ScriptedWorld) -> tuple[ChatRequest, int]:
    """Play the episode until the responder's next action is a goto; that step's request."""
    for step in range(1, w.budget + 1):
        request = w.request(step)
        reply = parse_reply(respond(request.messages), StepReply)
        if step > 2 and reply.action.name == "goto":
            return request, step
        w.act(reply, step)
    raise AssertionError("the responder never walked")


def test_reacts_to_repair_feedback() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.")
    request, _ = _advance_to_a_goto(w)
    first = parse_reply(respond(request.messages), StepReply)
    assert first.action.name == "goto"
    feedback = (
        "Your previous reply could not be used.\n"
        f"Problem: the robot cannot reach {first.action.args.region}\n"
        "Reply again with exactly one JSON object."
    )
    repaired_req = request.appended(
        Message.assistant(json.dumps(first.model_dump())), Message.user(feedback)
    )
    second = parse_reply(respond(repaired_req.messages), StepReply)
    assert (second.action.name, second.action.args.region) != ("goto", first.action.args.region)
    # the repair answers the original step: its entities still come from that graph
    nodes = _prompt_nodes(request.messages[-1].text())
    for name in (second.action.args.region, second.action.args.object):
        if name:
            assert name in nodes


def test_repair_through_complete_structured_with_a_refusing_validator() -> None:
    w = barrel_world("Locate the barrel with the hazardous content.")
    request, _ = _advance_to_a_goto(w)
    refused: list[str] = []

    def no_goto(reply: StepReply) -> str | None:
        if reply.action.name == "goto":
            refused.append(reply.action.args.region)
            return f"unknown region '{reply.action.args.region}' in goto"
        return None

    responder = HeuristicResponder()
    result = complete_structured(responder, request, StepReply, validator=no_goto, max_attempts=5)
    assert refused and len(set(refused)) == len(refused)  # a refused choice is never repeated
    assert result.value.action.name != "goto"
    assert len(result.attempts) == len(refused) + 1 == responder.usage.calls


def test_unreadable_prompt_still_gets_a_valid_reply() -> None:
    for text in ("", "hello", "## Task\n\n## Budget\nnonsense"):
        reply = parse_reply(respond((Message.user(text or " "),)), StepReply)
        assert reply.action.name in ("query", "answer")


def test_a_rejected_action_is_not_repeated() -> None:
    nodes = [
        node_line("barrel_1", "object", (6.0, 6.0), "possible barrel (confidence 0.70)"),
        node_line("near_barrel_1", "region", (5.0, 5.0), "viewpoint 1.2 m from barrel_1"),
        node_line("barrel_2", "object", (2.0, 8.0), "possible barrel (confidence 0.60)"),
        node_line("near_barrel_2", "region", (2.5, 7.0), "viewpoint 1.2 m from barrel_2"),
    ]
    history = [
        history_line(1, "query", ["'barrel'"], "ok", "2 candidates: barrel_1, barrel_2"),
        history_line(2, "goto", ["near_barrel_1"], "failed", "GoalUnreachable: no path"),
    ]
    ctx = StepContext(
        task="Find the barrel.",
        step=3,
        budget=10,
        robot_xy=(1.0, 1.0),
        holding=None,
        nodes=nodes,
        tour=["barrel_1", "barrel_2"],
        new_observations=["result of goto(near_barrel_1): failed: GoalUnreachable: no path"],
        history=history,
    )
    reply = parse_reply(respond((Message.user(render_user_message(ctx)),)), StepReply)
    assert (reply.action.name, reply.action.args.region) != ("goto", "near_barrel_1")
    assert reply.action.name == "goto" and reply.action.args.region == "near_barrel_2"


def test_one_action_left_forces_an_answer() -> None:
    nodes = [
        node_line("cart_1", "object", (6.0, 6.0), "possible cart (confidence 0.70)"),
        node_line("near_cart_1", "region", (5.0, 5.0), "viewpoint 1.2 m from cart_1"),
    ]
    ctx = StepContext(
        task="Find a cart.",
        step=10,
        budget=10,
        robot_xy=(1.0, 1.0),
        holding=None,
        nodes=nodes,
        tour=["cart_1"],
        new_observations=[],
        history=[history_line(1, "query", ["'cart'"], "ok", "1 candidates: cart_1")],
    )
    reply = parse_reply(respond((Message.user(render_user_message(ctx)),)), StepReply)
    assert reply.action.name == "answer" and reply.action.args.entity == "cart_1"
    assert "unconfirmed" in reply.action.args.text.lower()


# --------------------------------------------------------------------------- reading text


@pytest.mark.parametrize(
    ("task", "head", "function", "requirements"),
    [
        ("Locate the barrel with the hazardous content.", "barrel", None, {"hazard"}),
        ("Find the drum with dangerous contents", "drum", None, {"hazard"}),
        (
            "I need something to transport equipment for field experiments. "
            "Ideally with a perch for my laptop.",
            "cart",
            "transport",
            {"surface"},
        ),
        (
            "something with wheels to haul my gear, with room for a laptop on top",
            "cart",
            "transport",
            {"surface", "wheels"},
        ),
        ("Find my JanSport backpack; I think I left it around here.", "backpack", None, {"brand"}),
        ("Where can I sit down for a minute?", "chair", "sit", set()),
        ("I have some rubbish to throw away", "bin", "dispose", set()),
        ("Find the backpack in the Meeting Room", "backpack", None, set()),
        ("Find the red toolboxes", "toolbox", None, {"colour"}),
    ],
)
def test_parse_task(task, head, function, requirements) -> None:
    intent = parse_task(task)
    assert intent.head == head
    assert intent.function == function
    assert {r.name if r.kind == "evidence" else r.kind for r in intent.requirements} == requirements


def test_soft_wishes_and_implied_properties() -> None:
    intent = parse_task("I need a way to carry tools outside. Preferably with a flat top.")
    surface = next(r for r in intent.requirements if r.name == "surface")
    assert surface.soft
    wheels = next(r for r in parse_task("a cart with wheels").requirements if r.name == "wheels")
    assert wheels.implied


def test_negation_scope() -> None:
    hits = {
        h.cue: h.negated for h in scan_cues("a low deck; no raised surface", ["surface", "deck"])
    }
    assert hits == {"surface": True, "deck": False}
    hits = {h.cue: h.negated for h in scan_cues("non-hazardous cleaning fluid", ["hazardous"])}
    assert hits == {"hazardous": True}
    hits = {h.cue: h.negated for h in scan_cues("nothing to rest a laptop on", ["laptop"])}
    assert hits == {"laptop": True}
    hits = {h.cue: h.negated for h in scan_cues("no lid, but a big laptop shelf", ["laptop"])}
    assert hits == {"laptop": False}


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ("At the target I see a grey trash can: it is half full of paper.", "ruled_out"),
        ("At the target I see a green tarp draped over a drum, hiding its top.", "occluded"),
        (
            "At the target I see a steel drum. Nearby I also see a label: it reads FLAMMABLE.",
            "confirmed",
        ),
        ("At the target I see a steel drum: the label says drinking water.", "ruled_out"),
        ("A steel drum with a closed lid; no hazard markings anywhere on it.", "ruled_out"),
        ("A steel drum with a closed lid; no label visible from here.", "inconclusive"),
        ("A steel drum with a closed lid.", "inconclusive"),
        ("A plastic drum labelled non-toxic, food-safe.", "ruled_out"),
        ("I cannot make out any object at the target; only floor.", "nothing"),
    ],
)
def test_judge_hazard_answers(answer, status) -> None:
    intent = parse_task("Find the barrel with hazardous contents.")
    assert judge(answer, intent).status == status


def test_judge_brand_answers() -> None:
    intent = parse_task("Find my Osprey backpack")
    assert judge("I see a blue backpack with an Osprey logo.", intent).status == "confirmed"
    assert judge("I see a blue backpack with a Nike logo.", intent).status == "ruled_out"
    assert judge("I see a blue backpack.", intent).status == "inconclusive"
    assert judge("I see a grey duffel bag.", intent).status == "ruled_out"


def test_a_goal_that_is_itself_a_covering() -> None:
    things = [
        Thing(
            "green", ("tarp",), (3.0, 4.0), "At the target I see a green tarp folded on the floor."
        ),
        Thing(
            "blue", ("tarp",), (6.0, 2.0), "At the target I see a blue tarp folded on the floor."
        ),
    ]
    w = ScriptedWorld("Bring me the blue tarp.", things).run()
    assert _answered(w, "blue"), w.history
    assert "grasp" not in w.actions


def test_reads_both_node_description_formats() -> None:
    text = render_user_message(
        StepContext(
            task="Find the wheeled cart.",
            step=2,
            budget=9,
            robot_xy=(0.0, 0.0),
            holding=None,
            nodes=[
                node_line(
                    "wheeled_cart_1",
                    "object",
                    (2.0, 1.0),
                    "candidate for 'wheeled cart' from the language-embedded map (confidence 0.71)",
                ),
                node_line(
                    "cart_2", "object", (4.0, 1.0), "possible cart (confidence 0.52, 9 voxels)"
                ),
                node_line("trolley_1", "object", (5.0, 1.0), "held by the robot"),
            ],
            tour=None,
            new_observations=[],
        )
    )
    view = parse_view(text)
    assert [n.concept for n in view.objects()] == ["wheeled cart", "cart", "trolley"]
    assert view.left == 8 and view.tour is None


def test_split_args_handles_quotes_and_commas() -> None:
    assert split_args("barrel_1, 'Is it red, or blue?'") == ("barrel_1", "Is it red, or blue?")
    assert split_args("'wheeled cart'") == ("wheeled cart",)
    assert split_args("tarp_1, free_spot_1") == ("tarp_1", "free_spot_1")
    assert split_args("region=near_x") == ("near_x",)
    assert split_args('barrel_1, "What\'s on it?"') == ("barrel_1", "What's on it?")
