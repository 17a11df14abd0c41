"""Append-only JSONL episode logs, flushed per record.

A crash (even ``kill -9``) loses nothing already written: each record is one line,
written and flushed before the next behaviour starts. Readers skip a torn last line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np


def _jsonable(o: Any):
    if isinstance(o, np.ndarray):
        return o.tolist() if o.size <= 64 else f"<array {o.shape} {o.dtype}>"
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if hasattr(o, "__dataclass_fields__"):
        return {k: getattr(o, k) for k in o.__dataclass_fields__}
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    return repr(o)


class EpisodeLog:
    """One JSON object per line: ``{"type": ..., "t_wall_s": ..., **fields}``."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._fh = None
        self._t0 = time.monotonic()
        self.records: list[dict] = []  # kept in memory too, for summaries
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, type_: str, **fields) -> dict:
        rec = {"type": type_, "t_wall_s": round(time.monotonic() - self._t0, 4), **fields}
        self.records.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec, default=_jsonable, ensure_ascii=False) + "\n")
            self._fh.flush()
        return rec

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_log(path: str | Path) -> list[dict]:
    """Every complete record of a log; a torn last line (crash mid-write) is skipped."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return out
