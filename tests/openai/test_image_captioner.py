"""Captions from an OpenAI-compatible vision chat model: the request carries the image as an
``image_url`` content part (a base64 ``data:`` URL) after our caption prompt, and the answer
becomes the image's description; a client wired with it captions ``add_image`` and image parts."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import openai
import pytest
from images_samples import jpeg, png
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.adapters.openai import OpenAIChatModel, OpenAIImageCaptioner
from palimpsest.adapters.openai.prompts import CAPTION_PROMPT, UNTRUSTED_CONTENT_RULE
from palimpsest.adapters.openai.testing import LoopbackExtractionServer
from palimpsest.application import AgentMemory, MemoryExtractionConfig


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackExtractionServer]:
    import palimpsest.adapters.openai as adapters

    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)
    with LoopbackExtractionServer() as server:
        yield server


def captioner_for(server: LoopbackExtractionServer) -> OpenAIImageCaptioner:
    client = openai.OpenAI(base_url=server.base_url, api_key="test-key")
    return OpenAIImageCaptioner(OpenAIChatModel(client, "vision-model", max_retries=0))


def test_the_caption_request_carries_the_image_and_the_answer_is_the_description(
    loopback: LoopbackExtractionServer,
) -> None:
    captioner = captioner_for(loopback)
    assert captioner.describe(png(), "image/png") == f"a image/png image of {len(png())} bytes"
    (url,) = loopback.images
    assert url == "data:image/png;base64," + base64.b64encode(png()).decode("ascii")
    assert captioner.model.usage.for_operation("image_caption").calls == 1


def test_the_caption_prompt_is_our_own_and_carries_the_untrusted_content_rule() -> None:
    from palimpsest.adapters.openai.prompts import CAPTION_SYSTEM_PROMPT

    assert UNTRUSTED_CONTENT_RULE in CAPTION_SYSTEM_PROMPT
    assert "search" in CAPTION_PROMPT


def test_a_client_with_the_captioner_describes_images_and_image_parts(loopback: LoopbackExtractionServer) -> None:
    memory = AgentMemory(
        store=InMemoryStore(),
        embedder=HashingEmbedder(),
        image_captioner=captioner_for(loopback),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    image_id = memory.add_image(jpeg(), user_id="u")
    assert memory.list_images(user_id="u")[0].content == f"a image/jpeg image of {len(jpeg())} bytes"
    thread = memory.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": [{"type": "image", "bytes": png()}]}])
    assert {i.content for i in memory.list_images(user_id="u") if i.id != image_id} == {
        f"a image/png image of {len(png())} bytes"
    }
    assert len(loopback.images) == 2


def test_without_model_requests_the_captioner_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.adapters.openai import ModelRequestsDisabledError

    with LoopbackExtractionServer() as server:
        with pytest.raises(ModelRequestsDisabledError):
            captioner_for(server).describe(png(), "image/png")
        assert server.images == []
