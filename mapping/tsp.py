"""Minimum-distance visitation order: an open path from a fixed start through points.

The grounding step hands the policy a tour hint, the order in which to visit candidate
viewpoints starting from the robot (CLUE, "Grounding", step 6). The path is *open*: it
starts at the robot and ends at the last point, with no return leg.

* up to ``exact_max_points`` points (default 12): Held-Karp dynamic programming, exact,
  vectorised over subsets (``O(2^n n^2)``; n = 12 takes a few milliseconds);
* beyond: nearest neighbour, then 2-opt moves until no move shortens the path.

Distances are Euclidean in the plane, metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_MAX_POINTS = 12  # Held-Karp's table has 2^n * n entries


@dataclass(frozen=True)
class Tour:
    """A visiting order over the input points and the length of the open path."""

    order: tuple[int, ...]  # indices into the points, first visited first
    length_m: float  # start -> points[order[0]] -> ... -> points[order[-1]]
    exact: bool  # True when Held-Karp proved it optimal


def distance_matrix(start_xy: np.ndarray, points_xy: np.ndarray) -> np.ndarray:
    """(n + 1, n + 1) Euclidean distances; row/column 0 is the start, then the points."""
    nodes = np.vstack([np.asarray(start_xy, float).reshape(1, 2), np.asarray(points_xy, float)])
    diff = nodes[:, None, :] - nodes[None, :, :]
    return np.sqrt((diff**2).sum(axis=-1))


def path_length(dist: np.ndarray, order: tuple[int, ...] | list[int]) -> float:
    """Length of the open path 0 -> order[0] + 1 -> ... over ``dist`` (node 0 = start)."""
    nodes = [0, *[i + 1 for i in order]]
    return float(sum(dist[a, b] for a, b in zip(nodes[:-1], nodes[1:], strict=False)))


def held_karp(dist: np.ndarray) -> tuple[int, ...]:
    """Exact open-path order over nodes 1..n of ``dist`` starting at node 0.

    ``dist`` is (n + 1, n + 1); returns point indices (node - 1). Memory is
    ``2^n * n`` float64, so keep n at or below :data:`EXACT_MAX_POINTS`-ish.
    """
    n = dist.shape[0] - 1
    if n == 0:
        return ()
    d = dist[1:, 1:]
    full = 1 << n
    cost = np.full((full, n), np.inf)
    parent = np.full((full, n), -1, dtype=np.int64)
    for j in range(n):
        cost[1 << j, j] = dist[0, j + 1]
    masks = np.arange(full)
    popcount = np.zeros(full, dtype=np.int64)
    for j in range(n):
        popcount += (masks >> j) & 1
    for size in range(2, n + 1):
        layer = masks[popcount == size]
        for j in range(n):
            sub = layer[(layer >> j) & 1 == 1]
            prev = sub ^ (1 << j)
            # cost of ending at k over prev, then k -> j; k = j is inf by construction
            totals = cost[prev] + d[:, j][None, :]
            best = np.argmin(totals, axis=1)
            cost[sub, j] = totals[np.arange(sub.size), best]
            parent[sub, j] = best
    mask = full - 1
    last = int(np.argmin(cost[mask]))
    order = []
    while last >= 0:
        order.append(last)
        mask, last = mask ^ (1 << last), int(parent[mask, last])
    return tuple(reversed(order))


def nearest_neighbour_two_opt(dist: np.ndarray) -> tuple[int, ...]:
    """Heuristic open-path order (node 0 fixed first): nearest neighbour, then 2-opt.

    A 2-opt move reverses a stretch ``order[i..j]``; for an open path the stretch may
    reach the end (no edge after it). Moves are applied until none shortens the path.
    """
    n = dist.shape[0] - 1
    unvisited = set(range(1, n + 1))
    path = [0]
    while unvisited:
        here = path[-1]
        nxt = min(unvisited, key=lambda k: (dist[here, k], k))
        path.append(nxt)
        unvisited.remove(nxt)
    improved = True
    while improved:
        improved = False
        for i in range(1, n):
            for j in range(i + 1, n + 1):
                a, b = path[i - 1], path[i]
                c = path[j]
                before = dist[a, b] + (dist[c, path[j + 1]] if j < n else 0.0)
                after = dist[a, c] + (dist[b, path[j + 1]] if j < n else 0.0)
                if after < before - 1e-12:
                    path[i : j + 1] = path[i : j + 1][::-1]
                    improved = True
    return tuple(k - 1 for k in path[1:])


def solve_tour(
    start_xy: np.ndarray, points_xy: np.ndarray, exact_max_points: int = EXACT_MAX_POINTS
) -> Tour:
    """Shortest open path from ``start_xy`` through every row of ``points_xy`` (metres).

    Exact (Held-Karp) for at most ``exact_max_points`` points, nearest neighbour +
    2-opt beyond. Ties resolve deterministically (lowest index first).
    """
    points_xy = np.asarray(points_xy, float).reshape(-1, 2)
    dist = distance_matrix(start_xy, points_xy)
    exact = len(points_xy) <= exact_max_points
    order = held_karp(dist) if exact else nearest_neighbour_two_opt(dist)
    return Tour(order=order, length_m=path_length(dist, order), exact=exact)
