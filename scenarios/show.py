"""Pictures of a scenario: an annotated top-down map and what the robot's cameras see."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scenarios.schema import Scenario


def show_scenario(scenario: Scenario, out_dir: str | Path, renderer: str = "auto") -> list[Path]:
    """Write ``topdown.png`` (labelled) and ``camera_views.png`` (body camera at the start
    pose turned to four headings, plus the hand camera on each object); returns paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from envs import SpotWorldEnv

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = SpotWorldEnv(scenario, renderer=renderer)
    try:
        env.reset(seed=0)
        img = env.top_down()
        x0, y0, x1, y1 = scenario.environment.extent
        fig, ax = plt.subplots(figsize=(8, 8 * (y1 - y0) / (x1 - x0) + 0.6))
        ax.imshow(img, extent=(x0, x1, y0, y1))
        for st in env.world.objects.values():
            ax.annotate(
                st.spec.id,
                (st.x, st.y),
                fontsize=7,
                ha="center",
                va="center",
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.7, "lw": 0},
            )
        for room in scenario.environment.rooms:
            rx0, ry0, rx1, ry1 = room.bounds
            ax.text(rx0 + 0.2, ry1 - 0.3, room.name, fontsize=8, color="dimgray", style="italic")
        for region in scenario.environment.regions:
            ax.plot(region.x, region.y, "x", color="purple")
            ax.annotate(
                region.name,
                (region.x, region.y),
                fontsize=7,
                color="purple",
                xytext=(3, 3),
                textcoords="offset points",
            )
        rx, ry, _ = env.pose
        ax.annotate("start", (rx, ry), fontsize=8, xytext=(6, -10), textcoords="offset points")
        ax.set_title(f"{scenario.id}: {scenario.task.text}", fontsize=9, wrap=True)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        top = out / "topdown.png"
        fig.savefig(top, dpi=110, bbox_inches="tight")
        plt.close(fig)

        views, titles = [], []
        sx, sy, syaw = env.pose
        for k in range(4):
            env.teleport(sx, sy, syaw + k * math.pi / 2)
            views.append(env.capture("body").rgb)
            titles.append(f"body camera, heading {math.degrees(syaw) + 90 * k:.0f} deg")
        env.teleport(sx, sy, syaw)
        for st in env.world.objects.values():
            if st.z > 0.05:  # things resting on others show in their support's view
                continue
            d = np.array([st.x - sx, st.y - sy])
            stand = np.array([st.x, st.y]) - d / (np.linalg.norm(d) + 1e-9) * 1.2
            env.teleport(float(stand[0]), float(stand[1]), 0.0)
            views.append(env.capture("hand", np.array([st.x, st.y, st.top_z])).rgb)
            titles.append(f"hand camera on {st.spec.id}")
        env.teleport(sx, sy, syaw)
        cols = 4
        rows = math.ceil(len(views) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows))
        for ax, v, t in zip(np.ravel(axes), views, titles, strict=False):
            ax.imshow(v)
            ax.set_title(t, fontsize=7)
        for ax in np.ravel(axes):
            ax.axis("off")
        cams = out / "camera_views.png"
        fig.savefig(cams, dpi=100, bbox_inches="tight")
        plt.close(fig)
        return [top, cams]
    finally:
        env.close()


def show_query(
    scenario: Scenario, out_dir: str | Path, concept: str, renderer: str = "auto"
) -> Path:
    """Survey the scenario with the robot's cameras, ground ``concept`` in the map built
    from those frames, and draw the relevancy map with candidates, viewpoints and the
    tour (``query_<concept>.png``). Uses a fresh world: nothing here counts as an episode."""
    from envs import SimRobot, SpotWorldEnv
    from mapping.encoders import SimFeatureEncoder
    from mapping.grounding import Grounder
    from mapping.observation_graph import ObservationGraph, slug
    from mapping.plot import plot_relevancy
    from mapping.survey import survey, survey_waypoints
    from mapping.voxel_map import VoxelMap

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = SpotWorldEnv(scenario, renderer=renderer)
    try:
        env.reset(seed=0)
        robot = SimRobot(env)
        start = robot.get_pose()
        grid = env.occupancy()
        vmap, encoder = VoxelMap(), SimFeatureEncoder()
        survey(robot, vmap, encoder, survey_waypoints(grid, start.xy()))
        env.teleport(start.x_m, start.y_m, start.yaw_rad)
        result = Grounder(vmap, encoder).query(concept, start.xy(), grid=grid)
        graph = ObservationGraph()
        graph.apply(result)
        path = out / f"query_{slug(concept)}.png"
        plot_relevancy(
            vmap,
            result,
            path,
            grid=grid,
            names=graph.last_names,
            title=f"{scenario.id}: query '{concept}'",
        )
        vmap.close()
        return path
    finally:
        env.close()
