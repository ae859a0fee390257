"""The shipped chat-model doubles, and the LLM adapters driven through the client in all three link modes."""

from __future__ import annotations

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.openai import (
    LlmExtractor,
    LlmLinkResolver,
    LlmSummariser,
    ModelOutputError,
    ModelUnavailableError,
)
from palimpsest.adapters.openai.schemas import ExtractionPayload, SummaryPayload
from palimpsest.adapters.openai.testing import ChatRequest, FunctionChatModel, ScriptedChatModel
from palimpsest.application import (
    ExtractionRetryPolicy,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
    TokenUsage,
)

THIN = "The user's preferred pizza style is thin crust."
SOURDOUGH = "The user now prefers sourdough pizza."


# -- the doubles ---------------------------------------------------------------------------


def test_a_function_model_validates_answers_like_the_real_model() -> None:
    answers = iter([
        {"summary": "Pizza talk.", "topics": ["pizza"]},
        "<think>plan</think>```json\n{\"summary\": \"Fenced.\", \"topics\": []}\n```",
        SummaryPayload(summary="From a model instance.", topics=["a"]),
        {"summary": 42, "topics": "not a list"},
        "no JSON here",
    ])
    model = FunctionChatModel(lambda request: next(answers))

    assert model.complete_json("sys", "usr", SummaryPayload, name="summarise")["summary"] == "Pizza talk."
    assert model.complete_json("sys", "usr", SummaryPayload, name="summarise")["summary"] == "Fenced."
    assert model.complete_json("sys", "usr", SummaryPayload, name="summarise")["topics"] == ["a"]
    with pytest.raises(ModelOutputError, match="does not match the expected schema"):
        model.complete_json("sys", "usr", SummaryPayload, name="summarise")
    with pytest.raises(ModelOutputError, match="not a JSON object"):
        model.complete_json("sys", "usr", SummaryPayload, name="summarise")

    assert [r.name for r in model.requests] == ["summarise"] * 5
    assert model.usage.for_operation("summarise").calls == 5
    assert model.usage.total.prompt_tokens == 5 * 2  # "sys\n\nusr": 8 characters, 2 estimated tokens per call
    assert model.usage_is_estimated


def test_a_function_model_sees_the_full_request_and_can_raise() -> None:
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> object:
        seen.append(request)
        return ModelUnavailableError("down for maintenance")

    model = FunctionChatModel(answer)  # type: ignore[arg-type]
    with pytest.raises(ModelUnavailableError, match="maintenance"):
        model.complete_json("system text", "user text", ExtractionPayload, name="extract_memories")
    assert seen[0].schema is ExtractionPayload and "user text" in seen[0].prompt
    assert model.usage.for_operation("extract_memories").completion_tokens == 0


def test_a_scripted_model_replays_per_operation_then_shared_answers_then_reports_an_outage() -> None:
    model = ScriptedChatModel(
        [{"summary": "shared", "topics": []}],
        by_operation={"extract_memories": [{"memories": []}]},
    )
    assert model.remaining == 2
    assert model.complete_json("s", "u", ExtractionPayload, name="extract_memories")["memories"] == []
    assert model.complete_json("s", "u", SummaryPayload, name="summarise")["summary"] == "shared"
    assert model.remaining == 0
    with pytest.raises(ModelUnavailableError, match="no answer left"):
        model.complete_json("s", "u", SummaryPayload, name="summarise")
    model.add({"summary": "late", "topics": []}, operation="summarise")
    assert model.complete_json("s", "u", SummaryPayload, name="summarise")["summary"] == "late"


# -- the LLM adapters through the client -------------------------------------------------------


# A failing model is retried with the default schedule's shape, minus its waits (1 + 2 + 4 + 8 s).
FAST_RETRIES = ExtractionRetryPolicy(base_delay_seconds=0.01, max_delay_seconds=0.05)


def open_client(model: ScriptedChatModel, mode: MemoryLinkExtractionMode, **extra):  # type: ignore[no-untyped-def]
    return open_memory(
        embedder=HashingEmbedder(),
        extractor=LlmExtractor(model),
        link_resolver=LlmLinkResolver(model),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE,
            memory_link_extraction_mode=mode,
            enable_context_summary=False,
        ),
        **{"extraction_retry_policy": FAST_RETRIES, **extra},
    )


def pizza_conversation(memory) -> dict:  # type: ignore[no-untyped-def]
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
    thread.add_messages([{"role": "user", "content": "Actually, I now prefer sourdough pizza."}])
    return {m.content: m for m in memory.list_memories(user_id="u1")}


def links_between(memory, source_id: str):  # type: ignore[no-untyped-def]
    with memory.store.unit_of_work() as uow:
        return [(link.target_id, link.relation_type) for link in uow.links.list(source_id=source_id)]


def test_post_extraction_mode_asks_the_link_resolver_and_supersedes_the_old_preference() -> None:
    model = ScriptedChatModel(by_operation={
        "extract_memories": [{"memories": [{"text": THIN, "record_type": "preference"}]},
                    {"memories": [{"text": SOURDOUGH, "record_type": "preference"}]}],
        "resolve_links": [{"resolutions": [{"source": 1, "links": [{"candidate": 1, "link_type": "supersedes"}]}]}],
    })
    with open_client(model, MemoryLinkExtractionMode.POST_EXTRACTION) as memory:
        by_text = pizza_conversation(memory)
        assert links_between(memory, by_text[SOURDOUGH].id) == [(by_text[THIN].id, "supersedes")]
        usage = memory.token_usage

    assert by_text[SOURDOUGH].is_valid and not by_text[THIN].is_valid
    assert [r.name for r in model.requests] == ["extract_memories", "extract_memories", "resolve_links"]
    assert THIN in model.requests_named("resolve_links")[0].user
    # the extractor and the resolver share one model: its ledger is counted once
    assert usage.total.calls == 3
    assert usage.for_operation("extract_memories").calls == 2 and usage.for_operation("resolve_links").calls == 1
    assert usage.total.total_tokens == model.usage.total.total_tokens > 0


def test_during_extraction_mode_links_from_the_extraction_answer_without_a_resolver_call() -> None:
    model = ScriptedChatModel(by_operation={
        "extract_memories": [
            {"memories": [{"text": THIN, "record_type": "preference"}]},
            {"memories": [{"text": SOURDOUGH, "record_type": "preference",
                           "links": [{"candidate": 1, "link_type": "supersedes"}]}]},
        ],
    })
    with open_client(model, MemoryLinkExtractionMode.DURING_EXTRACTION) as memory:
        by_text = pizza_conversation(memory)
        assert links_between(memory, by_text[SOURDOUGH].id) == [(by_text[THIN].id, "supersedes")]

    assert by_text[SOURDOUGH].is_valid and not by_text[THIN].is_valid
    assert [r.name for r in model.requests] == ["extract_memories", "extract_memories"]
    second_prompt = model.requests[1].user
    assert THIN in second_prompt  # the candidate was shown, numbered, to the extractor


def test_disabled_link_mode_shows_no_candidates_and_keeps_both_memories_current() -> None:
    model = ScriptedChatModel(by_operation={
        "extract_memories": [
            {"memories": [{"text": THIN, "record_type": "preference"}]},
            # a model that invents a link anyway: there is no shown candidate, so it is dropped
            {"memories": [{"text": SOURDOUGH, "record_type": "preference",
                           "links": [{"candidate": 1, "link_type": "supersedes"}]}]},
        ],
    })
    with open_client(model, MemoryLinkExtractionMode.DISABLED) as memory:
        by_text = pizza_conversation(memory)
        assert links_between(memory, by_text[SOURDOUGH].id) == []

    assert by_text[SOURDOUGH].is_valid and by_text[THIN].is_valid
    assert [r.name for r in model.requests] == ["extract_memories", "extract_memories"]


def test_add_memory_asks_the_model_backed_resolver_by_default() -> None:
    """With a model-backed link resolver (the reference: a client with a model), add_memory links
    a new memory on its own; ``autonomous_linking=False`` still opts out."""
    model = ScriptedChatModel(by_operation={
        "resolve_links": [{"resolutions": [{"source": 1, "links": [{"candidate": 1, "link_type": "supersedes"}]}]}],
    })
    with open_memory(embedder=HashingEmbedder(), link_resolver=LlmLinkResolver(model),
                     memory_extraction_config=MemoryExtractionConfig(extract_memories=False)) as memory:
        thin = memory.add_memory(THIN, memory_type="preference", user_id="u1")
        sourdough = memory.add_memory(SOURDOUGH, memory_type="preference", user_id="u1")
        quiet = memory.add_memory("The user orders pizza on Fridays.", user_id="u1", autonomous_linking=False)
        assert links_between(memory, sourdough) == [(thin, "supersedes")]
        assert links_between(memory, quiet) == []
    assert [r.name for r in model.requests] == ["resolve_links"]


def test_a_model_outage_during_inline_extraction_keeps_the_messages() -> None:
    model = ScriptedChatModel()  # no answers: every request is an outage
    with open_client(model, MemoryLinkExtractionMode.POST_EXTRACTION) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
        assert [m.content for m in thread.get_messages()] == ["I like thin crust pizza."]
        assert memory.list_memories(user_id="u1") == []


def test_the_client_merges_distinct_ledgers_and_offline_adapters_report_nothing() -> None:
    extraction_model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": []}]})
    summary_model = ScriptedChatModel(by_operation={"summarise": [{"summary": "Pizza.", "topics": ["pizza"]}]})
    with open_memory(
        embedder=HashingEmbedder(),
        extractor=LlmExtractor(extraction_model),
        summariser=LlmSummariser(summary_model),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode=MemoryExtractionMode.INLINE, context_summary_update_frequency=1,
        ),
    ) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "I like thin crust pizza."}])
        usage = memory.token_usage

    assert usage.for_operation("extract_memories").calls == 1
    assert usage.for_operation("summarise").calls == 1
    assert usage.total.calls == 2
    assert isinstance(usage, TokenUsage)

    with open_memory(embedder=HashingEmbedder()) as offline:
        assert offline.token_usage.total.calls == 0
        assert offline.token_usage.by_operation == {}


# -- each memory inherits the metadata of the messages it came from --------------------------


CARLA = [
    {"role": "user", "content": "My name is Carla.", "metadata": {"source": "chat"}},
    {"role": "user", "content": "I live in Rome.", "metadata": {"source": "email"}},
]


def test_a_model_memory_takes_the_metadata_of_the_messages_it_names_as_sources() -> None:
    """The newest messages are shown numbered, and each memory's ``sources`` pick its messages:
    the fact said in the email is tagged ``email`` (before: ``chat``, the first message's)."""
    model = ScriptedChatModel(by_operation={"extract_memories": [{"memories": [
        {"text": "The user's name is Carla.", "record_type": "fact", "sources": [1]},
        {"text": "The user lives in Rome.", "record_type": "fact", "sources": [2, 7]},  # 7 was not shown
    ]}]})
    with open_client(model, MemoryLinkExtractionMode.DISABLED) as memory:
        ids = memory.create_thread(user_id="u1").add_messages(CARLA)
        tagged = sorted((m.content, m.metadata.get("source"), m.metadata["$agent_memory"]["source_message_ids"])
                        for m in memory.list_memories(user_id="u1"))
    assert tagged == [("The user lives in Rome.", "email", [ids[1]]), ("The user's name is Carla.", "chat", [ids[0]])]
    [request] = model.requests_named("extract_memories")
    assert '<message index="1" role="user"' in request.user and '<message index="2" role="user"' in request.user


def test_a_model_memory_without_sources_over_messages_that_disagree_keeps_what_they_agree_on() -> None:
    model = ScriptedChatModel(by_operation={"extract_memories": [
        {"memories": [{"text": "The user lives in Rome.", "record_type": "fact"}]}
    ]})
    with open_client(model, MemoryLinkExtractionMode.DISABLED,
                     extraction_retry_policy=ExtractionRetryPolicy(max_attempts=1)) as memory:
        ids = memory.create_thread(user_id="u1").add_messages(CARLA)
        memory.wait_for_memory_extraction(timeout=60)
        [stored] = memory.list_memories(user_id="u1")
        assert memory.failed_extractions() == []
    assert stored.metadata["$agent_memory"]["source_message_ids"] == ids
    assert "source" not in stored.metadata  # "chat" and "email": neither is claimed
