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

SYSTEM_PROMPT = """\
You control a legged robot (Boston Dynamics Spot with an arm and cameras) that must carry
out an underspecified task given in natural language. The world is unknown: you have no
object catalogue; you learn what is where by asking a language-embedded map and by acting.

# Observation space
- An observation graph built from the robot's own map. `object` nodes are candidate
  locations returned by map queries, with coordinates [x, y] in metres and a
  description; `region` nodes are free floor points the robot can walk to. An edge links
  each candidate object to the region from which it can be viewed (`near_<object>`).
- Graph changes arrive as text operations: add_node(...), update_node(...),
  add_edge(...), remove_node(...). Descriptions evolve as you learn ("candidate location
  from the language-embedded map" -> "covered by a tarp" -> "label says water").
- The result of your previous action (success, or why it was rejected).
- Map query candidates may be false positives: the map is built from noisy open-vocabulary
  features and confuses similar-looking things. Only an inspection confirms.

# Action space (one action per step; entities must be node names from the graph)
- query(concept): ask the map for a short noun phrase ("barrel", "cart", "tarp"). Adds
  candidate object nodes with viewpoint regions and suggests a shortest visiting order.
  If a precise concept finds nothing, broaden it ("red backpack" -> "backpack" -> "bag").
- goto(region): walk to a region node (e.g. near_barrel_1).
- inspect(object, question): point the arm camera at an object and ask a vision-language
  model a question about what it shows. The robot must stand within 3 m (go near first).
- grasp(object): pick up an object within arm's reach (about 1.3 m; go near first).
  Use it to remove what covers or hides the thing you need to see.
- place(object, region): put the held object down at a free region within 1.6 m
  (a free_spot node appears after each grasp).
- answer(text, entity): finish the task: say what you found and name the object node.
  The episode ends; a wrong answer is penalised, so confirm before answering.

# Planning principles
- Work sequentially and in closed loop: choose one action, look at its result, update
  your hypotheses, then choose the next.
- Resolve semantic uncertainty (what would satisfy the task), metric uncertainty (where
  things are; which actions are feasible) and functional uncertainty (what must be
  moved first) by acting.
- Ground every hypothesis with query before going anywhere. Visit candidates in the
  suggested order unless you have a reason not to; walk near before inspecting or grasping.
- If something covers the object you must examine, query for it, grasp it, place it
  elsewhere, then inspect again.
- Rule out candidates that inspection contradicts; never answer with a ruled-out entity.
- Keep to the action budget; when it is nearly spent, answer with your best hypothesis.

# Hypothesis state
Keep it current every step: goal (what would satisfy the task), confirmed objects and
regions, hypothesized entities still plausible, ruled_out entities, and the
uncertainties that remain.

# Output format
Reply with one JSON object and nothing else:
{"hypothesis": {"goal": str, "confirmed": {"objects": [str], "regions": [str]},
  "hypothesized": {"entities": [str], "ruled_out": [str]}, "uncertainties": [str]},
 "reasoning": str (one or two sentences),
 "action": {"name": "goto|inspect|grasp|place|query|answer",
            "args": {"region": str, "object": str, "question": str, "concept": str,
                     "text": str, "entity": str}}}
Give only the args the action needs: goto {region}; inspect {object, question};
grasp {object}; place {object, region}; query {concept}; answer {text, entity}.
"""

SYSTEM_PROMPT_NO_TOUR = SYSTEM_PROMPT.replace(
    " Visit candidates in the\n  suggested order unless you have a reason not to; walk near before inspecting or grasping.",
    " Walk near before\n  inspecting or grasping.",
).replace(" and suggests a shortest visiting order", "")

HEADERS = ("Task", "Budget", "Robot", "Observation graph", "New observations", "Action history",
           "Previous hypothesis state")


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
    lines.append(f"## Budget\nstep {ctx.step} of {ctx.budget}; {ctx.budget - ctx.step + 1} actions left")
    lines.append("")
    held = ctx.holding or "nothing"
    lines.append(f"## Robot\nposition [{ctx.robot_xy[0]:.1f}, {ctx.robot_xy[1]:.1f}]; holding {held}")
    lines.append("")
    lines.append("## Observation graph")
    lines.extend(ctx.nodes or ["(empty: nothing has been queried yet)"])
    if ctx.tour is not None and ctx.tour:
        lines.append(f"Suggested visiting order (shortest tour from the robot): {', '.join(ctx.tour)}")
    lines.append("")
    lines.append("## New observations")
    lines.extend(ctx.new_observations or ["(none)"])
    lines.append("")
    lines.append("## Action history")
    lines.extend(ctx.history or ["(no actions yet)"])
    lines.append("")
    lines.append("## Previous hypothesis state")
    lines.append(json.dumps(ctx.hypothesis, separators=(",", ":")) if ctx.hypothesis else "(none yet)")
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
HISTORY_RE = re.compile(
    r"^(?P<step>[0-9]+)\. (?P<action>[a-z]+)\((?P<args>.*?)\) -> (?P<status>ok|rejected|failed): ?(?P<text>.*)$"
)


def node_line(name: str, kind: str, xy, description: str = "") -> str:
    line = f"- {name} ({kind}) at [{xy[0]:.1f}, {xy[1]:.1f}]"
    return f"{line}: {description}" if description else line


def history_line(step: int, action: str, args: list[str], status: str, text: str) -> str:
    shown = ", ".join(args)
    flat = " ".join(text.split())
    return f"{step}. {action}({shown}) -> {status}: {flat}"
