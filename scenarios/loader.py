"""Load scenario YAML files into validated :class:`~scenarios.schema.Scenario` objects.

Every problem is reported as ``FILE: PATH: message`` where PATH is the location inside
the file (``objects[3].pose``), never as a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from scenarios.geometry import ScenarioIssues
from scenarios.schema import Scenario

PACKAGE_DIR = Path(__file__).resolve().parent
SEARCH_DIRS = (PACKAGE_DIR / "examples", PACKAGE_DIR / "paper")


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false, so that keys such as ``on``
    (a support relation) stay strings instead of turning into ``True``."""


_Yaml12Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_yaml(text: str):
    return yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass


@dataclass(frozen=True)
class Issue:
    path: str  # location inside the file, e.g. "objects[3].pose"
    message: str


class ScenarioError(Exception):
    """A scenario file that cannot be used; ``issues`` say where and why."""

    def __init__(self, file: str | Path, issues: list[Issue]):
        self.file = str(file)
        self.issues = issues
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(f"{self.file}: {i.path or '<root>'}: {i.message}" for i in self.issues)


def format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _issues_from_validation(err: ValidationError) -> list[Issue]:
    issues: list[Issue] = []
    for e in err.errors(include_url=False):
        ctx_err = (e.get("ctx") or {}).get("error")
        base = format_loc(tuple(p for p in e["loc"] if not _is_union_tag(p)))
        if isinstance(ctx_err, ScenarioIssues):
            issues.extend(Issue(p, m) for p, m in ctx_err.issues)
            continue
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (check spelling; see the scenario schema)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        issues.append(Issue(base, msg))
    return issues


def _is_union_tag(part) -> bool:
    # pydantic adds the tried member type to the loc of union errors ("str", "tuple[...]")
    return isinstance(part, str) and ("[" in part or part in {"str", "float", "int"})


def parse_scenario(data: object, file: str | Path = "<memory>") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(file, [Issue("", "the file must hold a mapping (key: value pairs)")])
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(file, _issues_from_validation(err)) from None
    except ScenarioIssues as err:  # raised directly outside a validation context
        raise ScenarioError(file, [Issue(p, m) for p, m in err.issues]) from None


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(path, [Issue("", f"cannot read file: {exc.strerror or exc}")]) from None
    try:
        data = read_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(path, [Issue(where, f"invalid YAML: {problem}")]) from None
    return parse_scenario(data, path)


def scenario_files(dirs=SEARCH_DIRS) -> list[Path]:
    """Every shipped scenario file, sorted."""
    files: list[Path] = []
    for d in dirs:
        if d.is_dir():
            files.extend(sorted(d.rglob("*.yaml")))
    return files


SUITES = {"examples": PACKAGE_DIR / "examples", "paper": PACKAGE_DIR / "paper"}


def resolve_names(names) -> list[Path]:
    """Scenario files for ids, paths, folders (every YAML file under them, e.g. what
    ``cluetwin generate`` wrote) and suite names ("examples", "paper"), in order."""
    out: list[Path] = []
    for name in names:
        suite = SUITES.get(str(name))
        folder = suite if suite is not None else Path(name)
        if suite is not None or folder.is_dir():
            files = scenario_files((folder,))
            if not files:
                what = "this suite has" if suite is not None else "this folder has"
                raise ScenarioError(str(name), [Issue("", f"{what} no scenario files")])
            out.extend(files)
        else:
            out.append(find_scenario(name))
    return out


def find_scenario(name: str | Path) -> Path:
    """A path, or the id / file stem of a shipped scenario."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ScenarioError(p, [Issue("", "no such file")])
        return p
    for f in scenario_files():
        if f.stem == str(name):
            return f
    for f in scenario_files():
        try:
            if load_scenario(f).id == str(name):
                return f
        except ScenarioError:
            continue
    known = ", ".join(f.stem for f in scenario_files())
    raise ScenarioError(
        str(name), [Issue("", f"no scenario with this id or path; shipped: {known}")]
    )
