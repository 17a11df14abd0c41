"""Observation graph: deterministic text ops, stable names, merging on re-query."""

from __future__ import annotations

import numpy as np

from mapping.grounding import Candidate, GroundingResult, Viewpoint
from mapping.observation_graph import GraphConfig, ObservationGraph, query_to_text, slug


def cand(x: float, y: float, conf: float = 0.8, size: int = 100) -> Candidate:
    return Candidate(
        centroid_m=(x, y, 0.45), size_voxels=size, confidence=conf, extent_m=(0.6, 0.6, 0.9)
    )


def view(x: float, y: float, cx: float, cy: float) -> Viewpoint:
    d = np.hypot(cx - x, cy - y)
    return Viewpoint(xy_m=(x, y), yaw_rad=float(np.arctan2(cy - y, cx - x)), distance_m=float(d))


def result(concept: str, cands, views, tour, robot=(0.0, 0.0)) -> GroundingResult:
    pts = [views[k].xy_m for k in tour]
    legs = np.diff(np.array([robot, *pts]), axis=0) if pts else np.zeros((0, 2))
    return GroundingResult(
        concept=concept,
        robot_xy_m=robot,
        candidates=tuple(cands),
        viewpoints=tuple(views),
        tour=tuple(tour),
        tour_length_m=float(np.linalg.norm(legs, axis=1).sum()),
        kept_voxels=sum(c.size_voxels for c in cands),
        text_features=np.zeros((6, 4), np.float32),
        temperature=0.1,
    )


def first_query() -> GroundingResult:
    return result(
        "barrel",
        [cand(5.0, -2.0, 0.9), cand(2.0, 3.0, 0.7)],
        [view(4.0, -1.5, 5.0, -2.0), view(1.5, 2.0, 2.0, 3.0)],
        [1, 0],
    )


def test_first_query_emits_nodes_edges_and_tour_in_order():
    graph = ObservationGraph()
    ops = graph.apply(first_query())
    assert ops == [
        'add_node(name=barrel_1, type=object, coordinates=[5.0, -2.0], description="possible barrel '
        '(confidence 0.90, 100 voxels, about 0.6 x 0.6 x 0.9 m)")',
        'add_node(name=near_barrel_1, type=region, coordinates=[4.0, -1.5], description="viewpoint '
        '1.1 m from barrel_1, facing it (yaw -0.46 rad)")',
        "add_edge(barrel_1, near_barrel_1)",
        'add_node(name=barrel_2, type=object, coordinates=[2.0, 3.0], description="possible barrel '
        '(confidence 0.70, 100 voxels, about 0.6 x 0.6 x 0.9 m)")',
        'add_node(name=near_barrel_2, type=region, coordinates=[1.5, 2.0], description="viewpoint '
        '1.1 m from barrel_2, facing it (yaw 1.11 rad)")',
        "add_edge(barrel_2, near_barrel_2)",
        "tour(concept=barrel, start=[0.0, 0.0], order=[near_barrel_2, near_barrel_1], length_m=6.8)",
    ]
    assert graph.graph.nodes["barrel_1"]["kind"] == "object"
    assert graph.graph.nodes["near_barrel_2"]["kind"] == "region"
    assert graph.graph.has_edge("barrel_2", "near_barrel_2")
    assert graph.last_names == ("barrel_1", "barrel_2")


def test_ops_are_deterministic_across_graphs():
    a, b = ObservationGraph(), ObservationGraph()
    assert a.apply(first_query()) == b.apply(first_query())
    assert a.describe() == b.describe()


def test_requery_merges_updates_adds_and_prunes_with_stable_names():
    graph = ObservationGraph()
    graph.apply(first_query())
    same = graph.apply(first_query())
    assert same == [same[-1]] and same[-1].startswith("tour(")  # nothing changed but the hint

    moved = result(
        "barrel",
        [cand(5.3, -2.0, 0.9), cand(8.0, 8.0, 0.6)],  # barrel_1 shifted 0.3 m; barrel_2 gone
        [view(4.2, -1.5, 5.3, -2.0), view(7.0, 7.5, 8.0, 8.0)],
        [0, 1],
    )
    ops = graph.apply(moved)
    assert ops[0].startswith("update_node(name=barrel_1, coordinates=[5.3, -2.0]")
    assert ops[1].startswith("update_node(name=near_barrel_1, coordinates=[4.2, -1.5]")
    assert ops[2].startswith("add_node(name=barrel_3, type=object, coordinates=[8.0, 8.0]")
    assert ops[3].startswith("add_node(name=near_barrel_3")
    assert ops[4] == "add_edge(barrel_3, near_barrel_3)"
    assert ops[5:7] == ["remove_node(name=near_barrel_2)", "remove_node(name=barrel_2)"]
    assert ops[7].startswith(
        "tour(concept=barrel, start=[0.0, 0.0], order=[near_barrel_1, near_barrel_3]"
    )
    assert sorted(graph.graph.nodes) == ["barrel_1", "barrel_3", "near_barrel_1", "near_barrel_3"]

    again = graph.apply(first_query())  # the counter never reuses a removed name
    assert any(op.startswith("add_node(name=barrel_4,") for op in again)


def test_concepts_keep_separate_nodes_and_pruning_can_be_disabled():
    graph = ObservationGraph(GraphConfig(prune_missing=False))
    graph.apply(first_query())
    ops = graph.apply(result("red backpack", [cand(5.0, -2.0)], [view(4.0, -2.0, 5.0, -2.0)], [0]))
    assert ops[0].startswith("add_node(name=red_backpack_1,")
    graph.apply(result("barrel", [], [], []))
    assert "barrel_1" in graph.graph and "barrel_2" in graph.graph


def test_candidate_without_viewpoint_has_no_region_and_says_so():
    graph = ObservationGraph()
    ops = graph.apply(result("barrel", [cand(5.0, -2.0)], [None], []))
    assert len(ops) == 1 and "no reachable viewpoint found" in ops[0]
    assert list(graph.graph.nodes) == ["barrel_1"]
    ops = graph.apply(result("barrel", [cand(5.0, -2.0)], [view(4.0, -2.0, 5.0, -2.0)], [0]))
    assert ops[0].startswith("update_node(name=barrel_1")
    assert "add_edge(barrel_1, near_barrel_1)" in ops


def test_remove_and_describe():
    graph = ObservationGraph()
    graph.apply(first_query())
    assert graph.remove("barrel_2") == [
        "remove_node(name=near_barrel_2)",
        "remove_node(name=barrel_2)",
    ]
    lines = graph.describe()
    assert lines[0].startswith("add_node(name=barrel_1, type=object")
    assert lines[-1] == "add_edge(barrel_1, near_barrel_1)"


def test_slug_and_quoting():
    assert slug("Red Backpack!") == "red_backpack" and slug("???") == "object"
    graph = ObservationGraph()
    ops = graph.apply(result('6" pipe', [cand(1.0, 1.0)], [None], []))
    assert ops[0].startswith("add_node(name=6_pipe_1,") and 'possible 6\\" pipe' in ops[0]


def test_query_to_text_runs_grounding_end_to_end(barrel_survey, minilm_encoder):
    from mapping.grounding import Grounder

    grounder = Grounder(barrel_survey.voxel_map, minilm_encoder)
    graph = ObservationGraph()
    text = query_to_text(grounder, graph, "barrel", barrel_survey.start_xy)
    lines = text.splitlines()
    assert lines[0].startswith("add_node(name=barrel_1, type=object")
    assert lines[-1].startswith("tour(concept=barrel, start=[1.2, 1.2], order=[near_barrel_")
    assert sum(line.startswith("add_edge(") for line in lines) == len(
        [n for n, a in graph.graph.nodes(data=True) if a["kind"] == "object"]
    )
    repeat = query_to_text(grounder, graph, "barrel", barrel_survey.start_xy)
    assert repeat.splitlines() == [lines[-1]]  # same map, same answer: only the hint again
    none = query_to_text(grounder, graph, "backpack", barrel_survey.start_xy)
    assert none == "no_candidates(concept=backpack)"
