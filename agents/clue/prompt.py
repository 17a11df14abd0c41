"""The CLUE system prompt and the per-step user message.

The user message is laid out in fixed sections (``## Task`` ...) so that a human, a real
LLM and the offline heuristic responder all read the same text. Nothing in it comes
from the simulator's ground truth: only the task, the observation graph built from the
map, the results of the robot's own actions and the policy's previous hypothesis.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from string import Template

from agents.clue.world_model import WorldModelConfig

_SYSTEM_TEMPLATE = Template("""\
You control a Spot robot (legs, arm, cameras) solving an underspecified task in an unknown
place. You learn what is where by querying a language-embedded map and by acting.

# Observations
- An observation graph from the robot's own map: `object` nodes are map candidates
  ([x, y] metres, description); `region` nodes are floor points to walk to; `near_X` is the
  viewpoint for object X. Changes arrive as add_node / update_node / add_edge / remove_node.
- The result of your last action. Map candidates may be false positives (noisy
  open-vocabulary features confuse similar things); only inspection confirms.

# Actions (one per step; arguments are node names)
- query(concept): ground a short noun phrase in the map; adds candidates, viewpoints and a
  suggested shortest visiting order. If nothing is found, broaden (backpack -> bag).
- goto(region): walk to a region node. On arrival the map, grown by the new views,
  grounds every concept you have queried again: new candidates arrive as add_node ops.
- inspect(object, question): ask a vision-language model about what the arm camera sees
  at the object; stand within ${inspect_m} m first.
- grasp(object): pick up an object within arm's reach (stand at its viewpoint first);
  use it to take away what covers the thing you must see.
- place(object, region): put the held object down at a free region within ${place_m} m (a
  free_spot node appears after each grasp).
- answer(text, entity): finish: say what you found and name its object node. A wrong
  answer is penalised, so confirm first.

# Principles
Act sequentially in closed loop: one action, read its result, update hypotheses. Resolve
what would satisfy the task, where things are, and what must be moved first. Ground
hypotheses with query before walking; follow the suggested order unless you have a
reason not to. If something covers the object, query it, grasp it, place it elsewhere,
inspect again. Never answer with a ruled-out entity. When the budget is nearly spent,
answer with your best hypothesis.

# Output: one JSON object, nothing else
{"hypothesis": {"goal": str, "confirmed": {"objects": [str], "regions": [str]},
  "hypothesized": {"entities": [str], "ruled_out": [str]}, "uncertainties": [str]},
 "reasoning": str, "action": {"name": str, "args": {...}}}
args per action: goto {region}; inspect {object, question}; grasp {object};
place {object, region}; query {concept}; answer {text, entity}.
""")


def system_prompt(config: WorldModelConfig = WorldModelConfig(), tour: bool = True) -> str:
    """The system prompt, stating the ranges ``config`` enforces; without ``tour`` it
    does not mention the shortest-tour hint (the paper's Fig. 6 ablation)."""
    text = _SYSTEM_TEMPLATE.substitute(
        inspect_m=f"{config.inspect_range_m:g}", place_m=f"{config.place_range_m:g}"
    )
    if tour:
        return text
    text = text.replace(
        ", viewpoints and a\n  suggested shortest visiting order.", " and viewpoints."
    ).replace(" follow the suggested order unless you have a\nreason not to.", "")
    assert "suggested" not in text, "the no-tour prompt must not mention the tour"
    return text


SYSTEM_PROMPT = system_prompt()
SYSTEM_PROMPT_NO_TOUR = system_prompt(tour=False)

HEADERS = (
    "Task",
    "Budget",
    "Robot",
    "Observation graph",
    "New observations",
    "Action history",
    "Previous hypothesis state",
)


@dataclass
class StepContext:
    """Everything the policy shows the LLM at one step."""

    task: str
    step: int  # 1-based
    budget: int
    robot_xy: tuple[float, float]
    holding: str | None
    nodes: list[str]  # rendered node lines
    tour: list[str] | None  # suggested order of candidate objects (None: no hint)
    new_observations: list[str]
    history: list[str] = field(default_factory=list)
    hypothesis: dict | None = None


def render_user_message(ctx: StepContext) -> str:
    lines = [f"## Task\n{ctx.task}", ""]
    lines.append(
        f"## Budget\nstep {ctx.step} of {ctx.budget}; {ctx.budget - ctx.step + 1} actions left"
    )
    lines.append("")
    held = ctx.holding or "nothing"
    lines.append(
        f"## Robot\nposition [{ctx.robot_xy[0]:.1f}, {ctx.robot_xy[1]:.1f}]; holding {held}"
    )
    lines.append("")
    lines.append("## Observation graph")
    lines.extend(ctx.nodes or ["(empty: nothing has been queried yet)"])
    if ctx.tour is not None and ctx.tour:
        lines.append(
            f"Suggested visiting order (shortest tour from the robot): {', '.join(ctx.tour)}"
        )
    lines.append("")
    lines.append("## New observations")
    lines.extend(ctx.new_observations or ["(none)"])
    lines.append("")
    lines.append("## Action history")
    lines.extend(ctx.history or ["(no actions yet)"])
    lines.append("")
    lines.append("## Previous hypothesis state")
    lines.append(
        json.dumps(ctx.hypothesis, separators=(",", ":")) if ctx.hypothesis else "(none yet)"
    )
    return "\n".join(lines)


def split_sections(text: str) -> dict[str, str]:
    """Inverse of :func:`render_user_message`: section title -> body text."""
    out: dict[str, str] = {}
    current = None
    buf: list[str] = []
    for line in text.splitlines():
        if line.startswith("## ") and line[3:].strip() in HEADERS:
            if current is not None:
                out[current] = "\n".join(buf).strip()
            current, buf = line[3:].strip(), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        out[current] = "\n".join(buf).strip()
    return out


# ----------------------------------------------------------------------------- line formats
# One spelling for node and history lines, shared by the policy (which writes them) and
# the offline heuristic responder (which reads them, as a model would).
NODE_RE = re.compile(
    r"^- (?P<name>[A-Za-z][A-Za-z0-9_]*) \((?P<kind>object|region)\) at "
    r"\[(?P<x>-?[0-9.]+), (?P<y>-?[0-9.]+)\](?:: (?P<description>.*))?$"
)
# "standing queries: bike 0, bicycle 1" closes a goto's result: candidates per concept
# after the map grounded them again (see WorldModel.requery)
REGROUND_RE = re.compile(r"standing queries: (?P<counts>.*)$")
REGROUND_ITEM_RE = re.compile(r"(?P<concept>[^,]+?) (?P<n>[0-9]+)(?:,\s*|$)")
HISTORY_RE = re.compile(
    r"^(?P<step>[0-9]+)\. (?P<action>[a-z]+)\((?P<args>.*?)\) -> (?P<status>ok|rejected|failed): ?(?P<text>.*)$"
)


def reground_text(counts: list[tuple[str, int]]) -> str:
    """The tail of a goto's result: candidates per standing query (REGROUND_RE)."""
    return "standing queries: " + ", ".join(f"{c} {n}" for c, n in counts)


def node_line(name: str, kind: str, xy, description: str = "") -> str:
    line = f"- {name} ({kind}) at [{xy[0]:.1f}, {xy[1]:.1f}]"
    return f"{line}: {description}" if description else line


def history_line(step: int, action: str, args: list[str], status: str, text: str) -> str:
    shown = ", ".join(args)
    flat = " ".join(text.split())
    return f"{step}. {action}({shown}) -> {status}: {flat}"
