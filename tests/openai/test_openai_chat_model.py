"""Tests of OpenAIChatModel against the scripted local server: structured output, retries, fallback, parsing, usage."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

import openai
import palimpsest.adapters.openai as adapters
from fake_openai_server import CHAT, Scripted, chat_answer, error, json_answer
from palimpsest.adapters.openai import (
    ModelOutputError,
    ModelRequestsDisabledError,
    ModelUnavailableError,
    OpenAIChatModel,
    TokenUsage,
    client_from_env,
    model_from_env,
    parse_json_object,
)
from palimpsest.adapters.openai._transport import RetryPolicy
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError
from pydantic import BaseModel


class Answer(BaseModel):
    answer: str
    score: int


def model_for(client, sleeps, **kwargs) -> OpenAIChatModel:
    return OpenAIChatModel(client, "test-model", sleep=sleeps, **kwargs)


def test_a_structured_answer_is_validated_and_returned_as_a_dict(server, client, sleeps) -> None:
    server.chat(json_answer({"answer": "yes", "score": 3, "extra": "ignored"}))

    result = model_for(client, sleeps).complete_json("system text", "user text", Answer, name="probe")

    assert result == {"answer": "yes", "score": 3}
    [request] = server.requests_to(CHAT)
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "probe"
    assert request["response_format"]["json_schema"]["schema"]["properties"].keys() == {"answer", "score"}
    assert request["messages"] == [
        {"role": "system", "content": "system text"},
        {"role": "user", "content": "user text"},
    ]
    assert sleeps.delays == []


def test_a_rate_limit_is_retried_after_a_backoff_and_then_succeeds(server, client, sleeps) -> None:
    server.chat(error(429, "slow down"), json_answer({"answer": "ok", "score": 1}))

    result = model_for(client, sleeps, max_retries=3).complete_json("s", "u", Answer, name="probe")

    assert result["answer"] == "ok"
    assert len(server.requests_to(CHAT)) == 2  # the SDK's own retries are off: one request per attempt
    assert len(sleeps.delays) == 1 and 0 < sleeps.delays[0] <= 0.5


def test_a_server_error_is_retried_and_then_succeeds(server, client, sleeps) -> None:
    server.chat(error(500, "boom"), error(502, "bad gateway"), json_answer({"answer": "ok", "score": 2}))

    result = model_for(client, sleeps, max_retries=3).complete_json("s", "u", Answer, name="probe")

    assert result["score"] == 2
    assert len(server.requests_to(CHAT)) == 3
    assert len(sleeps.delays) == 2


def test_a_timeout_is_retried_and_then_succeeds(server, client, sleeps) -> None:
    server.chat(
        Scripted(json_answer({"answer": "late", "score": 0}).body, delay=1.5),
        json_answer({"answer": "on time", "score": 1}),
    )

    result = model_for(client, sleeps, timeout=0.3).complete_json("s", "u", Answer, name="probe")

    assert result["answer"] == "on time"
    assert len(sleeps.delays) == 1


def test_retries_are_bounded_and_end_in_a_model_unavailable_error(server, client, sleeps) -> None:
    server.chat(error(503), error(503), error(503), json_answer({"answer": "never read", "score": 0}))

    with pytest.raises(ModelUnavailableError) as caught:
        model_for(client, sleeps, max_retries=2).complete_json("s", "u", Answer, name="probe")

    assert len(server.requests_to(CHAT)) == 3
    assert isinstance(caught.value, AgentMemoryError) and isinstance(caught.value, RuntimeError)
    assert type(caught.value.__cause__).__module__.startswith("openai")


def test_backoff_doubles_per_attempt_with_jitter_and_stops_at_the_cap() -> None:
    low = RetryPolicy(backoff_base=0.5, backoff_cap=4.0, jitter=lambda: 0.0)
    high = RetryPolicy(backoff_base=0.5, backoff_cap=4.0, jitter=lambda: 1.0)

    assert [high.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert [low.delay(n) for n in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]


def rate_limited(seconds: str, *, status: int = 429, header: str = "Retry-After") -> Scripted:
    answer = error(status, "slow down")
    answer.headers[header] = seconds
    return answer


def test_a_rate_limit_asking_for_a_wait_is_retried_after_exactly_that_wait(server, client, sleeps) -> None:
    server.chat(rate_limited("3"), json_answer({"answer": "ok", "score": 1}))

    result = model_for(client, sleeps, max_retries=3).complete_json("s", "u", Answer, name="probe")

    assert result["answer"] == "ok"
    assert len(server.requests_to(CHAT)) == 2
    assert sleeps.delays == [3.0]


def test_a_busy_server_asking_for_a_wait_in_milliseconds_is_retried_after_that_wait(server, client, sleeps) -> None:
    server.chat(rate_limited("1500", status=503, header="retry-after-ms"), json_answer({"answer": "ok", "score": 1}))

    model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")

    assert sleeps.delays == [1.5]


def test_a_wait_longer_than_the_maximum_fails_at_once_with_a_model_unavailable_error(server, client, sleeps) -> None:
    server.chat(rate_limited("120"), json_answer({"answer": "never read", "score": 0}))

    with pytest.raises(ModelUnavailableError, match="120") as caught:
        model_for(client, sleeps, max_retry_wait=60.0).complete_json("s", "u", Answer, name="probe")

    assert len(server.requests_to(CHAT)) == 1
    assert sleeps.delays == []
    assert caught.value.retry_after == 120.0
    assert type(caught.value.__cause__).__module__.startswith("openai")


def test_retry_after_as_an_http_date_is_a_wait_until_that_time(monkeypatch) -> None:
    import email.utils

    import httpx
    import openai

    now = 1_800_000_000.0
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, request=request, headers={"Retry-After": email.utils.formatdate(now + 7, usegmt=True)})
    failures = [openai.RateLimitError("slow down", response=response, body=None)]
    sleeps: list[float] = []

    def call() -> str:
        if failures:
            raise failures.pop()
        return "answered"

    policy = RetryPolicy(sleep=sleeps.append, clock=lambda: now)
    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)  # no request is sent: call() is local

    assert policy.run("probe", call) == "answered"
    assert sleeps == [7.0]


def test_an_unreadable_or_zero_retry_after_falls_back_to_the_jittered_backoff(server, client, sleeps) -> None:
    server.chat(rate_limited("soon"), rate_limited("0"), json_answer({"answer": "ok", "score": 1}))

    model_for(client, sleeps, backoff_base=0.5).complete_json("s", "u", Answer, name="probe")

    assert len(sleeps.delays) == 2
    assert 0.25 <= sleeps.delays[0] <= 0.5 and 0.5 <= sleeps.delays[1] <= 1.0


def test_an_answer_that_is_not_json_raises_a_model_output_error(server, client, sleeps) -> None:
    server.chat(chat_answer("Sure! Here is what I think: {not json"))

    with pytest.raises(ModelOutputError) as caught:
        model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")

    assert caught.value.raw == "Sure! Here is what I think: {not json"
    assert len(server.requests_to(CHAT)) == 1  # malformed output is not retried


def test_json_that_breaks_the_schema_raises_a_model_output_error(server, client, sleeps) -> None:
    server.chat(json_answer({"answer": "yes", "score": "very high"}))

    with pytest.raises(ModelOutputError, match="does not match the expected schema"):
        model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")


def test_a_server_rejecting_response_format_gets_the_schema_in_the_prompt_instead(server, client, sleeps) -> None:
    server.chat(
        error(400, "Unsupported parameter: 'response_format' is not supported", param="response_format"),
        chat_answer('Here you go:\n```json\n{"answer": "fallback", "score": 4}\n```'),
        chat_answer('{"answer": "again", "score": 5}'),
    )
    model = model_for(client, sleeps)

    first = model.complete_json("s", "the question", Answer, name="probe")
    second = model.complete_json("s", "the next question", Answer, name="probe")

    assert first == {"answer": "fallback", "score": 4} and second["answer"] == "again"
    rejected, fallback, later = server.requests_to(CHAT)
    assert "response_format" in rejected
    assert "response_format" not in fallback and "response_format" not in later  # remembered
    user = fallback["messages"][1]["content"]
    assert user.startswith("the question") and "exactly one JSON object" in user and '"score"' in user
    assert model.structured_output is False
    assert sleeps.delays == []


def test_structured_output_can_be_switched_off_up_front(server, client, sleeps) -> None:
    server.chat(chat_answer('{"answer": "plain", "score": 1}'))

    model_for(client, sleeps, structured_output=False).complete_json("s", "u", Answer, name="probe")

    [request] = server.requests_to(CHAT)
    assert "response_format" not in request and "Schema:" in request["messages"][1]["content"]


def test_think_blocks_and_json_fences_are_stripped_before_parsing(server, client, sleeps) -> None:
    server.chat(chat_answer(
        '<think>The user wants {"answer": "wrong", "score": 0}; let me reason.</think>\n'
        '```json\n{"answer": "right", "score": 9}\n```'
    ))

    result = model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")

    assert result == {"answer": "right", "score": 9}


def test_parse_json_object_tolerates_prose_fences_and_a_dangling_think_end() -> None:
    assert parse_json_object('reasoning only</think>{"a": 1}') == {"a": 1}
    assert parse_json_object('Result: {"a": {"b": 2}} -- done') == {"a": {"b": 2}}
    assert parse_json_object("```\n{\"a\": 3}\n```") == {"a": 3}
    assert parse_json_object("<THINKING>x</THINKING>{\"a\": 4}") == {"a": 4}
    for bad in ("", "   ", "[1, 2]", "no json at all", "<think>{\"a\": 1}</think>"):
        with pytest.raises(ModelOutputError):
            parse_json_object(bad)


def test_token_usage_is_counted_per_operation_and_in_total(server, client, sleeps) -> None:
    server.chat(
        json_answer({"answer": "a", "score": 1}, prompt_tokens=100, completion_tokens=20),
        json_answer({"answer": "b", "score": 2}, prompt_tokens=50, completion_tokens=5),
        chat_answer("not json", prompt_tokens=30, completion_tokens=3),
    )
    model = model_for(client, sleeps)

    model.complete_json("s", "u", Answer, name="extract_memories")
    model.complete_json("s", "u", Answer, name="summarise")
    with pytest.raises(ModelOutputError):
        model.complete_json("s", "u", Answer, name="summarise")  # tokens spent on a bad answer still count

    extract = model.usage.for_operation("extract_memories")
    summarise = model.usage.for_operation("summarise")
    assert (extract.calls, extract.prompt_tokens, extract.completion_tokens, extract.total_tokens) == (1, 100, 20, 120)
    assert (summarise.calls, summarise.prompt_tokens, summarise.total_tokens) == (2, 80, 88)
    assert model.usage.total.total_tokens == 208 and model.usage.total.calls == 3
    assert set(model.usage.by_operation) == {"extract_memories", "summarise"}


def test_the_usage_ledger_loses_no_count_under_concurrent_updates() -> None:
    usage = TokenUsage()

    def work() -> None:
        for _ in range(1000):
            usage.record("op", prompt_tokens=2, completion_tokens=1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert usage.total.calls == 8000 and usage.total.total_tokens == 24000
    assert usage.for_operation("op") == usage.total


def test_an_authentication_failure_is_a_configuration_error_and_is_not_retried(server, client, sleeps) -> None:
    server.chat(error(401, "invalid api key"), json_answer({"answer": "x", "score": 1}))

    with pytest.raises(ConfigurationError):
        model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")

    assert len(server.requests_to(CHAT)) == 1


def test_an_unknown_model_is_a_configuration_error(server, client, sleeps) -> None:
    server.chat(error(404, "The model 'nope' does not exist"))

    with pytest.raises(ConfigurationError):
        model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")


def test_no_request_is_sent_while_model_requests_are_disallowed(server, client, sleeps, monkeypatch) -> None:
    server.chat(json_answer({"answer": "x", "score": 1}))
    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", False)

    with pytest.raises(ModelRequestsDisabledError):
        model_for(client, sleeps).complete_json("s", "u", Answer, name="probe")

    assert server.requests_to(CHAT) == []


def test_model_requests_are_disallowed_by_default_in_this_test_suite() -> None:
    assert adapters.ALLOW_MODEL_REQUESTS is False


def test_client_from_env_reads_the_environment_only_when_called(monkeypatch) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        client_from_env()
    assert model_from_env() is None
    assert model_from_env("fallback-model") == "fallback-model"
    monkeypatch.setenv("OPENAI_API_KEY", "local-placeholder")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "my-model")

    sdk_client = client_from_env()

    try:
        assert isinstance(sdk_client, openai.OpenAI)
        assert model_from_env("fallback-model") == "my-model"
        assert str(sdk_client.base_url).startswith("http://127.0.0.1:9/v1")
        assert sdk_client.api_key == "local-placeholder"
    finally:
        sdk_client.close()


def test_client_from_env_is_the_client_the_readme_hands_to_the_chat_model(server, sleeps, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local-placeholder")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.chat(json_answer({"answer": "from the environment", "score": 1}))

    client = client_from_env()  # the README: `client = openai.OpenAI(...)   # or client_from_env()`
    try:
        chat = OpenAIChatModel(client, "qwen2.5:7b", sleep=sleeps)
        assert chat.complete_json("s", "u", Answer, name="probe") == {"answer": "from the environment", "score": 1}
    finally:
        client.close()
    assert len(server.requests_to(CHAT)) == 1


def test_the_request_body_is_plain_json_the_server_can_read(server, client, sleeps) -> None:
    server.chat(json_answer({"answer": "x", "score": 1}))

    model_for(client, sleeps, temperature=0.0, max_tokens=256).complete_json("s", "u", Answer, name="probe")

    [request] = server.requests_to(CHAT)
    assert request["model"] == "test-model" and request["temperature"] == 0.0 and request["max_tokens"] == 256
    json.dumps(request)
