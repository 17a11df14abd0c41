"""The VLM interface and the OpenAI-compatible vision backend (frame sent as an image)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agents.llm import OpenAIBackend, RecordingBackend, ReplayBackend, ScriptedBackend
from agents.robot import CameraIntrinsics, Frame
from agents.vlm import OpenAIVisionBackend, VLMAnswer, VLMBackend, encode_image
from tests.support.fake_openai_server import FakeOpenAIServer, server_prompt_tokens

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("clean_llm_env")]

W, H = 64, 48


def make_frame(seed: int = 0) -> Frame:
    rgb = np.random.default_rng(seed).integers(0, 256, size=(H, W, 3), dtype=np.uint8)
    return Frame(
        rgb=rgb,
        depth_m=np.full((H, W), 2.0, dtype=np.float32),
        intrinsics=CameraIntrinsics(W, H, 50.0, 50.0, W / 2, H / 2),
        odom_T_camera=np.eye(4),
        stamp_s=1.5,
        camera="hand",
    )


def decode(url: str) -> tuple[str, np.ndarray]:
    head, _, payload = url.partition(",")
    image = Image.open(io.BytesIO(base64.b64decode(payload)))
    return head, np.asarray(image.convert("RGB"))


def image_url_of(body: dict) -> str:
    parts = body["messages"][-1]["content"]
    return next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")


def test_frame_goes_to_the_server_as_a_lossless_image(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = lambda messages, body: "a blue plastic barrel"
    vlm = OpenAIVisionBackend(OpenAIBackend("vision-m", base_url=fake_openai.base_url))
    frame = make_frame()
    answer = vlm.answer(frame, "What is this object?")
    body = fake_openai.chat_requests[-1].body
    head, pixels = decode(image_url_of(body))
    assert head == "data:image/png;base64"
    np.testing.assert_array_equal(pixels, frame.rgb)
    texts = [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
    assert texts == ["What is this object?"]
    assert body["model"] == "vision-m" and body["max_tokens"] == 300
    assert answer == VLMAnswer(
        "a blue plastic barrel",
        server_prompt_tokens(body["messages"]),
        len("a blue plastic barrel".split()) + 1,
    )
    assert vlm.usage.calls == 1
    assert vlm.usage.prompt_tokens == answer.prompt_tokens
    assert vlm.llm.usage.by_purpose["vlm"].calls == 1


def test_target_pixel_is_named_and_marked(fake_openai: FakeOpenAIServer) -> None:
    vlm = OpenAIVisionBackend(OpenAIBackend("v", base_url=fake_openai.base_url))
    frame = make_frame()
    frame.rgb[:] = 0  # black image: the red ring is easy to find
    vlm.answer(frame, "Is it a barrel?", target_px=(20, 30))
    body = fake_openai.chat_requests[-1].body
    text = body["messages"][-1]["content"][0]["text"]
    assert "pixel (u=20, v=30)" in text and "64x48" in text and "red ring" in text
    _, pixels = decode(image_url_of(body))
    red = np.argwhere((pixels[..., 0] > 200) & (pixels[..., 1] < 50))
    assert len(red) > 0
    rows, cols = red[:, 0], red[:, 1]
    assert abs(rows.mean() - 30) < 2 and abs(cols.mean() - 20) < 2  # ring centred on target
    assert pixels[0, 0].tolist() == [0, 0, 0]


def test_jpeg_and_downscaling() -> None:
    rgb = np.zeros((480, 640, 3), dtype=np.uint8)
    head, pixels = decode(encode_image(rgb, image_format="JPEG", max_side_px=160))
    assert head == "data:image/jpeg;base64" and pixels.shape == (120, 160, 3)
    with pytest.raises(ValueError, match="uint8"):
        encode_image(rgb.astype(np.float32))
    with pytest.raises(ValueError, match="PNG or JPEG"):
        encode_image(rgb, image_format="GIF")


def test_vision_calls_record_and_replay_without_the_image_payload(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "vlm.jsonl"
    frame = make_frame(3)
    recorder = RecordingBackend(OpenAIBackend("v", base_url=fake_openai.base_url), cassette)
    recorded = OpenAIVisionBackend(recorder).answer(frame, "What colour?")
    recorder.close()
    payload = image_url_of(fake_openai.chat_requests[-1].body).partition(",")[2]
    assert payload[:200] not in cassette.read_text()
    replayed = OpenAIVisionBackend(ReplayBackend(cassette)).answer(frame, "What colour?")
    assert replayed == recorded


def test_usage_is_counted_for_any_implementation_once_per_call() -> None:
    class Sim(VLMBackend):
        def answer(self, frame, question, target_px=None):
            return VLMAnswer("barrel", 10, 2)

    class Verbose(Sim):
        def answer(self, frame, question, target_px=None):
            inner = super().answer(frame, question, target_px)
            return VLMAnswer(inner.text + " (blue)", inner.prompt_tokens + 5, 3)

    sim, verbose = Sim(), Verbose()
    sim.answer(make_frame(), "q")
    verbose.answer(make_frame(), "q")
    verbose.answer(make_frame(), "q", (1, 2))
    assert (sim.usage.calls, sim.usage.prompt_tokens) == (1, 10)
    assert (verbose.usage.calls, verbose.usage.prompt_tokens, verbose.usage.completion_tokens) == (
        2,
        30,
        6,
    )
    with pytest.raises(TypeError):
        VLMBackend()  # type: ignore[abstract]


def test_vision_backend_delegating_to_another_vlm_counts_both() -> None:
    class Outer(VLMBackend):
        def __init__(self, inner: VLMBackend) -> None:
            self.inner = inner

        def answer(self, frame, question, target_px=None):
            return self.inner.answer(frame, question, target_px)

    inner = OpenAIVisionBackend(ScriptedBackend(["a cart"]))
    outer = Outer(inner)
    assert outer.answer(make_frame(), "what?").text == "a cart"
    assert outer.usage.calls == 1 and inner.usage.calls == 1
