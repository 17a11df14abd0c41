"""``SpotWorld-v0``: a Spot robot acting on a scenario in a pybullet world.

Description
    A Spot-like robot with a body RGB-D camera and an arm with a gripper camera stands in
    a world built from a scenario file (walls, barrels, tarps, carts, bags ...). It acts
    with behaviour-level actions; base motion is kinematic along collision-free paths of
    an occupancy grid. Occlusion is physical: a sign under a tarp cannot be seen until
    the tarp has been grasped and placed elsewhere.

Action space
    ``Dict``:

    ============  =====================  =========================================
    key           space                  meaning
    ============  =====================  =========================================
    behavior      Discrete(5)            0 goto, 1 inspect, 2 grasp, 3 place, 4 answer
    target        Box(3,) float32, m     goto: x, y; inspect / grasp / place / answer:
                                         a point in the world frame
    yaw           Box(1,) float32, rad   goto: final heading
    has_target    Discrete(2)            answer: whether ``target`` names an entity
    text          Text(512)              inspect: the question; answer: the answer
    ============  =====================  =========================================

    Infeasible behaviours (unreachable goal, target out of reach or occluded) do not
    raise: they cost a step and report ``info["result"]["error"]``.

Observation space
    ``Dict``:

    ===============  =====================  =======================================
    key              space                  meaning
    ===============  =====================  =======================================
    rgb              Box(H, W, 3) uint8     body camera colour image
    depth            Box(H, W) float32, m   metric depth along the optical axis, 0 = none
    segmentation     Box(H, W) int32        pybullet body id per pixel, -1 = none (sim only)
    pose             Box(3,) float32        base x (m), y (m), yaw (rad) in the world frame
    odom_T_camera    Box(4, 4) float32      body camera optical frame in the world frame
    time             Box(1,) float32, s     simulated episode time
    ===============  =====================  =======================================

Reward (CLUE paper, Eq. 1)
    +1 for an answer given in a goal state, -1 for an answer outside the goal set,
    0 for every other step.

Episode end
    Terminated on ``answer``; truncated when the scenario's action budget is spent.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import pybullet as p
from gymnasium import spaces

from agents.robot import BEHAVIORS, Frame
from envs import rendering
from envs.navigation import GridSpec, OccupancyGrid, path_length, poses_along
from envs.rendering import CameraSpec
from envs.robot_model import (
    BODY_CAMERAS,
    ArmLimits,
    CameraMount,
    body_camera_pose,
    build_robot,
    hand_camera_pose,
    place_robot,
)
from envs.sim_vlm import SimVLM, SimVLMConfig
from envs.world import FLOOR_PHRASE, WALL_PHRASE, World
from scenarios.geometry import (
    ROBOT_HEIGHT_M,
    ROBOT_LENGTH_M,
    ROBOT_WIDTH_M,
    Footprint,
    footprints_overlap,
    robot_footprint,
)
from scenarios.judge import Verdict, judge
from scenarios.loader import find_scenario, load_scenario
from scenarios.schema import Scenario

GOTO, INSPECT, GRASP, PLACE, ANSWER = range(5)
DEFAULT_SCENARIO = "hazard_barrels"
TEXT_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "


@dataclass(frozen=True)
class Timing:
    """Simulated durations, seconds (Spot-like walking and arm speeds)."""

    walk_speed_mps: float = 1.0
    turn_speed_radps: float = 1.0
    inspect_s: float = 4.0
    grasp_s: float = 12.0
    place_s: float = 10.0
    failure_s: float = 2.0  # a rejected behaviour still costs this much


class SpotWorldEnv(gym.Env):
    __doc__ = __doc__
    metadata = {"render_modes": ["rgb_array", "top_down"], "render_fps": 4}

    def __init__(
        self,
        scenario: Scenario | str | Path | None = None,
        render_mode: str | None = None,
        camera: CameraSpec = CameraSpec(),
        hand_camera: CameraSpec = CameraSpec(vfov_deg=55.0),
        renderer: str = "auto",
        grid: GridSpec = GridSpec(),
        mount: CameraMount = CameraMount(),
        arm: ArmLimits = ArmLimits(),
        timing: Timing = Timing(),
        vlm: SimVLMConfig = SimVLMConfig(),
        depth_noise_std_m: float = 0.0,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}"
            )
        self.render_mode = render_mode
        self.camera_spec, self.hand_spec = camera, hand_camera
        self.grid_spec, self.mount, self.arm, self.timing = grid, mount, arm, timing
        self.vlm_config = vlm
        self.depth_noise_std_m = depth_noise_std_m
        self.scenario = _as_scenario(scenario if scenario is not None else DEFAULT_SCENARIO)
        self.client, self.renderer = rendering.connect(renderer)
        self.world: World | None = None
        self.robot_body = -1
        self._built_for: str | None = None
        h, w = camera.height_px, camera.width_px
        big = np.float32(1e4)
        self.observation_space = spaces.Dict(
            {
                "rgb": spaces.Box(0, 255, (h, w, 3), np.uint8),
                "depth": spaces.Box(0.0, np.float32(camera.far_m), (h, w), np.float32),
                "segmentation": spaces.Box(-1, 2**24, (h, w), np.int32),
                "pose": spaces.Box(-big, big, (3,), np.float32),
                "odom_T_camera": spaces.Box(-big, big, (4, 4), np.float32),
                "time": spaces.Box(0.0, np.float32(np.inf), (1,), np.float32),
            }
        )
        self.action_space = spaces.Dict(
            {
                "behavior": spaces.Discrete(len(BEHAVIORS)),
                "target": spaces.Box(-big, big, (3,), np.float32),
                "yaw": spaces.Box(-np.float32(math.pi), np.float32(math.pi), (1,), np.float32),
                "has_target": spaces.Discrete(2),
                "text": spaces.Text(max_length=512, min_length=0, charset=TEXT_CHARSET),
            }
        )
        self._reset_state()

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and options.get("scenario") is not None:
            self.scenario = _as_scenario(options["scenario"])
        if (
            self._built_for != self.scenario.id
            or self.world is None
            or self.world.scenario is not self.scenario
        ):
            self._build()
        else:
            for oid, st in self.world.objects.items():
                st.x, st.y, st.z = st.start
                st.yaw = st.spec.pose.yaw_rad
                st.held = False
                self.world.sync(oid)
        self._reset_state()
        start = self.scenario.robot.pose
        self._set_pose(start.x, start.y, start.yaw_rad)
        return self._observation(), self._info()

    def step(self, action: dict):
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        behavior = int(np.asarray(action["behavior"]).item())
        if not 0 <= behavior < len(BEHAVIORS):
            raise ValueError(f"behavior must be in 0..{len(BEHAVIORS) - 1}, got {behavior}")
        target = np.asarray(action.get("target", np.zeros(3)), dtype=np.float64).reshape(3)
        text = str(action.get("text", ""))
        reward, terminated = 0.0, False
        handler = {GOTO: self._goto, INSPECT: self._inspect, GRASP: self._grasp, PLACE: self._place}
        if behavior == ANSWER:
            point = (
                (float(target[0]), float(target[1]))
                if int(np.asarray(action.get("has_target", 0)).item())
                else None
            )
            verdict = self.judge_answer(text, point)
            reward, terminated = verdict.reward, True
            result = {
                "ok": True,
                "behavior": "answer",
                "success": verdict.success,
                "hit": verdict.hit,
                "reasons": verdict.reasons,
                "duration_s": 0.0,
            }
        elif behavior == GOTO:
            result = self._goto(
                float(target[0]),
                float(target[1]),
                float(np.asarray(action.get("yaw", [0.0])).reshape(-1)[0]),
            )
        else:
            result = (
                handler[behavior](target, text)
                if behavior == INSPECT
                else handler[behavior](target)
            )
        self.actions += 1
        self.sim_time_s += float(result["duration_s"])
        self.last_result = result
        truncated = not terminated and self.actions >= self.scenario.task.budget
        return self._observation(), reward, terminated, truncated, self._info()

    def render(self):
        if self.render_mode == "top_down":
            return self.top_down()
        if self.render_mode == "rgb_array":
            return self.capture("body").rgb
        return None

    def close(self):
        if self.client >= 0:
            with rendering.quiet_native_output():
                p.disconnect(self.client)
            self.client = -1

    # ------------------------------------------------------------------ public helpers
    @property
    def pose(self) -> tuple[float, float, float]:
        return self._pose

    @property
    def holding(self) -> str | None:
        return self._held

    def capture(self, camera: str = "body", target: np.ndarray | None = None) -> Frame:
        """Render ``camera`` as a :class:`Frame`: a body camera ("body" = "front", "left",
        "right", "back") or the gripper camera "hand" aimed at ``target``."""
        x, y, yaw = self._pose
        if camera in BODY_CAMERAS:
            spec, pose = self.camera_spec, body_camera_pose(x, y, yaw, self.mount, camera)
        elif camera == "hand":
            if target is None:
                c, s = math.cos(yaw), math.sin(yaw)
                target = np.array([x + 1.2 * c, y + 1.2 * s, 0.3])
            spec, pose = self.hand_spec, hand_camera_pose(x, y, np.asarray(target, float), self.arm)
        else:
            raise ValueError(
                f"unknown camera {camera!r}; use one of {', '.join([*BODY_CAMERAS, 'hand'])}"
            )
        if camera == "hand":
            # The arm is modelled stowed; when it reaches out, its own stowed geometry is
            # not where the gripper camera looks from. Lift the body out of the hand's view.
            place_robot(self.client, self.robot_body, x, y, yaw, z_offset_m=-10.0)
            try:
                rgb, depth, seg = rendering.render(self.client, pose, spec, self.renderer)
            finally:
                place_robot(self.client, self.robot_body, x, y, yaw)
        else:
            rgb, depth, seg = rendering.render(self.client, pose, spec, self.renderer)
        if self.depth_noise_std_m > 0:
            noise = self.np_random.normal(0.0, self.depth_noise_std_m, depth.shape).astype(
                np.float32
            )
            depth = np.where(
                depth > 0, np.clip(depth + noise, spec.near_m, spec.far_m), 0.0
            ).astype(np.float32)
        return Frame(
            rgb=rgb,
            depth_m=depth,
            intrinsics=spec.intrinsics(self.renderer),
            odom_T_camera=pose,
            stamp_s=self.sim_time_s,
            camera=camera,
            segmentation=seg,
            segment_phrases=self._phrases,
        )

    def capture_along_last_walk(self, every_m: float, camera: str = "body") -> list[Frame]:
        """Frames ``camera`` saw on the last successful goto, every ``every_m`` metres of
        its path, facing along it (the base is kinematic, so the world was as it is now).
        The robot is back at its pose afterwards."""
        path = self.last_result.get("path") if self.last_result.get("behavior") == "goto" else None
        if not path:
            return []
        final = self._pose
        frames = []
        try:
            for x, y, heading in poses_along([tuple(q) for q in path], every_m):
                self._set_pose(x, y, heading)
                frames.append(self.capture(camera))
        finally:
            self._set_pose(*final)
        return frames

    def teleport(self, x: float, y: float, yaw: float) -> None:
        """Put the robot at a pose without an action (for pictures and test set-ups)."""
        self._set_pose(x, y, yaw)

    def occupancy(self) -> OccupancyGrid:
        if self._grid is None:
            self._grid = OccupancyGrid.from_footprints(
                self.scenario.environment.extent, self.world.blocking_footprints(), self.grid_spec
            )
        return self._grid

    def judge_answer(self, text: str, point: tuple[float, float] | None) -> Verdict:
        fps = {oid: st.footprint() for oid, st in self.world.objects.items()}
        return judge(self.scenario, fps, text, point)

    def top_down(self, px_per_m: float = 20.0) -> np.ndarray:
        """A top-down map image (uint8 HxWx3): floor, walls, objects in their colours, robot."""
        from envs.top_down import draw_top_down

        return draw_top_down(self, px_per_m)

    # ------------------------------------------------------------------ internals
    def _reset_state(self) -> None:
        self.actions = 0
        self.sim_time_s = 0.0
        self.last_result: dict = {}
        self._held: str | None = None
        self._grid: OccupancyGrid | None = None
        self._pose = (0.0, 0.0, 0.0)

    def _build(self) -> None:
        rendering.reset_simulation(self.client)
        with rendering.quiet_native_output():  # EGL announces itself as shapes are made
            self.world = World.build(self.client, self.scenario)
            self.robot_body = build_robot(self.client)
        self.vlm = SimVLM(self.world, self.vlm_config)
        phrases = {self.world.floor_body: FLOOR_PHRASE}
        phrases.update({b: WALL_PHRASE for b in self.world.wall_bodies})
        phrases.update({st.body: st.spec.appearance for st in self.world.objects.values()})
        self._phrases = phrases
        self._built_for = self.scenario.id

    def _set_pose(self, x: float, y: float, yaw: float) -> None:
        if not -math.pi <= yaw <= math.pi:  # re-wrapping an in-range yaw may move it by an ulp
            yaw = math.atan2(math.sin(yaw), math.cos(yaw))
        self._pose = (x, y, yaw)
        place_robot(self.client, self.robot_body, x, y, yaw)
        if self._held is not None:
            st = self.world.objects[self._held]
            # carried above the body, clear of the body camera's view
            st.x, st.y, st.z = x - 0.1 * math.cos(yaw), y - 0.1 * math.sin(yaw), 0.95
            self.world.sync(self._held)

    def _body_fits(self, x: float, y: float) -> bool:
        """Whether the disc the body and its front camera sweep turning in place at (x, y)
        is clear of walls and floor-standing objects (the grid plans the centre only)."""
        r = (
            max(math.hypot(ROBOT_LENGTH_M / 2, ROBOT_WIDTH_M / 2), self.mount.forward_m)
            + self.camera_spec.near_m
        )
        disc = Footprint((x, y), 0.0, (r, r), radius_m=r)
        return not any(
            footprints_overlap(disc, fp, tol_m=0.0) for fp in self.world.blocking_footprints()
        )

    def _turn_towards(self, tx: float, ty: float) -> float:
        x, y, yaw = self._pose
        want = math.atan2(ty - y, tx - x)
        dyaw = abs(math.atan2(math.sin(want - yaw), math.cos(want - yaw)))
        self._set_pose(x, y, want)
        return dyaw / self.timing.turn_speed_radps

    def _fail(self, behavior: str, error: str, message: str) -> dict:
        return {
            "ok": False,
            "behavior": behavior,
            "error": error,
            "message": message,
            "duration_s": self.timing.failure_s,
        }

    def _goto(self, gx: float, gy: float, gyaw: float) -> dict:
        x, y, yaw = self._pose
        grid = self.occupancy()
        if not grid.is_free(gx, gy):
            return self._fail(
                "goto", "GoalUnreachable", f"the goal ({gx:.2f}, {gy:.2f}) is not free floor"
            )
        if not self._body_fits(gx, gy):
            return self._fail(
                "goto",
                "GoalUnreachable",
                f"the robot's body does not fit at ({gx:.2f}, {gy:.2f}): an obstacle is too close",
            )
        path = grid.plan((x, y), (gx, gy))
        if path is None:
            return self._fail(
                "goto", "GoalUnreachable", f"no collision-free path to ({gx:.2f}, {gy:.2f})"
            )
        length = path_length(path)
        turn = 0.0
        heading = yaw
        for a, b in zip(path, path[1:], strict=False):
            seg_yaw = math.atan2(b[1] - a[1], b[0] - a[0])
            turn += abs(math.atan2(math.sin(seg_yaw - heading), math.cos(seg_yaw - heading)))
            heading = seg_yaw
        turn += abs(math.atan2(math.sin(gyaw - heading), math.cos(gyaw - heading)))
        self._set_pose(gx, gy, gyaw)
        duration = length / self.timing.walk_speed_mps + turn / self.timing.turn_speed_radps
        return {
            "ok": True,
            "behavior": "goto",
            "path": [list(map(float, q)) for q in path],
            "path_length_m": length,
            "duration_s": duration,
        }

    def _inspect(self, target: np.ndarray, question: str) -> dict:
        x, y, _ = self._pose
        dist = math.hypot(target[0] - x, target[1] - y)
        if dist > self.arm.inspect_range_m:
            return self._fail(
                "inspect",
                "OutOfReach",
                f"the target is {dist:.1f} m away; inspection works within {self.arm.inspect_range_m:.1f} m",
            )
        shoulder = (x, y, ROBOT_HEIGHT_M)
        eye = hand_camera_pose(x, y, np.asarray(target, float), self.arm)[:3, 3]
        # nor stop it so close to a surface that the near clip plane cuts through it
        # (2 x near covers the near plane's corners for fields of view below 90 deg)
        blocker = self.world.obstruction(shoulder, eye) or self.world.obstruction(
            eye, eye, margin_m=2 * self.hand_spec.near_m
        )
        if blocker is not None:
            return self._fail(
                "inspect",
                "TargetOccluded",
                f"the arm cannot bring the gripper camera over the target: {blocker} is in the way",
            )
        turn_s = self._turn_towards(target[0], target[1])
        frame = self.capture("hand", target)
        target_px = _project(frame, target)
        answer = self.vlm.answer(frame, question, target_px)
        return {
            "ok": True,
            "behavior": "inspect",
            "answer": answer.text,
            "seen": list(answer.seen),
            "target_px": list(target_px) if target_px else None,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "duration_s": self.timing.inspect_s + turn_s,
            "frame": frame,
        }

    def _grasp(self, target: np.ndarray) -> dict:
        if self._held is not None:
            return self._fail("grasp", "HandOccupied", "the gripper already holds an object")
        oid, d = self.world.nearest_object(target, max_dist_m=0.35)
        if oid is None:
            return self._fail(
                "grasp",
                "NothingThere",
                f"no object within 0.35 m of the target (nearest {d:.2f} m)",
            )
        st = self.world.objects[oid]
        # covered first: what lies under a tarp cannot be felt out (graspable or not)
        if self.world.covered_chain(oid):
            return self._fail(
                "grasp", "TargetOccluded", "the object is covered by something; remove that first"
            )
        if not st.spec.graspable:
            return self._fail(
                "grasp", "NothingThere", "the object there cannot be grasped (fixed or too heavy)"
            )
        x, y, _ = self._pose
        reach = st.footprint().distance_to(x, y)
        if reach > self.arm.grasp_reach_m:
            return self._fail(
                "grasp",
                "OutOfReach",
                f"the object is {reach:.1f} m from the robot; the arm reaches {self.arm.grasp_reach_m:.1f} m",
            )
        turn_s = self._turn_towards(st.x, st.y)
        pos = st.centre()
        st.held = True
        self._held = oid
        self._grid = None
        self._set_pose(*self._pose)
        return {
            "ok": True,
            "behavior": "grasp",
            "position": pos.tolist(),
            "object": oid,
            "duration_s": self.timing.grasp_s + turn_s,
        }

    def _place(self, target: np.ndarray) -> dict:
        if self._held is None:
            return self._fail("place", "HandEmpty", "the gripper holds nothing")
        x, y, yaw = self._pose
        dist = math.hypot(target[0] - x, target[1] - y)
        if dist > self.arm.place_reach_m:
            return self._fail(
                "place",
                "OutOfReach",
                f"the location is {dist:.1f} m away; the arm places within {self.arm.place_reach_m:.1f} m",
            )
        oid = self._held
        reason = self.world.placement_clear(oid, float(target[0]), float(target[1]))
        st = self.world.objects[oid]
        if reason is None:
            fp = st.footprint()
            moved = type(fp)(
                (float(target[0]), float(target[1])), fp.yaw_rad, fp.half_m, fp.radius_m
            )
            if footprints_overlap(moved, robot_footprint(x, y, yaw), tol_m=0.0):
                reason = "the location is under the robot"
        if reason is not None:
            return self._fail("place", "PlacementBlocked", reason)
        turn_s = self._turn_towards(target[0], target[1])
        st.x, st.y, st.z, st.held = float(target[0]), float(target[1]), 0.0, False
        self.world.sync(oid)
        self._held = None
        self._grid = None
        return {
            "ok": True,
            "behavior": "place",
            "position": [st.x, st.y, 0.0],
            "object": oid,
            "duration_s": self.timing.place_s + turn_s,
        }

    def _observation(self) -> dict:
        frame = self.capture("body")
        x, y, yaw = self._pose
        return {
            "rgb": frame.rgb,
            "depth": np.clip(frame.depth_m, 0.0, self.camera_spec.far_m).astype(np.float32),
            "segmentation": frame.segmentation.astype(np.int32),
            "pose": np.array([x, y, yaw], dtype=np.float32),
            "odom_T_camera": frame.odom_T_camera.astype(np.float32),
            "time": np.array([self.sim_time_s], dtype=np.float32),
        }

    def _info(self) -> dict:
        result = {k: v for k, v in self.last_result.items() if k != "frame"}
        return {
            "result": result,
            "actions": self.actions,
            "budget": self.scenario.task.budget,
            "sim_time_s": self.sim_time_s,
            "holding": self._held is not None,
            "scenario": self.scenario.id,
            "renderer": self.renderer,
        }


def _as_scenario(s: Scenario | str | Path) -> Scenario:
    if isinstance(s, Scenario):
        return s
    return load_scenario(find_scenario(s))


def _project(frame: Frame, point: np.ndarray) -> tuple[int, int] | None:
    """Pixel (u, v) of a world point in ``frame``; None if behind the camera."""
    cam = np.linalg.inv(frame.odom_T_camera) @ np.array([*point[:3], 1.0])
    if cam[2] <= 1e-6:
        return None
    k = frame.intrinsics
    u = int(math.floor(k.fx_px * cam[0] / cam[2] + k.cx_px))
    v = int(math.floor(k.fy_px * cam[1] / cam[2] + k.cy_px))
    return u, v
