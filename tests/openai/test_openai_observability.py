"""Events of the OpenAI-compatible adapters against the scripted local server: a generation of the
chat model and a call of the embedder each emit a started and a completed event, with the model,
token counts and the answer's id; prompts, answers, texts and vectors are masked when dumped."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from fake_openai_server import CHAT, embedding_answer, error, json_answer
from palimpsest.adapters.openai import ModelUnavailableError, OpenAIChatModel, OpenAIEmbedder
from palimpsest.application import (
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    GenericEventListener,
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    register_event_listeners,
)
from palimpsest.application.observability import REDACTED
from pydantic import BaseModel

SECRET = "Saffron-7731 is the vault code"


class Answer(BaseModel):
    answer: str


def test_a_generation_emits_its_model_prompt_schema_answer_and_tokens(server, client, sleeps) -> None:
    server.chat(json_answer({"answer": SECRET}, prompt_tokens=13, completion_tokens=5))
    events: list[Event] = []
    model = OpenAIChatModel(client, "test-model", sleep=sleeps, temperature=0.0)
    with register_event_listeners([GenericEventListener((LlmGenerationStartedEvent, LlmGenerationCompletedEvent), events.append)]):
        assert model.complete_json("system text", f"user says {SECRET}", Answer, name="probe") == {"answer": SECRET}
    started, completed = events
    assert isinstance(started, LlmGenerationStartedEvent) and isinstance(completed, LlmGenerationCompletedEvent)
    assert (started.event_name, completed.event_name) == ("llm.generation.started", "llm.generation.completed")
    assert (started.component, started.method, started.model, started.api_type) == (
        "llm", "generate", "test-model", "chat_completions"
    )
    assert started.prompt == [
        {"role": "system", "content": "system text"},
        {"role": "user", "content": f"user says {SECRET}"},
    ]
    assert started.response_json_schema is not None and started.response_json_schema["properties"].keys() == {"answer"}
    assert started.llm_generation_config == {"temperature": 0.0, "max_tokens": None}
    assert started.metadata == {"operation": "probe"}
    assert completed.started_event_id == started.event_id and completed.success is True
    assert json.loads(completed.content or "") == {"answer": SECRET}
    assert (completed.completion_id, completed.input_tokens, completed.output_tokens, completed.total_tokens) == (
        "chatcmpl-test", 13, 5, 18
    )
    for event in (started, completed):
        assert "Saffron" not in event.model_dump_json()
    assert started.model_dump()["prompt"] == completed.model_dump()["content"] == REDACTED
    assert SECRET in json.dumps(started.model_dump(mask_sensitive_information=False)["prompt"])


def test_a_failed_generation_completes_unsuccessfully(server, client, sleeps) -> None:
    server.chat(error(503, "down"), error(503, "down"))
    events: list[Event] = []
    model = OpenAIChatModel(client, "test-model", sleep=sleeps, max_retries=1)
    with register_event_listeners([GenericEventListener(LlmGenerationCompletedEvent, events.append)]), pytest.raises(
        ModelUnavailableError
    ):
        model.complete_json("s", "u", Answer, name="probe")
    (completed,) = events
    assert isinstance(completed, LlmGenerationCompletedEvent)
    assert (completed.success, completed.error_type, completed.content) == (False, "ModelUnavailableError", None)
    assert len(server.requests_to(CHAT)) == 2  # one generation, however many attempts


def test_no_generation_event_is_built_without_a_listener(server, client, sleeps) -> None:
    server.chat(json_answer({"answer": "ok"}))
    embedder_events: list[Event] = []
    with register_event_listeners([GenericEventListener(EmbedderStartedEvent, embedder_events.append)]):
        OpenAIChatModel(client, "test-model", sleep=sleeps).complete_json("s", "u", Answer, name="probe")
    assert embedder_events == []


def test_an_embedder_call_emits_the_model_counts_and_dimension(server, client, sleeps) -> None:
    server.embeddings(embedding_answer([[3.0, 4.0], [0.0, 2.0]]))
    events: list[Event] = []
    embedder = OpenAIEmbedder(client, "test-embedder", dimension=2, sleep=sleeps)
    with register_event_listeners([GenericEventListener((EmbedderStartedEvent, EmbedderCompletedEvent), events.append)]):
        vectors = embedder.embed([SECRET, "two"])
    started, completed = events
    assert isinstance(started, EmbedderStartedEvent) and isinstance(completed, EmbedderCompletedEvent)
    assert (started.model, started.input_count, started.is_query, started.concrete_class) == (
        "test-embedder", 2, False, "OpenAIEmbedder"
    )
    assert (completed.vector_count, completed.embedding_dimension) == (2, 2)
    assert completed.embedding_vector == vectors == [[0.6, 0.8], [0.0, 1.0]]
    assert "Saffron" not in started.model_dump_json() and started.model_dump()["input"] == REDACTED
