"""Visiting order: exact for small sets (checked against brute force), heuristic beyond."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mapping.tsp import (
    distance_matrix,
    held_karp,
    nearest_neighbour_two_opt,
    path_length,
    solve_tour,
)


def brute_force(start: np.ndarray, pts: np.ndarray) -> float:
    """Shortest open path length over all permutations, vectorised."""
    n = len(pts)
    if n == 0:
        return 0.0
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    path = pts[perms]  # (P, n, 2)
    first = np.linalg.norm(path[:, 0] - start, axis=1)
    legs = np.linalg.norm(np.diff(path, axis=1), axis=2).sum(axis=1)
    return float((first + legs).min())


@pytest.mark.parametrize("n", range(0, 10))
def test_exact_tour_equals_brute_force_optimum(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(3 if n < 9 else 2):
        start = rng.uniform(-5, 5, 2)
        pts = rng.uniform(-10, 10, (n, 2))
        tour = solve_tour(start, pts)
        assert tour.exact
        assert sorted(tour.order) == list(range(n))
        assert tour.length_m == pytest.approx(brute_force(start, pts), abs=1e-9)
        assert tour.length_m == pytest.approx(path_length(distance_matrix(start, pts), tour.order))


def test_held_karp_handles_twelve_points_and_beats_heuristic():
    rng = np.random.default_rng(7)
    start, pts = rng.uniform(0, 20, 2), rng.uniform(0, 20, (12, 2))
    dist = distance_matrix(start, pts)
    exact = path_length(dist, held_karp(dist))
    heuristic = path_length(dist, nearest_neighbour_two_opt(dist))
    assert exact <= heuristic + 1e-9
    assert heuristic <= 1.15 * exact  # 2-opt lands close to the optimum


def test_heuristic_beyond_exact_limit_is_a_valid_short_tour():
    rng = np.random.default_rng(3)
    start, pts = np.zeros(2), rng.uniform(0, 30, (25, 2))
    tour = solve_tour(start, pts)
    assert not tour.exact
    assert sorted(tour.order) == list(range(25))
    dist = distance_matrix(start, pts)
    greedy = [0]
    left = set(range(1, 26))
    while left:  # plain nearest neighbour, which 2-opt must not make worse
        nxt = min(left, key=lambda k: dist[greedy[-1], k])
        greedy.append(nxt)
        left.remove(nxt)
    assert tour.length_m <= path_length(dist, [k - 1 for k in greedy[1:]]) + 1e-9


def test_points_on_a_line_are_visited_in_order():
    pts = np.array([[3.0, 0.0], [1.0, 0.0], [2.0, 0.0], [5.0, 0.0]])
    tour = solve_tour(np.zeros(2), pts)
    assert tour.order == (1, 2, 0, 3)
    assert tour.length_m == pytest.approx(5.0)
