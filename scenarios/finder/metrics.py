"""Object-retrieval metrics as defined in the Finder paper's evaluation.

* **Success@r**: the prediction's category matches the query's and its centroid lies
  within ``r`` metres of the ground-truth centroid (r = 0.5 m and 1 m). For an ambiguous
  query any valid same-category instance counts: the distance is to the nearest one.
* **LocErr**: mean centroid distance (metres) over the queries that are Success@1m.
* Splits (environments) combine query-weighted: Success@r is the mean over all queries
  pooled; LocErr the mean over all Success@1m queries pooled.

A query without a prediction (the method abstained) is a failure at every radius.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scenarios.finder import FinderQuery, FinderSet

RADII_M = (0.5, 1.0)


@dataclass(frozen=True)
class Prediction:
    """A method's answer to one query: a 3-D centroid (metres, world frame) and the
    category it believes it found (``None``: not stated; only distance is judged)."""

    centroid_m: tuple[float, float, float]
    category: str | None = None


@dataclass(frozen=True)
class QueryScore:
    query: str
    difficulty: str
    kind: str
    distance_m: float  # to the nearest valid instance; inf when abstained
    category_ok: bool

    def success(self, radius_m: float) -> bool:
        return self.category_ok and self.distance_m < radius_m


def score_query(query: FinderQuery, pred: Prediction | None) -> QueryScore:
    if pred is None:
        return QueryScore(query.id, query.difficulty, query.kind, math.inf, False)
    p = np.asarray(pred.centroid_m, dtype=float)
    d = min(float(np.linalg.norm(p - np.asarray(t.centroid_m))) for t in query.targets)
    ok = pred.category is None or pred.category == query.category
    return QueryScore(query.id, query.difficulty, query.kind, d, ok)


def success_at(scores: Sequence[QueryScore], radius_m: float) -> float:
    return float(np.mean([s.success(radius_m) for s in scores])) if scores else math.nan


def loc_err(scores: Sequence[QueryScore]) -> float:
    d = [s.distance_m for s in scores if s.success(1.0)]
    return float(np.mean(d)) if d else math.nan


@dataclass(frozen=True)
class SplitResult:
    """Scores of one split (an environment), or of several pooled."""

    name: str
    scores: tuple[QueryScore, ...]

    @property
    def n(self) -> int:
        return len(self.scores)

    def success_at(self, radius_m: float) -> float:
        return success_at(self.scores, radius_m)

    @property
    def loc_err_m(self) -> float:
        return loc_err(self.scores)

    def subset(self, difficulty: str) -> SplitResult:
        return SplitResult(
            f"{self.name}/{difficulty}", tuple(s for s in self.scores if s.difficulty == difficulty)
        )

    def summary(self) -> dict[str, float]:
        return {
            "queries": self.n,
            "S@0.5": self.success_at(0.5),
            "S@1": self.success_at(1.0),
            "LocErr_m": self.loc_err_m,
        }


def evaluate(fset: FinderSet, predictions: Mapping[str, Prediction | None]) -> SplitResult:
    """Score every query of a set; queries missing from ``predictions`` count as abstained."""
    unknown = set(predictions) - {q.id for q in fset.queries}
    if unknown:
        raise KeyError(f"predictions for unknown queries: {', '.join(sorted(unknown))}")
    return SplitResult(
        fset.environment, tuple(score_query(q, predictions.get(q.id)) for q in fset.queries)
    )


def combine(splits: Sequence[SplitResult], name: str = "all") -> SplitResult:
    """Query-weighted pooling across splits (the Finder paper's averaging)."""
    return SplitResult(name, tuple(s for split in splits for s in split.scores))
