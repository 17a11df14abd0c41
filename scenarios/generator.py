"""Seeded scenario generator (work in progress: the YAML writer first)."""

from __future__ import annotations

import json
import re
import textwrap

WIDTH = 100  # characters per line in written files
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9 _.,()/%+'&-]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _scalar(v, flow: bool = False) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = round(v, 4)
        return repr(r + 0.0)  # + 0.0 turns -0.0 into 0.0
    s = str(v)
    plain = (
        _PLAIN.match(s)
        and s.lower() not in _RESERVED
        and not s.endswith(" ")
        and not (flow and "," in s)
    )
    return s if plain else json.dumps(s, ensure_ascii=False)


def _flow(v) -> str | None:
    """Flow text for a scalar, a list of scalars or a flat mapping; None if not flat."""
    if _is_scalar(v):
        return _scalar(v, flow=True)
    if isinstance(v, list | tuple) and all(_is_scalar(x) for x in v):
        return "[" + ", ".join(_scalar(x, flow=True) for x in v) + "]"
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            fx = _flow(x) if not isinstance(x, dict) else None
            if fx is None:
                return None
            parts.append(f"{k}: {fx}")
        return "{" + ", ".join(parts) + "}"
    return None


def _mapping(d: dict, indent: int, lines: list[str], first: str | None = None) -> None:
    pad = " " * indent
    for i, (k, v) in enumerate(d.items()):
        lead = first if (i == 0 and first is not None) else pad
        if isinstance(v, str) and len(lead) + len(k) + 2 + len(v) > WIDTH:
            lines.append(f"{lead}{k}: >-")
            lines.extend(
                textwrap.wrap(
                    v,
                    WIDTH - indent - 2,
                    initial_indent=pad + "  ",
                    subsequent_indent=pad + "  ",
                    break_on_hyphens=False,
                )
            )
            continue
        if isinstance(v, list | tuple) and v and not all(_is_scalar(x) for x in v):
            lines.append(f"{lead}{k}:")
            for item in v:
                _item(item, indent + 2, lines)
            continue
        flat = _flow(v)
        if flat is not None and len(lead) + len(k) + 2 + len(flat) <= WIDTH:
            lines.append(f"{lead}{k}: {flat}")
        elif isinstance(v, dict):
            lines.append(f"{lead}{k}:")
            _mapping(v, indent + 2, lines)
        else:
            lines.append(f"{lead}{k}: {flat}")


def _item(item, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    flat = _flow(item)
    if flat is not None and len(pad) + 2 + len(flat) <= WIDTH:
        lines.append(f"{pad}- {flat}")
    elif isinstance(item, dict):
        _mapping(item, indent + 2, lines, first=pad + "- ")
    else:
        lines.append(f"{pad}- {flat}")


def dump_yaml(data: dict, header: str = "") -> str:
    """Scenario data as YAML in the style of the shipped examples: block structure, flat
    mappings and number lists inline, long text folded. Deterministic: the same data
    gives the same bytes."""
    lines = [f"# {line}".rstrip() for line in header.strip().splitlines()] if header else []
    _mapping(data, 0, lines)
    return "\n".join(lines) + "\n"
