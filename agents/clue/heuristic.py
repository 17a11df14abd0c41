"""The offline heuristic responder: the CLUE policy's default "LLM", no model needed.

:class:`HeuristicResponder` is an :class:`~agents.llm.base.LLMBackend` that answers a
CLUE step request the way a careful model would, from the request's message text
alone: the task, the budget, the robot line, the observation graph, the action history
(see :mod:`agents.clue.prompt` for the layout). It never sees the scenario, the
simulator or any ground truth, keeps no state between calls, and is deterministic: the
same messages give the same reply, byte for byte. Tokens are the base class estimate.

Decision procedure (one action per call; every rule is generic, none names a scenario):

1. Read the task into an :class:`~agents.clue.lexicon.Intent` with the common-sense
   lexicon: the goal (the noun phrase the request asks for, known to the lexicon or not;
   a brand's usual kind; or a kind inferred from a purpose: transport -> cart), the map
   concepts to try (precise -> broad), the places such things are kept, and what an
   inspection must show (hazard labels, a laptop-sized surface, a brand, a name, a
   colour, a marking, contents, a landmark beside it ...).
2. Replay the action history: which candidates were inspected and what the VLM said,
   which coverings were taken off, which concepts were queried, which walks explored,
   which floor points could not be reached, how far an inspection may be. Each inspected
   candidate is judged: the wrong kind of thing or counter-evidence rules it out; the
   goal kind with every requirement seen confirms it (identity alone does not when
   something distinguishing was asked for); a covering (tarp, sheet, a lid seen at the
   target) means remove it and look again; otherwise it stays an unconfirmed hypothesis.
3. Propose actions in priority order: answer a confirmed candidate; put down what the
   gripper holds; for the next open candidate (the one in hand first, then the suggested
   tour, then nearest) walk near and inspect, or query / approach / grasp / place its
   covering (a lid of the one in hand is lifted at once); ask the map (every concept
   before exploring, afterwards one in turn per exploring walk); answer a candidate that
   fails only a wish ("ideally ..."); ask for the look the map confuses with the goal;
   search the places such things are kept (where landmarks meet first); explore frontiers
   and far regions (newest view first) and, with nothing left, a way out (a door);
   answer the best remaining hypothesis. With few actions left, answer at once.
4. Skip proposals that name entities missing from the graph, that repeat an action
   rejected or failed since the robot last changed anything, that walk to a floor point
   found unreachable, or that the repair loop's feedback refused; take the first left.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.clue.lexicon import (
    CARRIER_WORDS,
    CARRIERS,
    CONTENT_MARKERS,
    EMPTY_VIEW,
    OCCLUDERS,
    READ_MARKERS,
    RECYCLING_WORDS,
    WEAK_OCCLUDERS,
    Intent,
    Requirement,
    concept_of,
    contains_any,
    find_nouns,
    leading_noun,
    norm_words,
    normalise_text,
    parse_task,
    scan_cues,
    words,
)
from agents.clue.prompt import (
    HISTORY_RE,
    NODE_RE,
    REGROUND_ITEM_RE,
    REGROUND_RE,
    split_sections,
)
from agents.llm.base import ChatReply, ChatRequest, LLMBackend, Message, timed_reply
from agents.llm.structured import extract_json_objects

INSPECT_RANGE_M = 2.5  # inspect without walking when this close (the VLM needs 3 m or less)
SAME_SPOT_M = 0.3  # a region this close to the robot is where it stands already
VLM_RANGE_M = 3.0  # an inspection farther than this is refused
VIEWPOINT_GAIN_M = 0.5  # walk toward a viewpoint-less candidate only if this much closer
CLOSER_M = 0.2  # a walk to reach a covering must bring the robot at least this much closer
GRASP_RANGE_M = 1.3  # walk to the covering first when farther than this (arm reach ~1.3 m)
PLACE_RANGE_M = 1.5  # regions this close may take what the gripper holds
OCCLUDER_MATCH_M = 1.5  # a covering node this close to a candidate is taken to cover it
DUPLICATE_M = 0.75  # candidates of different queries this close are the same thing
REGION_OF_M = 3.0  # a region this close to an object can serve as its viewpoint
MAX_REMOVALS = 2  # coverings taken off one candidate before judging it as it is
MAX_OCCLUDER_QUERIES = 2  # covering concepts asked for per candidate
MAX_FAILURES = 2  # an action rejected or failed this often is not proposed again
MAX_QUERIES_PER_WALK = 2  # after an exploring walk, map queries before walking again
MAX_PLACE_WALKS = 3  # walks to where such things are usually kept
LOOKALIKE_MIN = 2  # ruled-out candidates that must share a look before it is queried
EMPTY_BEFORE_WALK = 2  # empty answers in a row after which walking beats broadening
FAR_REGION_M = 3.0  # a region this far from everywhere the robot has been is worth a walk
LANDMARKS_MEET_M = 2.0  # places this close together count as one spot
PLACE_NOVELTY_M = 2.0  # a place is worth a walk only this far from where the robot has been
EXIT_CONCEPTS = ("door", "doorway")  # asked for when nothing mapped is left to explore
MAX_LOOK_WORDS = 6  # longest look phrase sent to the map
WEAK_UNCOVER_MIN_LEFT = 6  # lids are tried only with this many actions left
ANSWER_EARLY_LEFT = 3  # with this few actions left, answer rather than explore
SNIPPET_CHARS = 160  # longest quote of an inspection answer in reasons and answers
MAX_TEXT = 400  # schema limit of goal, question and answer texts

STRONG_OCCLUSION = (
    "covered", "covering", "cover", "draped", "drape", "hidden", "hiding", "hide", "obscured",
    "obscuring", "occluded", "wrapped", "concealed", "concealing", "tarp", "tarpaulin",
    "underneath", "beneath",
)  # fmt: skip
WEAK_OCCLUSION = ("lid", "closed", "sealed", "capped", "shut")
DISTINGUISHING = ("brand", "name", "marking", "text", "content")  # requirements that single out
_LOOK_END = frozenset("with on of in under over beside near and holding used that which".split())
_FLOOR_POINT_RE = re.compile(r"\((-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\)")  # "(7.15, 4.05)"
_AWAY_RE = re.compile(r"\b(\d+(?:\.\d+)?) m away")  # "cart_1 is 2.9 m away"
_NEARBY_RE = re.compile(
    r"^\s*(nearby|next to (it|that|this)|beside it|behind it|in the background|further away|"
    r"around it|to the (left|right))\b|\balso see\b",
    re.I,
)
_SEEN_RE = re.compile(r"\bI (?:can )?see (?:an? |the |some )?([^:;.]+)", re.I)

# --------------------------------------------------------------------------- the prompt


@dataclass(frozen=True)
class Node:
    """One node line of the observation graph."""

    name: str
    kind: str  # "object" | "region"
    x_m: float
    y_m: float
    description: str

    @property
    def xy(self) -> tuple[float, float]:
        return (self.x_m, self.y_m)

    def dist(self, xy: Sequence[float]) -> float:
        return math.hypot(self.x_m - xy[0], self.y_m - xy[1])

    @property
    def concept(self) -> str:
        """The map concept that produced an object node, normalised ('barrel')."""
        d = self.description
        m = re.search(r"candidate for '([^']+)'", d) or re.match(r"\s*possible (.+?) \(", d)
        raw = m.group(1) if m else re.sub(r"_\d+$", "", self.name).replace("_", " ")
        return " ".join(norm_words(raw))

    @property
    def inspection(self) -> str | None:
        """The last VLM answer the description carries, if any."""
        _, sep, rest = self.description.partition("inspection: ")
        return rest.strip() if sep else None

    @property
    def moved(self) -> bool:
        d = self.description.lower()
        return "held by" in d or "moved " in d or "moved to" in d


@dataclass(frozen=True)
class Event:
    """One line of the action history."""

    step: int
    action: str
    args: tuple[str, ...]
    status: str  # ok | rejected | failed
    text: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def key(self) -> tuple[str, ...]:
        return action_key(self.action, self.args)


@dataclass(frozen=True)
class View:
    """Everything the step's user message shows."""

    task: str
    step: int
    budget: int
    left: int  # actions left including this one
    robot_xy: tuple[float, float]
    holding: str | None
    nodes: dict[str, Node]
    tour: tuple[str, ...] | None
    history: tuple[Event, ...]

    def objects(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "object"]

    def regions(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "region"]

    def has(self, name: str | None, kind: str) -> bool:
        return bool(name) and name in self.nodes and self.nodes[name].kind == kind


def split_args(raw: str) -> tuple[str, ...]:
    """Arguments of a history action, quoted (``'...'``) or bare, ``key=`` prefixes dropped."""
    args: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        while i < n and raw[i] == " ":
            i += 1
        if i >= n:
            break
        value: str
        if raw[i] in "'\"":
            m = re.compile(re.escape(raw[i]) + r"\s*(,|$)").search(raw, i + 1)
            if m:
                value, i = raw[i + 1 : m.start()], m.end()
                args.append(value)
                continue
        j = raw.find(",", i)
        value, i = (raw[i:], n) if j < 0 else (raw[i:j], j + 1)
        value = re.sub(r"^[a-z_]+\s*=\s*", "", value.strip()).strip("'\" ")
        args.append(value)
    return tuple(args)


def action_key(name: str, args: Sequence[str]) -> tuple[str, ...]:
    """What makes two actions "the same": the action and its entities (not its wording)."""
    a = list(args) + ["", ""]
    if name == "query":
        return ("query", " ".join(norm_words(a[0])))
    if name == "place":
        return ("place", a[0], a[1])
    if name == "answer":
        return ("answer", a[1] if len(args) > 1 else "")
    return (name, a[0])


def parse_view(text: str) -> View:
    """Read a step's user message (the layout of :func:`agents.clue.prompt.render_user_message`)."""
    s = split_sections(text)
    budget_m = re.search(r"step (\d+) of (\d+);\s*(\d+) actions? left", s.get("Budget", ""))
    step, budget, left = (int(g) for g in budget_m.groups()) if budget_m else (1, 1, 1)
    robot_m = re.search(
        r"position \[(-?[\d.]+),\s*(-?[\d.]+)\];\s*holding (.+)", s.get("Robot", "")
    )
    robot_xy, holding = (0.0, 0.0), None
    if robot_m:
        robot_xy = (float(robot_m.group(1)), float(robot_m.group(2)))
        held = robot_m.group(3).strip()
        holding = None if held in ("nothing", "") else held
    nodes: dict[str, Node] = {}
    tour: tuple[str, ...] | None = None
    for line in s.get("Observation graph", "").splitlines():
        m = NODE_RE.match(line.strip())
        if m:
            nodes[m["name"]] = Node(
                m["name"], m["kind"], float(m["x"]), float(m["y"]), m["description"] or ""
            )
            continue
        t = re.match(r"^Suggested visiting order[^:]*:\s*(.*)$", line.strip())
        if t:
            tour = tuple(x.strip() for x in t.group(1).split(",") if x.strip())
    history = []
    for line in s.get("Action history", "").splitlines():
        m = HISTORY_RE.match(line.strip())
        if m:
            history.append(
                Event(int(m["step"]), m["action"], split_args(m["args"]), m["status"], m["text"])
            )
    return View(
        task=s.get("Task", "").strip(),
        step=step,
        budget=budget,
        left=left,
        robot_xy=robot_xy,
        holding=holding,
        nodes=nodes,
        tour=tour,
        history=tuple(history),
    )


# --------------------------------------------------------------------------- judging answers


@dataclass(frozen=True)
class Judgement:
    """What one inspection answer says about a candidate, given the intent.

    ``status``: confirmed, partial (only a wish failed), inconclusive, occluded,
    nothing (the view showed no object), ruled_out. ``settled`` is the status when
    coverings are ignored (used once enough coverings were taken off).
    """

    status: str
    settled: str
    identity: str  # match | related | other | unknown | nothing
    seen: str  # what the VLM saw at the target, in its words
    reason: str
    evidence: str
    occluder: str | None
    weak: bool
    score: int
    cover_words: str = ""  # the VLM's words for a covering seen at the target ("crate lid")


def split_answer(answer: str) -> tuple[str, str, str]:
    """(primary, evidence, whole): the sentences about the target itself; those plus any
    sentence about nearby labels, signs or logos (which may be on the target); all of it."""
    text = " ".join(normalise_text(answer).split())
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", text) if x.strip()]
    primary = [x for x in sentences if not _NEARBY_RE.search(x)]
    carriers = [x for x in sentences if _NEARBY_RE.search(x) and contains_any(x, CARRIER_WORDS)]
    main = " ".join(primary) if primary else text
    return main, " ".join([main, *carriers]), text


def _seen(primary: str) -> str:
    m = _SEEN_RE.search(primary)
    phrase = m.group(1) if m else (re.split(r"[:;.]", primary)[0] if primary else "")
    return " ".join(phrase.split())[:80]


def _names_head(word: str, head: str) -> bool:
    """Whether a word names an unknown goal noun: the noun itself or a compound ending in
    it ('multimeter' for 'meter')."""
    return word == head or (len(head) >= 4 and word.endswith(head))


def identity_of(primary: str, whole: str, intent: Intent) -> tuple[str, str]:
    """Whether the VLM's target is the goal kind: (match|related|other|unknown|nothing, noun).

    A goal of unknown kind (only a brand was named) is never ruled out by what the thing
    is; for a goal noun the lexicon does not know, the noun (or a compound ending in it)
    is a match and another head noun of what was seen is something else."""
    if not intent.kinds:
        return ("nothing", "") if contains_any(whole, EMPTY_VIEW) else ("unknown", "")

    def classify(text: str) -> tuple[list[str], list[str], list[str]]:
        match, related, other = [], [], []
        toks = norm_words(text)
        for h in find_nouns(toks):
            if h.concept in intent.kinds or h.phrase in intent.identity:
                match.append(h.phrase)
            elif h.phrase in intent.related:
                related.append(h.phrase)
            elif h.concept not in OCCLUDERS and h.concept not in CARRIERS:
                other.append(h.phrase)
        if intent.unknown_head:
            match += [w for w in toks if _names_head(w, intent.head)]
        return match, related, other

    # what each part of the answer says the thing is: "a metal shelf stacked with boxes" is
    # a shelf, "a black box ... labelled balance charger" is named by its label
    heads = [_part_head(part, intent) for part in _parts(primary)]
    named = [w for verdict, w in heads if verdict == "match"]
    if named:
        return "match", named[0]
    labelled = _labelled_as(primary, intent)
    if labelled:
        return "match", labelled
    others = [w for verdict, w in heads if verdict == "other"]
    if others:
        return "other", others[0]
    match, related, other = classify(primary)
    if match:
        return "match", match[0]
    if not other:
        whole_match, _, _ = classify(whole)
        if whole_match:
            return "match", whole_match[0]
    if other:
        return "other", other[0]
    if related:
        return "related", related[0]
    if contains_any(whole, EMPTY_VIEW):
        return "nothing", ""
    if intent.unknown_head:
        seen_head, hit = leading_noun(_seen(primary))
        if seen_head and hit is None and len(seen_head) > 2:
            return "other", seen_head
    return "unknown", ""


_PART_LEAD_RE = re.compile(r"^\s*(?:at the target\s+)?(?:i\s+(?:also\s+)?see\s+)?", re.I)
_LABEL_RE = re.compile(
    r"\b(?:labell?ed|marked|reads|reading|says|printed|stencill?ed|used as|branded as)\b(.*)", re.I
)


def _parts(primary: str) -> list[str]:
    """The parts of an answer about the target, each starting with what it is ('a metal
    storage shelf', 'a metal shelf stacked with archive boxes')."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", primary):
        for part in re.split(r"[:;]", sentence):
            part = _PART_LEAD_RE.sub("", part).strip()
            if part:
                out.append(part)
    return out


def _part_head(part: str, intent: Intent) -> tuple[str, str]:
    """Whether the head noun a part starts with names the goal: (match|other|"", word)."""
    word, hit = leading_noun(part)
    if word is None:
        return "", ""
    if hit is not None:
        if hit.concept in intent.kinds or hit.phrase in intent.identity:
            return "match", hit.phrase
        if hit.concept in OCCLUDERS or hit.concept in CARRIERS or hit.phrase in intent.related:
            return "", ""
        return "other", hit.phrase
    if intent.unknown_head and _names_head(word, intent.head):
        return "match", word
    return "", ""


def _labelled_as(primary: str, intent: Intent) -> str | None:
    """A goal noun in what a label on the thing says ('labelled iMAX B6 balance charger')."""
    for part in _parts(primary):
        m = _LABEL_RE.search(part)
        if not m:
            continue
        toks = norm_words(m.group(1))
        for h in find_nouns(toks):
            if h.concept in intent.kinds or h.phrase in intent.identity:
                return h.phrase
        if intent.unknown_head:
            hit = next((w for w in toks if _names_head(w, intent.head)), None)
            if hit:
                return hit
    return None


def _cue_set(cues: Sequence[str]) -> set[str]:
    return {" ".join(norm_words(c)) for c in cues}


def _shows_name(name: str, text: str) -> str | None:
    """The clause of ``text`` in which ``name`` appears as whole words (case, spaces and
    punctuation aside: 'JanSport' in 'JANSPORT', 'Jan Sport'; 'Chen' not in 'Cheng')."""
    squash = re.sub(r"[^a-z0-9]", "", name.lower())
    if not squash:
        return None
    for clause in re.split(r"[.;:]", normalise_text(text)):
        toks = words(clause)
        for i in range(len(toks)):
            joined = ""
            for w in toks[i : i + 3]:
                joined += w.replace("'", "")
                if joined == squash:
                    return clause.strip()
                if len(joined) >= len(squash):
                    break
    return None


def evaluate(req: Requirement, primary: str, evidence: str, whole: str = "") -> tuple[int, str]:
    """+1 (seen), 0 (not known), -1 (denied: 'no raised surface'), -2 (counter-evidence
    such as another brand or 'water'); with the clause that says so. ``whole`` is the
    entire answer, things seen around the target included (for relations)."""
    if req.kind == "relation":
        # the landmark, with its details ("grey" shelf), in one sentence of the answer
        for sentence in re.split(r"(?<=[.!?])\s+", normalise_text(whole or evidence)):
            hits = [h for h in scan_cues(sentence, req.positive) if not h.negated]
            toks = set(norm_words(sentence))
            if hits and all(d in toks for d in req.detail):
                return 1, _clip(sentence, SNIPPET_CHARS)
        return 0, ""
    if req.kind == "evidence":
        pos, neg = _cue_set(req.positive), _cue_set(req.counter)
        hits = scan_cues(evidence, [*req.positive, *req.counter])
        denied = [h for h in hits if h.cue in pos and h.negated]
        support = [h for h in hits if (h.cue in pos) != h.negated]
        against = [h for h in hits if h.cue in neg and not h.negated]
        if denied:
            return -1, denied[0].clause
        if len(support) > len(against):
            return 1, support[0].clause
        if against:
            return -2, against[0].clause
        return 0, ""
    if req.kind in ("brand", "name"):
        clause = _shows_name(req.name, evidence)
        if clause is not None:
            return 1, clause
        other = [h for h in scan_cues(evidence, req.counter) if not h.negated]
        if other:
            return -2, other[0].clause
        names = _proper_names(evidence if req.kind == "name" else primary)
        if names:
            return -2, f"it shows the name {names[0]}"
        if req.kind == "name" and contains_any(evidence, READ_MARKERS):
            return -2, next(
                (c.strip() for c in re.split(r"[.;]", evidence) if contains_any(c, READ_MARKERS)),
                "",
            )
        return 0, ""
    if req.kind == "marking":
        hits = scan_cues(evidence, [*req.positive, *req.counter])
        pos = _cue_set(req.positive)
        yes = [h for h in hits if h.cue in pos and not h.negated]
        if yes:
            return 1, yes[0].clause
        denied = [h for h in hits if h.negated]
        if denied:
            return -1, denied[0].clause
        other = [h for h in hits if h.cue not in pos]
        if other:
            return -2, other[0].clause
        return 0, ""
    if req.kind == "material":
        pos = _cue_set(req.positive)
        hits = scan_cues(evidence, [*req.positive, *req.counter, *RECYCLING_WORDS])
        yes = [h for h in hits if h.cue in pos and not h.negated]
        if yes:
            return 1, yes[0].clause
        if any(h.cue in pos and h.negated for h in hits):
            return -1, next(h.clause for h in hits if h.cue in pos and h.negated)
        against = [h for h in hits if h.cue in _cue_set(req.counter) and not h.negated]
        if against:
            return -2, against[0].clause
        recycling = [h for h in hits if h.cue in _cue_set(RECYCLING_WORDS) and not h.negated]
        if recycling and req.name not in ("organic", "battery"):
            return 1, recycling[0].clause
        return 0, ""
    if req.kind == "descriptor":
        hits = scan_cues(evidence, req.positive)
        yes = [h for h in hits if not h.negated]
        if yes:
            return 1, yes[0].clause
        return (-1, hits[0].clause) if hits else (0, "")
    if req.kind == "colour":
        pos_set = _cue_set(req.positive)
        hits = [h for h in scan_cues(primary, [*req.positive, *req.counter]) if not h.negated]
        yes = [h for h in hits if h.cue in pos_set]
        if yes:
            return 1, yes[0].clause
        if hits:
            return -2, hits[0].clause
        return 0, ""
    # text written on it, or a thing / material on or in it
    hits = scan_cues(evidence, req.positive)
    yes = [h for h in hits if not h.negated]
    if req.kind == "content":
        # an empty container, or one whose contents are listed without it, does not hold it
        empty = [h for h in scan_cues(evidence, ("empty",)) if not h.negated]
        if empty:
            return -2, empty[0].clause
    if req.kind == "text":
        toks = set(words(evidence))
        if all(w in toks for w in req.positive):
            return 1, yes[0].clause if yes else ""
    elif yes:
        return 1, yes[0].clause
    if any(h.negated for h in hits):
        return -1, next(h.clause for h in hits if h.negated)
    if req.kind == "content" and contains_any(evidence, CONTENT_MARKERS):
        return -2, next(
            (c.strip() for c in re.split(r"[.;]", evidence) if contains_any(c, CONTENT_MARKERS)),
            "",
        )
    if contains_any(evidence, READ_MARKERS):
        return -2, next(
            (c.strip() for c in re.split(r"[.;]", evidence) if contains_any(c, READ_MARKERS)), ""
        )
    return 0, ""


def _proper_names(text: str) -> list[str]:
    """Mid-sentence capitalised words the lexicon does not know (brand or maker names)."""
    out = []
    for sentence in re.split(r"(?<=[.!?:;])\s+", normalise_text(text)):
        toks = re.findall(r"[A-Za-z][A-Za-z0-9'&-]*", sentence)
        for t in toks[1:]:
            if t[0].isupper() and not t.isupper() and t != "I" and not concept_of(t.lower()):
                out.append(t)
    return out


def _sentence_with(text: str, clause: str) -> str:
    """The sentence of ``text`` that contains ``clause``, without 'At the target I see'."""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if clause and clause in sentence:
            return re.sub(r"^(At the target|Nearby)? ?I (also )?see ", "", sentence.strip())
    return clause


def judge(answer: str, intent: Intent) -> Judgement:
    """Judge one inspection answer against the intent (see :class:`Judgement`)."""
    primary, evidence, whole = split_answer(answer)
    seen = _seen(primary)
    identity, noun = identity_of(primary, whole, intent)
    goal_covers = any(k in OCCLUDERS for k in intent.kinds)
    occl = [h for h in scan_cues(primary, STRONG_OCCLUSION) if not h.negated]
    # what the camera sees at the target is itself a covering: "a black crate lid"
    _, seen_hit = leading_noun(seen)
    cover_seen = seen_hit.concept if seen_hit and seen_hit.concept in OCCLUDERS else None
    cover_seen = None if goal_covers else cover_seen
    cover_words = ""
    if cover_seen and seen_hit is not None:
        occl = occl or scan_cues(seen, (seen_hit.phrase,))[:1]
        toks = norm_words(seen)
        before = toks[seen_hit.index - 1] if seen_hit.index > 0 else ""
        cover_words = f"{before} {seen_hit.phrase}" if concept_of(before) else seen_hit.phrase
    strong = bool(occl) and not goal_covers
    weak = any(not h.negated for h in scan_cues(primary, WEAK_OCCLUSION))
    occluder = cover_seen
    for h in find_nouns(norm_words(primary)):
        if occluder is not None:
            break
        if h.concept in OCCLUDERS and h.concept not in intent.kinds:
            if h.concept not in WEAK_OCCLUDERS or not strong:
                occluder = h.concept
    verdicts = [(r, *evaluate(r, primary, evidence, whole)) for r in intent.requirements]
    score = sum(1 for _, v, _ in verdicts if v > 0)
    unseen = [r for r, v, _ in verdicts if v == 0 and not r.implied and not r.soft]
    if any(r.kind not in ("relation", "colour") for r in unseen) and not (weak or strong):
        # what would settle it is unseen and a lid or flaps lie beside it: it is closed
        for h in find_nouns(norm_words(whole)):
            if h.concept in WEAK_OCCLUDERS and h.concept not in intent.kinds:
                weak, occluder, cover_words = True, h.concept, h.phrase
                break

    if (
        identity == "other"
        and intent.unknown_head
        and any(v > 0 for r, v, _ in verdicts if r.kind in DISTINGUISHING)
    ):
        # the task's word for it is not the lexicon's ("delivery" for a parcel), but what
        # singles it out is seen: the name on the label, the brand, the marking
        identity = "match"
    if identity == "other" and not cover_seen:
        reason = f"it is a {noun}, not a {intent.head}" if noun else "it is something else"
        return Judgement("ruled_out", "ruled_out", identity, seen, reason, seen, None, False, 0)
    if identity == "nothing":
        reason = "the view showed no object there"
        return Judgement("nothing", "nothing", identity, seen, reason, "", None, False, 0)

    hard_fail = [(r, v, c) for r, v, c in verdicts if v < 0 and not r.soft]
    soft_fail = [(r, v, c) for r, v, c in verdicts if v < 0 and r.soft]
    passed = all(v > 0 or (v == 0 and r.implied) for r, v, _ in verdicts)
    # identity alone, or a requirement seen on something that may not be the goal, is not
    # enough: the view must show the goal kind (any kind, when only a brand was named)
    explicit = identity == "match" or (not intent.kinds and score > 0)
    support = _sentence_with(evidence, next((c for _, v, c in verdicts if v > 0 and c), ""))
    support = support or _sentence_with(primary, primary.split(".")[0]) or seen
    if hard_fail:
        r, v, clause = hard_fail[0]
        ev = _sentence_with(evidence, clause)
        settled, reason = "ruled_out", f"it is not {r.label}: '{_clip(ev, SNIPPET_CHARS)}'"
    elif passed and explicit:
        settled, reason, ev = "confirmed", f"it is {seen}", support
    elif soft_fail and all(v > 0 or r.implied for r, v, _ in verdicts if not r.soft):
        r, _, clause = soft_fail[0]
        ev = _sentence_with(evidence, clause)
        settled, reason = "partial", f"it fits but lacks the wish '{r.label}'"
    else:
        missing = [r.label for r, v, _ in verdicts if v == 0 and not r.implied]
        if identity != "match":
            missing.insert(0, f"that it is a {intent.head}")
        reason = "not yet seen: " + ", ".join(missing) if missing else "unclear"
        settled, ev = "inconclusive", ""
    status = settled
    # a covering may hide what would settle it; counter-evidence seen despite it stands
    if strong and settled != "confirmed" and not (settled == "ruled_out" and hard_fail[0][1] == -2):
        status = "occluded"
        reason = f"something covers it ({occl[0].clause})"
    return Judgement(
        status, settled, identity, seen, reason, ev, occluder, weak, score, cover_words
    )


# --------------------------------------------------------------------------- proposals


@dataclass(frozen=True)
class Proposal:
    name: str
    args: dict[str, str]
    reasoning: str

    @property
    def key(self) -> tuple[str, ...]:
        a = self.args
        if self.name == "place":
            return action_key("place", [a["object"], a["region"]])
        if self.name == "answer":
            return ("answer", a.get("entity", ""))
        main = a.get("region") or a.get("object") or a.get("concept") or ""
        return action_key(self.name, [main])

    def entities(self) -> list[str]:
        return [v for k, v in self.args.items() if k in ("region", "object", "entity")]

    def valid(self, view: View) -> bool:
        a = self.args
        if self.name == "goto":
            return view.has(a.get("region"), "region")
        if self.name in ("inspect", "grasp"):
            return view.has(a.get("object"), "object")
        if self.name == "place":
            return view.has(a.get("object"), "object") and view.has(a.get("region"), "region")
        if self.name == "answer":
            return "entity" not in a or view.has(a["entity"], "object")
        return bool(a.get("concept"))


@dataclass
class Cand:
    """A candidate for the goal and what the history says about it."""

    node: Node
    answer: str | None = None
    uncovered: bool = False  # a covering was taken off since the last inspection
    removals: int = 0
    occluder_queries: list[str] = field(default_factory=list)
    blocked: str | None = None  # why the last inspect was refused, if it was
    judgement: Judgement | None = None
    status: str = "open"
    duplicate_of: str | None = None

    @property
    def name(self) -> str:
        return self.node.name


RANK = {
    "confirmed": 0,
    "partial": 1,
    "inconclusive": 2,
    "occluded": 3,
    "open": 4,
    "nothing": 5,
}


class Situation:
    """The prompt, the intent and the replayed history: everything a decision needs."""

    def __init__(self, view: View, intent: Intent):
        self.view = view
        self.intent = intent
        self.queries_norm = [" ".join(norm_words(q)) for q in intent.queries]
        self.cands: dict[str, Cand] = {}
        self.occluders: list[Node] = []
        for n in view.objects():
            c = n.concept
            canon = _kind_of(c)
            if c in self.queries_norm or (canon in intent.kinds and canon not in OCCLUDERS):
                self.cands[n.name] = Cand(n)
            elif canon in OCCLUDERS:
                self.occluders.append(n)
        self.at_region: str | None = None
        self.visited: list[str] = []
        self.placed: set[str] = set()
        self.grasped: set[str] = set()
        self.focus: str | None = None
        self.queries_since_explore: list[str] = []
        self.excluded: set[tuple[str, ...]] = set()
        self.given_up: set[tuple[str, ...]] = set()  # failed too often: not even walked for
        self.last_move = -1  # history index of the last successful goto
        self.last_query: dict[str, int] = {}  # concept -> history index of its last query
        self.explorations = 0  # walks made to see more (frontiers, places, far regions)
        self.empty_since_explore = 0  # the latest queries that found nothing, in a row
        self.queried: set[str] = set()  # every concept asked for
        self.inspect_limit = VLM_RANGE_M  # metres; lowered by "X m away" rejections
        self.bad_spots: list[tuple[float, float]] = []  # goals a goto could not reach
        self.lookalike_phrases = self._lookalikes()
        for n in view.objects():
            if n.name not in self.cands and n.concept in self.lookalike_phrases:
                self.cands[n.name] = Cand(n)
        self._replay()
        self._judge_all()

    # ------------------------------------------------------------------ history
    def _replay(self) -> None:
        failures: dict[tuple[str, ...], int] = {}
        recent: set[tuple[str, ...]] = set()
        frontier_names = {n.name for n in self.view.regions() if _is_frontier(n)}
        inspected: set[str] = set()
        for i, e in enumerate(self.view.history):
            first = e.args[0] if e.args else ""
            if not e.ok:
                failures[e.key] = failures.get(e.key, 0) + 1
                recent.add(e.key)
                spot = _FLOOR_POINT_RE.search(e.text) if e.action == "goto" else None
                too_far = _AWAY_RE.search(e.text) if e.action == "inspect" else None
                if too_far:  # the range is shorter than thought
                    self.inspect_limit = min(self.inspect_limit, float(too_far.group(1)) - 0.1)
                if spot:  # that floor point, under whatever name, cannot be reached
                    self.bad_spots.append((float(spot.group(1)), float(spot.group(2))))
                elif not _moving_helps(e.text):
                    self.given_up.add(e.key)  # walking will not change "covered", "no path"
            if e.action == "inspect" and e.ok:
                inspected.add(first)
            if e.action == "inspect" and first in self.cands:
                c = self.cands[first]
                self.focus = first
                if e.ok:
                    c.answer, c.uncovered = e.text, False
                    c.occluder_queries, c.blocked = [], None
                else:
                    c.blocked = e.text
            elif e.action == "grasp" and e.ok:
                self.grasped.add(first)
                recent.clear()
                if self.focus in self.cands:
                    self.cands[self.focus].removals += 1
                    self.cands[self.focus].uncovered = True
            elif e.action == "place" and e.ok:
                self.placed.add(first)
                recent.clear()
            elif e.action == "query":
                q = " ".join(norm_words(first))
                self.last_query[q] = i
                self.queried.add(q)
                if self._asks_for_covering(q) and self.focus in self.cands:
                    self.cands[self.focus].occluder_queries.append(q)
                else:
                    self.queries_since_explore.append(q)
                    empty = not e.ok or bool(re.search(r"\bno candidates?\b|^0 cand", e.text))
                    self.empty_since_explore = self.empty_since_explore + 1 if empty else 0
            elif e.action == "goto":
                if e.ok:
                    self.at_region = first
                    self.visited.append(first)
                    self.last_move = i
                    recent.clear()
                    # a walk to look at something not yet inspected approaches it; any other
                    # walk (frontier, place, far region) is made to see more of the area
                    target = first.removeprefix("near_") if first.startswith("near_") else ""
                    node = self.view.nodes.get(target)
                    approach = (
                        node is not None
                        and target not in inspected
                        and not self._is_place(target)
                        and first not in frontier_names
                        and not any(
                            node.dist(self.view.nodes[o].xy) <= DUPLICATE_M
                            for o in inspected
                            if o in self.view.nodes
                        )
                    )
                    if not approach:
                        self.queries_since_explore = []
                        self.empty_since_explore = 0
                        self.explorations += 1
                        # the map grounded the queries again on arrival: as good as asking
                        for q, n in _regrounded(e.text):
                            if self._asks_for_covering(q):
                                continue
                            self.last_query[q] = i
                            self.queries_since_explore.append(q)
                            self.empty_since_explore = self.empty_since_explore + 1 if n == 0 else 0
                else:
                    self.at_region = None
        self.given_up |= {k for k, n in failures.items() if n >= MAX_FAILURES}
        self.excluded = recent | self.given_up
        # two walks in a row: do not walk back and forth between the same regions
        tail = self.view.history[-2:]
        if len(tail) == 2 and all(e.action == "goto" and e.ok for e in tail):
            self.excluded |= {e.key for e in tail}

    def _asks_for_covering(self, concept: str) -> bool:
        """Whether a query was for what covers a candidate (a tarp), not for the goal."""
        kind = _kind_of(concept)
        return kind in OCCLUDERS and kind not in self.intent.kinds

    def _lookalikes(self) -> list[str]:
        """Looks (the VLM's words) of at least two candidates ruled out as something else."""
        counts: dict[str, int] = {}
        for e in self.view.history:
            if e.action != "inspect" or not e.ok or not e.args or e.args[0] not in self.cands:
                continue
            j = judge(e.text, self.intent)
            if j.identity == "other" and j.seen:
                toks = norm_words(j.seen)
                cut = next((k for k, w in enumerate(toks) if w in _LOOK_END), len(toks))
                phrase = " ".join(toks[: min(cut, MAX_LOOK_WORDS)])
                counts[phrase] = counts.get(phrase, 0) + 1
        return [p for p, k in counts.items() if k >= LOOKALIKE_MIN and p not in self.queries_norm]

    def _judge_all(self) -> None:
        for c in self.cands.values():
            if (
                c.answer is None
                and c.node.inspection
                and not any(
                    e.action == "inspect" and e.args[:1] == (c.name,) for e in self.view.history
                )
            ):
                c.answer = c.node.inspection  # the history no longer shows it
            if c.answer is None:
                blocked_by_cover = c.blocked and contains_any(c.blocked, STRONG_OCCLUSION)
                c.status = "occluded" if blocked_by_cover else "open"
                if blocked_by_cover:
                    noun = next(
                        (
                            h.concept
                            for h in find_nouns(norm_words(c.blocked or ""))
                            if h.concept in OCCLUDERS
                        ),
                        None,
                    )
                    c.judgement = Judgement(
                        "occluded",
                        "inconclusive",
                        "unknown",
                        "",
                        "something covers it",
                        "",
                        noun,
                        False,
                        0,
                    )
                continue
            j = judge(c.answer, self.intent)
            c.judgement = j
            if c.uncovered:
                c.status = "open"
            elif j.status == "occluded" and c.removals >= MAX_REMOVALS:
                c.status = j.settled
            else:
                c.status = j.status
        inspected = [c for c in self.cands.values() if c.judgement is not None]
        for c in self.cands.values():
            if c.answer is None and c.status == "open":
                twin = next(
                    (d for d in inspected if d is not c and d.node.dist(c.node.xy) <= DUPLICATE_M),
                    None,
                )
                if twin is not None:
                    c.status, c.duplicate_of = "duplicate", twin.name

    # ------------------------------------------------------------------ geometry helpers
    def _same_spot(self, region: str) -> list[str]:
        """Regions at the floor point of ``region`` (viewpoints of look-alike candidates)."""
        node = self.view.nodes.get(region)
        if node is None:
            return []
        return [r.name for r in self.view.regions() if r.dist(node.xy) <= SAME_SPOT_M]

    def robot_dist(self, node: Node) -> float:
        return node.dist(self.view.robot_xy)

    def region_for(self, obj: Node) -> list[str]:
        """Regions from which ``obj`` can be reached or viewed, the dedicated one first."""
        out = []
        near = f"near_{obj.name}"
        if self.view.has(near, "region"):
            out.append(near)
        pat = re.compile(rf"\b{re.escape(obj.name)}\b")
        for r in self.view.regions():
            if r.name not in out and pat.search(r.description) and not _is_frontier(r):
                out.append(r.name)
        others = sorted(
            (r.dist(obj.xy), r.name)
            for r in self.view.regions()
            if r.name not in out and not _is_frontier(r) and r.dist(obj.xy) <= REGION_OF_M
        )
        out.extend(name for _, name in others[:2])
        return out

    def is_near(self, obj: Node, limit_m: float, *also: Node) -> bool:
        """Within ``limit_m`` of ``obj``, or standing at a viewpoint of it (or of ``also``):
        walking there again would not bring the robot any closer."""
        if self.robot_dist(obj) <= limit_m:
            return True
        views = {f"near_{n.name}" for n in (obj, *also)}
        return self.at_region is not None and self.at_region in views

    def ordered(self) -> list[Cand]:
        """Candidates in visiting order: the one in hand, the tour, then nearest first
        (graph order when the prompt gives no tour)."""
        cands = list(self.cands.values())
        order: list[Cand] = []
        if self.focus in self.cands:
            order.append(self.cands[self.focus])
        for name in self.view.tour or ():
            if name in self.cands and self.cands[name] not in order:
                order.append(self.cands[name])
        rest = [c for c in cands if c not in order]
        if self.view.tour is not None:
            rest.sort(key=lambda c: (round(self.robot_dist(c.node), 3), c.name))
        return order + rest

    def best(self) -> Cand | None:
        live = [c for c in self.ordered() if c.status in RANK]
        if not live:
            return None
        return min(
            live,
            key=lambda c: (
                RANK[c.status],
                -(c.judgement.score if c.judgement else 0),
                0 if c.judgement and c.judgement.identity == "match" else 1,
                round(self.robot_dist(c.node), 3),
                c.name,
            ),
        )

    # ------------------------------------------------------------------ proposals
    def proposals(self) -> Iterator[Proposal]:
        for p in self._proposals():
            if p.name == "goto" and (
                self._standing_at(p.args["region"]) or self._unreachable(p.args["region"])
            ):
                continue
            yield p

    def _unreachable(self, region: str) -> bool:
        node = self.view.nodes.get(region)
        return node is not None and any(node.dist(xy) <= SAME_SPOT_M for xy in self.bad_spots)

    def _standing_at(self, region: str) -> bool:
        node = self.view.nodes.get(region)
        return node is not None and self.robot_dist(node) <= SAME_SPOT_M

    def _proposals(self) -> Iterator[Proposal]:
        v = self.view
        confirmed = [c for c in self.ordered() if c.status == "confirmed"]
        if v.left <= 1:
            yield self.answer_best(final=True)
        for c in confirmed:
            yield self.answer(c)
        if v.holding:
            yield from self.put_down(v.holding)
        for c in self.ordered():
            j = c.judgement
            if c.status == "open":
                yield from self.approach_and_inspect(c)
            elif c.status == "occluded" and c.removals < MAX_REMOVALS:
                yield from self.uncover(c, weak=False)
            elif (
                c.name == self.focus
                and c.status == "inconclusive"
                and j is not None
                and j.weak
                and c.removals < MAX_REMOVALS
                and v.left >= WEAK_UNCOVER_MIN_LEFT
                and self.is_near(c.node, min(INSPECT_RANGE_M, self.inspect_limit))
            ):
                yield from self.uncover(c, weak=True)  # it is right here: open it now
        best = self.best()
        if v.left >= WEAK_UNCOVER_MIN_LEFT:
            for c in self.ordered():
                j = c.judgement
                if c.status == "inconclusive" and j and j.weak and c.removals < MAX_REMOVALS:
                    yield from self.uncover(c, weak=True)
        if best is not None and v.left <= ANSWER_EARLY_LEFT:
            yield self.answer_best()
        yield from self.ask_the_map()
        if best is not None and best.status == "partial":
            yield self.answer(best)  # it serves the purpose; only a wish is unmet
        yield from self.look_alikes()
        yield from self.search_places()
        for f in sorted(
            (r for r in v.regions() if _is_frontier(r) and r.name not in self.visited),
            key=lambda r: (-round(self.novelty(r), 3), r.name),
        ):
            yield Proposal(
                "goto",
                {"region": f.name},
                f"The map shows no unexamined {self.intent.head}; exploring {f.name} may "
                "reveal more of the area before querying again.",
            )
        if best is None or best.status not in ("confirmed", "partial"):
            # keep exploring: the region that shows most that is new, a way out of the
            # mapped area, then any region not visited
            regions = sorted(
                (
                    r
                    for r in v.regions()
                    if r.name not in self.visited and not _is_frontier(r) and not _is_free_spot(r)
                ),
                key=lambda r: (-round(self.novelty(r), 3), r.name),
            )
            far = [r for r in regions if self.novelty(r) >= FAR_REGION_M]
            for r in far:
                yield self._explore(r)
            if v.left > ANSWER_EARLY_LEFT + 1:
                yield from self.ways_out()
            for r in regions:
                if r not in far:
                    yield self._explore(r)
        yield self.answer_best()
        yield self.answer_none()
        for q in self.intent.queries:
            yield Proposal("query", {"concept": q}, self._why_query(q))

    def _explore(self, r: Node) -> Proposal:
        return Proposal(
            "goto",
            {"region": r.name},
            f"Nothing matching has been found; moving to {r.name} lets the cameras map more "
            "of the area.",
        )

    def ask_the_map(self) -> Iterator[Proposal]:
        """What to ask the map. Before any walk made to see more: the goal's concepts,
        precise to broad (but after two empty answers walk first if there is somewhere to
        walk). After each such walk one concept, in turn (the precise one, the broadest, a
        place not found yet, the look the map confuses with the goal), and a second only
        if the first found nothing: exploring must not become re-asking everything."""
        since = self.queries_since_explore
        empty = self.empty_since_explore
        if not self.explorations:
            if self._walk_first():
                return
            queries = list(self.intent.queries)
        else:
            if len(since) >= MAX_QUERIES_PER_WALK or (since and empty < len(since)):
                return
            turns = self._rotation()
            k = self.explorations - 1
            queries = [turns[k % len(turns)], turns[(k + 1) % len(turns)]]
        for q in queries:
            if " ".join(norm_words(q)) not in since:
                yield Proposal("query", {"concept": q}, self._why_query(q))

    def _walk_first(self) -> bool:
        """Whether the first queries all found nothing and a frontier waits: the map is
        empty around here, so walking beats broadening."""
        empty = self.empty_since_explore
        if empty < EMPTY_BEFORE_WALK or empty != len(self.queries_since_explore):
            return False
        return any(
            _is_frontier(r) and r.name not in self.visited and not self._unreachable(r.name)
            for r in self.view.regions()
        )

    def _rotation(self) -> list[str]:
        """Concepts asked in turn after exploring walks: the goal (precise, broad), the
        places to look that the map has not found yet, the look the map confuses with the
        goal."""
        places = [p for p in self.intent.places if not self._found(p)]
        q = self.intent.queries
        return list(dict.fromkeys([q[0], q[-1], *places, *self.lookalike_phrases]))

    def _found(self, concept: str) -> bool:
        norm = " ".join(norm_words(concept))
        return any(n.concept == norm for n in self.view.objects())

    def look_alikes(self) -> Iterator[Proposal]:
        """What the map keeps confusing with the goal, in the VLM's words ('small black
        electronics box', seen on two ruled-out candidates): the goal may look the same,
        so ask the map for that look and inspect what else it finds."""
        if self.explorations or self._walk_first():
            return  # after a walk, asked in turn by ask_the_map
        for phrase in self.lookalike_phrases:
            if phrase not in self.queries_since_explore:
                yield Proposal(
                    "query",
                    {"concept": phrase},
                    f"Candidates for {self.intent.head} keep turning out to be a '{phrase}'; "
                    "the goal may look the same to the map, so ground that look.",
                )

    def search_places(self) -> Iterator[Proposal]:
        """Where things of the goal's kind are usually kept, or the landmarks it stands by:
        ask the map for each place once (all of them first, so that the spot where they
        meet is known), then walk to the places found, where they meet first, else the
        newest view; the goal is asked for again from there."""
        places = {" ".join(norm_words(p)): p for p in self.intent.places}
        if not places:
            return
        if not (self.explorations or self._walk_first()):
            for norm, place in places.items():
                if norm not in self.queried:
                    yield Proposal(
                        "query",
                        {"concept": place},
                        f"The map finds no fitting {self.intent.head}; it is likely by a "
                        f"{place}, so ground '{place}' and search there.",
                    )
        walked = {r for r in self.visited if r.startswith("near_") and self._is_place(r[5:])}
        if len(walked) >= MAX_PLACE_WALKS:
            return
        nodes = [n for n in self.view.objects() if n.concept in places]

        def together(n: Node) -> int:
            """Other places found beside it: where landmarks meet, look first."""
            return len(
                {
                    m.concept
                    for m in nodes
                    if m.concept != n.concept and m.dist(n.xy) <= LANDMARKS_MEET_M
                }
            )

        nodes.sort(key=lambda n: (-together(n), -round(self.novelty(n), 3), n.name))
        for n in nodes:
            for r in self.region_for(n)[:1]:
                # a place the cameras have seen from close by would already show it
                fresh = self.novelty(self.view.nodes[r]) >= PLACE_NOVELTY_M
                if r not in self.visited and r != self.at_region and fresh:
                    yield Proposal(
                        "goto",
                        {"region": r},
                        f"No fitting {self.intent.head} is on the map yet; {n.name} is a "
                        f"{n.concept}, where it is likely to be: look from {r}.",
                    )

    def ways_out(self) -> Iterator[Proposal]:
        """Nothing left to explore on the map: look for a way into unmapped space (a door
        to another room), and walk through what it finds."""
        for n in sorted(
            (n for n in self.view.objects() if n.concept in EXIT_CONCEPTS),
            key=lambda n: (-round(self.novelty(n), 3), n.name),
        ):
            for r in self.region_for(n)[:1]:
                if r not in self.visited and r != self.at_region:
                    yield Proposal(
                        "goto",
                        {"region": r},
                        f"The mapped area holds no {self.intent.head}; {n.name} may lead to "
                        "unexplored space.",
                    )
        for concept in EXIT_CONCEPTS:
            if concept not in self.queried:
                yield Proposal(
                    "query",
                    {"concept": concept},
                    f"Everything mapped so far has been searched for {self.intent.head}; ask "
                    f"the map for a {concept} to reach unexplored space.",
                )

    def novelty(self, region: Node) -> float:
        """How far a region is from everywhere the robot has been (metres): walking there
        shows the cameras the most that is new."""
        been = [self.view.robot_xy] + [
            self.view.nodes[r].xy for r in self.visited if r in self.view.nodes
        ]
        return min(region.dist(xy) for xy in been)

    def _is_place(self, name: str) -> bool:
        """Whether an object node is a place to search from, not a candidate (a workbench
        for a tool, a door to another room)."""
        node = self.view.nodes.get(name)
        places = {" ".join(norm_words(p)) for p in self.intent.places} | set(EXIT_CONCEPTS)
        return node is not None and node.kind == "object" and node.concept in places

    def _why_query(self, q: str) -> str:
        if not self.queries_since_explore:
            return (
                f"The goal is {self.intent.goal_text()}; nothing is grounded yet, so ask the "
                f"map for '{q}' candidates."
            )
        return f"No remaining candidate satisfies the goal yet; broaden the map query to '{q}'."

    def approach_and_inspect(self, c: Cand) -> Iterator[Proposal]:
        if ("inspect", c.name) in self.given_up:
            return
        inspect = Proposal(
            "inspect",
            {"object": c.name, "question": self.intent.question()[:MAX_TEXT]},
            f"{c.name} is a map candidate for {self.intent.head} but the map may be wrong; "
            "inspecting it settles what it is"
            + (" now that its covering is off." if c.uncovered else "."),
        )
        if self.is_near(c.node, min(INSPECT_RANGE_M, self.inspect_limit)):
            yield inspect
        for r in self.region_for(c.node):
            if r != self.at_region:
                yield Proposal(
                    "goto",
                    {"region": r},
                    f"{c.name} is {self.robot_dist(c.node):.1f} m away; walk to {r} to inspect "
                    "it from close by.",
                )
        if self.robot_dist(c.node) <= self.inspect_limit:
            yield inspect
        elif not self.region_for(c.node):
            yield from self.get_a_viewpoint(c)

    def get_a_viewpoint(self, c: Cand) -> Iterator[Proposal]:
        """A far candidate the map offers no viewpoint for: ground its concept again from
        where the robot now stands, or walk to the known region that brings it closest."""
        concept = c.node.concept
        if self.last_query.get(concept, -1) < self.last_move:
            yield Proposal(
                "query",
                {"concept": concept},
                f"{c.name} had no reachable viewpoint; from the robot's new position the map "
                f"may offer one, so ground '{concept}' again.",
            )
        now = self.robot_dist(c.node)
        closer = sorted(
            (r.dist(c.node.xy), r.name)
            for r in self.view.regions()
            if r.name != self.at_region
            and r.name not in self.visited
            and r.dist(c.node.xy) <= now - VIEWPOINT_GAIN_M
        )
        for _, name in closer[:2]:
            yield Proposal(
                "goto",
                {"region": name},
                f"{c.name} is {now:.1f} m away with no viewpoint yet; {name} is closer to it, "
                "and the map will grow on the way.",
            )

    def uncover(self, c: Cand, *, weak: bool) -> Iterator[Proposal]:
        j = c.judgement
        want = (j.occluder if j else None) or ("lid" if weak else None)
        if want and not weak:
            kinds: tuple[str, ...] = OCCLUDERS  # the view named the covering: a lid as well
        else:
            kinds = (
                WEAK_OCCLUDERS if weak else tuple(o for o in OCCLUDERS if o not in WEAK_OCCLUDERS)
            )
        near = sorted(
            (
                o
                for o in self.occluders
                if _kind_of(o.concept) in kinds
                and o.name not in self.placed
                and o.name not in self.grasped
                and not o.moved
                and o.dist(c.node.xy) <= OCCLUDER_MATCH_M
            ),
            key=lambda o: (
                _kind_of(o.concept) != want,
                round(o.dist(c.node.xy), 3),
                o.name,
            ),
        )
        if not near:
            # the VLM's own words first ("crate lid"), then the kind of covering
            order = [j.cover_words] if j and j.cover_words and j.cover_words != want else []
            order += [want] if want else []
            order += [k for k in kinds if k != want]
            if len(c.occluder_queries) < MAX_OCCLUDER_QUERIES:
                for k in order:
                    if k and k not in c.occluder_queries:
                        yield Proposal(
                            "query",
                            {"concept": k},
                            f"{c.name} seems covered ({j.reason if j else 'covered'}); find "
                            f"the {k} on it so it can be moved aside.",
                        )
                        return
            return
        for o in near:
            grasp = Proposal(
                "grasp",
                {"object": o.name},
                f"{o.name} covers {c.name} and hides what would settle it; pick it up to "
                "uncover it.",
            )
            if grasp.key in self.given_up:
                continue
            if self.is_near(o, GRASP_RANGE_M, c.node):
                yield grasp
            for r in [*self.region_for(o), *self.region_for(c.node)]:
                closer = self.view.nodes[r].dist(o.xy) < self.robot_dist(o) - CLOSER_M
                if r != self.at_region and closer:
                    yield Proposal(
                        "goto",
                        {"region": r},
                        f"{o.name} covers {c.name} and is {self.robot_dist(o):.1f} m away; walk "
                        f"to {r} to reach it.",
                    )
            yield grasp

    def put_down(self, held: str) -> Iterator[Proposal]:
        v = self.view
        used = {e.args[1] for e in v.history if e.action == "place" and len(e.args) > 1}
        spots = sorted(
            (r for r in v.regions() if _is_free_spot(r) and r.name not in used),
            key=lambda r: (round(self.robot_dist(r), 3), r.name),
        )
        others = sorted(
            (
                r
                for r in v.regions()
                if not _is_free_spot(r)
                and not _is_frontier(r)
                and self.robot_dist(r) <= PLACE_RANGE_M
            ),
            key=lambda r: (round(self.robot_dist(r), 3), r.name),
        )
        for r in [*spots, *others]:
            yield Proposal(
                "place",
                {"object": held, "region": r.name},
                f"The gripper holds {held}; put it down at {r.name}, out of the way, and "
                "look again at what it covered.",
            )

    def answer(self, c: Cand, *, final: bool = False) -> Proposal:
        j = c.judgement
        goal = self.intent.goal_text(short=True)
        if c.status == "confirmed" and j is not None:
            ev = _clip(j.evidence or j.seen, SNIPPET_CHARS).rstrip(". ")
            text = f"{c.name} is {goal}: inspection saw '{ev}'."
            why = f"Inspection confirmed {c.name} ({j.reason})."
        elif c.status == "partial" and j is not None:
            ev = _clip(j.evidence, SNIPPET_CHARS).rstrip(". ")
            text = (
                f"{c.name} ({_clip(j.seen, 80)}) is the best match for {goal}; it serves the "
                f"purpose, though not every wish holds: '{ev}'."
            )
            why = f"No candidate meets every wish; {c.name} meets the essential part."
        else:
            state = j.reason if j else "not inspected"
            text = (
                f"Best guess, unconfirmed: {c.name} may be {goal} ({_clip(state, SNIPPET_CHARS)})."
            )
            why = (
                "The action budget is spent; answering with the most plausible remaining "
                "hypothesis."
                if final
                else f"Nothing better is left to try; {c.name} is the most plausible hypothesis."
            )
        return Proposal("answer", {"text": _clip(text, MAX_TEXT), "entity": c.name}, why)

    def answer_best(self, *, final: bool = False) -> Proposal:
        best = self.best()
        if best is None:
            return self.answer_none()
        return self.answer(best, final=final)

    def answer_none(self) -> Proposal:
        return Proposal(
            "answer",
            {"text": _clip(f"I could not find {self.intent.goal_text()}.", MAX_TEXT)},
            "No candidate remains plausible and nothing is left to try.",
        )

    # ------------------------------------------------------------------ hypothesis
    def hypothesis(self, chosen: Proposal) -> dict[str, Any]:
        confirmed = [c.name for c in self.ordered() if c.status == "confirmed"]
        live = [c.name for c in self.ordered() if c.status in RANK and c.status != "confirmed"]
        ruled = [
            c.name
            for c in self.ordered()
            if c.status == "ruled_out"
            or (c.duplicate_of and self.cands[c.duplicate_of].status == "ruled_out")
        ]
        regions = list(dict.fromkeys(self.visited))[-4:]
        unc: list[str] = []
        if not self.cands:
            unc.append(f"no {self.intent.head} candidates grounded in the map yet")
        for c in self.ordered():
            j = c.judgement
            if c.status == "open":
                unc.append(f"whether {c.name} is {self.intent.goal_text()} (not inspected)")
            elif c.status == "occluded":
                unc.append(f"{c.name}: {j.reason if j else 'covered'}")
            elif c.status in ("inconclusive", "partial") and j is not None:
                unc.append(f"{c.name}: {j.reason}")
            if len(unc) >= 4:
                break
        if self.cands and not confirmed:
            unc.append("map candidates may be false positives until inspected")
        return {
            "goal": _clip(self.intent.goal_text(), MAX_TEXT),
            "confirmed": {"objects": confirmed, "regions": regions},
            "hypothesized": {"entities": live, "ruled_out": ruled},
            "uncertainties": [_clip(u, 200) for u in unc[:5]],
        }


_DISTANCE_WORDS = (
    "away", "reach", "far", "near", "closer", "within", "range", "in the way", "holds", "holding",
)  # fmt: skip


def _moving_helps(failure: str) -> bool:
    """Whether a rejection is about distance (or a full gripper), which acting can fix."""
    return contains_any(failure, _DISTANCE_WORDS)


def _kind_of(concept: str) -> str | None:
    """The lexicon kind a map concept names, by its last word when the whole phrase is not
    known ('crate lid' -> lid, 'box flaps' -> lid)."""
    kind = concept_of(concept)
    if kind is None and concept.split():
        kind = concept_of(concept.split()[-1])
    return kind


def _regrounded(text: str) -> list[tuple[str, int]]:
    """(concept, candidates) from a goto result's "standing queries: ..." tail."""
    m = REGROUND_RE.search(text)
    if not m:
        return []
    return [
        (" ".join(norm_words(g.group("concept"))), int(g.group("n")))
        for g in REGROUND_ITEM_RE.finditer(m.group("counts"))
    ]


def _is_frontier(node: Node) -> bool:
    return node.name.startswith("frontier") or "unexplored" in node.description.lower()


def _is_free_spot(node: Node) -> bool:
    d = node.description.lower()
    return node.name.startswith("free_spot") or "putting things down" in d


def _clip(text: str, cap: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= cap else text[: cap - 3].rstrip() + "..."


# --------------------------------------------------------------------------- the responder


def _original_index(messages: Sequence[Message]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user" and "## Task" in messages[i].text():
            return i
    return None


def _refused(messages: Sequence[Message], start: int) -> tuple[set[tuple[str, ...]], set[str]]:
    """Actions of replies the repair loop sent back, and entities its feedback called unknown."""
    keys: set[tuple[str, ...]] = set()
    unknown: set[str] = set()
    for m in messages[start + 1 :]:
        text = m.text()
        if m.role == "assistant":
            for obj in extract_json_objects(text, limit=2):
                action = obj.get("action") if isinstance(obj, dict) else None
                if not isinstance(action, dict) or not isinstance(action.get("name"), str):
                    continue
                args = action.get("args") if isinstance(action.get("args"), dict) else {}
                p = Proposal(
                    action["name"], {k: str(v) for k, v in args.items() if v is not None}, ""
                )
                keys.add(p.key)
        elif m.role == "user":
            unknown.update(re.findall(r"unknown (?:\w+ )?'([A-Za-z][\w]*)'", text))
            unknown.update(re.findall(r"'([A-Za-z][\w]*)' is (?:not in|ruled out)", text))
    return keys, unknown


def respond(messages: Sequence[Message]) -> str:
    """The reply text (one JSON :class:`~agents.clue.schema.StepReply`) for a CLUE request."""
    idx = _original_index(messages)
    text = messages[idx].text() if idx is not None else ""
    view = parse_view(text)
    situation = Situation(view, parse_task(view.task))
    refused, unknown = _refused(messages, idx) if idx is not None else (set(), set())
    chosen: Proposal | None = None
    first_valid: Proposal | None = None
    for p in situation.proposals():
        if not p.valid(view):
            continue
        first_valid = first_valid or p
        if p.key in refused or p.key in situation.excluded or set(p.entities()) & unknown:
            continue
        chosen = p
        break
    if chosen is None:
        chosen = first_valid or situation.answer_none()
    reply = {
        "hypothesis": situation.hypothesis(chosen),
        "reasoning": _clip(chosen.reasoning, 600),
        "action": {"name": chosen.name, "args": dict(chosen.args)},
    }
    return json.dumps(reply, ensure_ascii=False)


class HeuristicResponder(LLMBackend):
    """The offline default LLM of the CLUE policy (see the module docstring).

    Reads only the request's messages; deterministic; tokens are estimated by the base
    class (``tokens_source == "estimate"``).
    """

    def __init__(self, model: str = "heuristic") -> None:
        self.model = model

    def _complete(self, request: ChatRequest) -> ChatReply:
        from agents.baselines.heuristic_replies import baseline_reply

        started = time.perf_counter()
        msgs = request.messages
        system = msgs[0].text() if msgs and msgs[0].role == "system" else ""
        user = next((m.text() for m in reversed(msgs) if m.role == "user"), "")
        text = baseline_reply(system, user)
        return timed_reply(text if text is not None else respond(msgs), request, started)

    def __repr__(self) -> str:
        return f"HeuristicResponder(model={self.model!r})"
