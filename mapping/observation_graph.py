"""The observation graph the LLM reads: grounded candidates and where to look from.

``object`` nodes are candidates (``barrel_1``), ``region`` nodes their viewpoints
(``near_barrel_1``); an edge joins each candidate to its viewpoint. Every change is
emitted as one line of text for the LLM's context::

    add_node(name=barrel_1, type=object, coordinates=[7.2, 3.4], description="...")
    add_node(name=near_barrel_1, type=region, coordinates=[6.1, 2.9], description="...")
    add_edge(barrel_1, near_barrel_1)
    update_node(name=barrel_1, coordinates=[7.1, 3.4], description="...")
    remove_node(name=near_barrel_3)
    tour(concept=barrel, start=[1.2, 1.2], order=[near_barrel_2, near_barrel_1], length_m=9.8)

Names are the concept's slug plus a counter that never reuses a number, so a name
keeps meaning the same thing for the whole episode. Re-querying a concept matches the
new candidates to that concept's existing nodes (optimal assignment, within
``merge_radius_m``): matches are updated, the rest added, and nodes the query no
longer supports are removed (``prune_missing``). Output order is deterministic:
updates and additions in candidate order (most confident first), then removals by
name, then the tour hint (the paper's minimum-distance visiting order; a hint only -
preconditions such as removing an occluder are the LLM's job).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

from mapping.grid import OccupancyGrid
from mapping.grounding import Candidate, Grounder, GroundingResult, Viewpoint


@dataclass(frozen=True)
class GraphConfig:
    merge_radius_m: float = 0.75  # a new candidate this close to a node of its concept is that node
    prune_missing: bool = True  # remove nodes of the concept that a re-query no longer finds
    coordinate_decimals: int = 1  # metres are rendered with this many decimals


def slug(concept: str) -> str:
    """Name stem of a concept: lower case, runs of other characters as ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", concept.lower()).strip("_") or "object"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ObservationGraph:
    """A networkx graph of candidates and viewpoints that narrates its own changes."""

    def __init__(self, config: GraphConfig | None = None) -> None:
        self.config = config or GraphConfig()
        self.graph = nx.Graph()
        self.last_names: tuple[str, ...] = ()  # node of each candidate of the last applied result
        self._next_index: dict[str, int] = {}

    # ------------------------------------------------------------------ rendering

    def _xy(self, xy) -> str:
        d = self.config.coordinate_decimals
        return "[" + ", ".join(f"{round(float(v), d) + 0.0:.{d}f}" for v in xy) + "]"

    def _node_line(self, op: str, name: str) -> str:
        attrs = self.graph.nodes[name]
        kind = f", type={attrs['kind']}" if op == "add_node" else ""
        return (
            f"{op}(name={name}{kind}, coordinates={self._xy(attrs['xy'])}, "
            f"description={_quote(attrs['description'])})"
        )

    @staticmethod
    def _object_description(concept: str, cand: Candidate, has_view: bool) -> str:
        ex, ey, ez = cand.extent_m
        text = (
            f"possible {concept} (confidence {cand.confidence:.2f}, {cand.size_voxels} voxels, "
            f"about {ex:.1f} x {ey:.1f} x {ez:.1f} m)"
        )
        return text if has_view else text + "; no reachable viewpoint found"

    @staticmethod
    def _region_description(obj: str, vp: Viewpoint) -> str:
        return f"viewpoint {vp.distance_m:.1f} m from {obj}, facing it (yaw {vp.yaw_rad:.2f} rad)"

    def describe(self) -> list[str]:
        """The whole graph as ``add_node`` / ``add_edge`` lines (to seed a fresh prompt)."""
        lines = [self._node_line("add_node", n) for n in sorted(self.graph.nodes)]
        edges = sorted(tuple(sorted(e)) for e in self.graph.edges)
        return lines + [f"add_edge({a}, {b})" for a, b in edges]

    # ------------------------------------------------------------------ changes

    def _new_name(self, concept: str) -> str:
        stem = slug(concept)
        k = self._next_index.get(stem, 1)
        self._next_index[stem] = k + 1
        return f"{stem}_{k}"

    def set_node(self, name: str, kind: str, xy, description: str, **extra) -> str | None:
        """Add or update a node; returns its op line, or None when nothing visible changed."""
        if name not in self.graph:
            self.graph.add_node(name, kind=kind, xy=tuple(xy), description=description, **extra)
            return self._node_line("add_node", name)
        attrs = self.graph.nodes[name]
        before = self._node_line("update_node", name)
        attrs.update(xy=tuple(xy), description=description, **extra)
        after = self._node_line("update_node", name)
        return None if after == before else after

    def remove(self, name: str) -> list[str]:
        """Remove a node (and an object's viewpoint); returns the op lines."""
        if name not in self.graph:
            raise KeyError(f"no node named {name!r}")
        ops = []
        view = self.graph.nodes[name].get("viewpoint")
        if view is not None and view in self.graph:
            self.graph.remove_node(view)
            ops.append(f"remove_node(name={view})")
        self.graph.remove_node(name)
        ops.append(f"remove_node(name={name})")
        return ops

    def _match(self, concept: str, candidates: tuple[Candidate, ...]) -> dict[int, str]:
        """Candidate index -> existing node of ``concept`` it continues (within radius)."""
        nodes = sorted(
            n
            for n, a in self.graph.nodes(data=True)
            if a["kind"] == "object" and a["concept"] == concept
        )
        if not nodes or not candidates:
            return {}
        node_xy = np.array([self.graph.nodes[n]["exact_xy"] for n in nodes])
        cand_xy = np.array([c.xy for c in candidates])
        dist = np.linalg.norm(cand_xy[:, None, :] - node_xy[None, :, :], axis=-1)
        gated = np.where(dist <= self.config.merge_radius_m, dist, 1e9)
        rows, cols = linear_sum_assignment(gated)
        return {int(r): nodes[c] for r, c in zip(rows, cols, strict=True) if gated[r, c] < 1e9}

    def apply(self, result: GroundingResult) -> list[str]:
        """Merge a grounding result into the graph; returns the op lines, tour hint last."""
        concept = result.concept
        matched = self._match(concept, result.candidates)
        ops: list[str] = []
        names: list[str] = []
        for k, (cand, vp) in enumerate(zip(result.candidates, result.viewpoints, strict=True)):
            name = matched.get(k) or self._new_name(concept)
            names.append(name)
            view = f"near_{name}"
            line = self.set_node(
                name,
                "object",
                cand.xy,
                self._object_description(concept, cand, vp is not None),
                concept=concept,
                exact_xy=tuple(cand.xy),
                viewpoint=view if vp is not None else None,
            )
            ops += [line] if line else []
            if vp is None:
                if view in self.graph:
                    self.graph.remove_node(view)
                    ops.append(f"remove_node(name={view})")
                continue
            is_new = view not in self.graph
            line = self.set_node(view, "region", vp.xy_m, self._region_description(name, vp))
            ops += [line] if line else []
            if is_new:
                self.graph.add_edge(name, view)
                ops.append(f"add_edge({name}, {view})")
        if self.config.prune_missing:
            stale = sorted(
                n
                for n, a in self.graph.nodes(data=True)
                if a["kind"] == "object" and a["concept"] == concept and n not in names
            )
            for n in stale:
                ops += self.remove(n)
        self.last_names = tuple(names)
        tour = [f"near_{names[k]}" for k in result.tour]
        self.graph.graph.setdefault("tours", {})[concept] = tour
        if tour:
            ops.append(
                f"tour(concept={slug(concept)}, start={self._xy(result.robot_xy_m)}, "
                f"order=[{', '.join(tour)}], length_m={result.tour_length_m:.1f})"
            )
        return ops


def query_to_text(
    grounder: Grounder,
    graph: ObservationGraph,
    concept: str,
    robot_xy: np.ndarray,
    grid: OccupancyGrid | None = None,
) -> str:
    """Ground ``concept`` from ``robot_xy``, merge into ``graph``, return the op lines.

    When nothing is found the block says so, so the LLM can broaden the concept.
    """
    result = grounder.query(concept, robot_xy, grid)
    ops = graph.apply(result)
    if not result.candidates:
        ops.append(f"no_candidates(concept={slug(concept)})")
    return "\n".join(ops)
