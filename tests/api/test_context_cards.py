"""Context cards: sections, the external-tail and self-contained patterns, per-type minimums."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from datetime import UTC, datetime

import pytest
from palimpsest.application import AgentMemory, ContextCard, MemoryExtractionConfig, MemoryThread
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import Message, RecordType, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK, snapshot, stored_summaries

TURNS = [
    ("user", "I'm Maya and I am migrating invoice reconciliation to LangGraph."),
    ("assistant", "Great, the invoice reconciliation migration sounds fun."),
    ("user", "The ledger enrichment step fails after reconciliation."),
    ("assistant", "Let us look at the ledger enrichment logs."),
    ("user", "The logs mention a timeout in the currency service."),
    ("assistant", "A currency service timeout explains the ledger failure."),
]


@pytest.fixture
def client(make_client: ClientFactory) -> AgentMemory:
    return make_client(
        summariser=ScriptedSummariser(),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False, context_summary_update_frequency=4),
    )


@pytest.fixture
def thread(client: AgentMemory) -> MemoryThread:
    thread = client.create_thread(thread_id="t", user_id="maya", agent_id="helper")
    thread.add_messages([{"id": f"m{i}", "role": role, "content": text} for i, (role, text) in enumerate(TURNS)])
    for i, kind in enumerate(["fact"] * 4 + ["preference"] * 4 + ["guideline"] * 2 + ["memory"] * 3):
        client.add_memory(
            f"{kind} {i} about invoice reconciliation and ledger enrichment",
            memory_id=f"{kind}-{i}",
            memory_type=kind,
            user_id="maya",
            agent_id="helper",
        )
    return thread


def _sections(card: ContextCard) -> list[str]:
    return [child.tag for child in ET.fromstring(card.content)]


def _relevant_ids(card: ContextCard) -> list[str]:
    return [r.id for r in card.relevant_results]


def test_an_empty_thread_gives_an_empty_card(client: AgentMemory) -> None:
    card = client.create_thread(user_id="maya").get_context_card()
    assert card.content == "" and str(card) == "" and card.formatted_content == ""


def test_a_default_card_has_topics_summary_and_five_relevant_results(thread: MemoryThread) -> None:
    card = thread.get_context_card()
    assert _sections(card) == ["topics", "summary", "relevant_information"]
    assert card.summary.startswith("I'm Maya and I am migrating invoice reconciliation to LangGraph.")
    assert card.topics and len(card.topics) <= 8
    assert [t.text for t in ET.fromstring(card.content).find("topics")] == list(card.topics)  # type: ignore[union-attr]
    assert len(card.relevant_results) == 5
    assert card.recent_messages == ()


def test_the_external_tail_pattern_leaves_the_last_messages_out_of_the_card(
    thread: MemoryThread, client: AgentMemory, store: MemoryStore
) -> None:
    durable = stored_summaries(store, "t")
    card = thread.get_context_card(except_last_messages=3, max_recent_messages=0, min_relevant_results_by_type={"message": 5})
    assert _sections(card) == ["topics", "summary", "relevant_information"]
    assert "ledger enrichment step fails" in card.summary
    for _, text in TURNS[3:]:
        assert text.split(".")[0] not in card.summary
    assert not {"m3", "m4", "m5"} & set(_relevant_ids(card))
    assert "<recent_messages>" not in card.content
    assert stored_summaries(store, "t") == durable, "the prefix summary is transient"
    prompt = [{"role": "user", "content": card.content}] + [
        {"role": m.role, "content": m.content} for m in thread.get_messages(start=-3)
    ]
    assert [p["content"] for p in prompt[1:]] == [text for _, text in TURNS[3:]]


def test_the_self_contained_pattern_carries_the_tail_in_recent_messages(thread: MemoryThread) -> None:
    card = thread.get_context_card(except_last_messages=2, max_recent_messages=2, min_relevant_results_by_type={"message": 4})
    assert _sections(card) == ["topics", "summary", "relevant_information", "recent_messages"]
    assert [m.id for m in card.recent_messages] == ["m4", "m5"]
    recent = ET.fromstring(card.content).find("recent_messages")
    assert recent is not None
    stored = {m.id: m.created_at.isoformat() for m in thread.get_messages()}
    assert [(m.findtext("role"), m.findtext("content"), m.findtext("timestamp")) for m in recent] == [
        ("user", TURNS[4][1], stored["m4"]),
        ("assistant", TURNS[5][1], stored["m5"]),
    ]
    assert not {"m4", "m5"} & set(_relevant_ids(card))
    assert "currency service" not in card.summary


def test_a_recent_message_shows_its_time_as_a_search_result_does(client: AgentMemory) -> None:
    thread = client.create_thread(thread_id="times", user_id="maya")
    thread.add_messages(
        [
            {"id": "no-time", "role": "user", "content": "Pizza tonight?"},
            {"id": "timed", "role": "assistant", "content": "Pizza it is.", "timestamp": "2026-01-04T00:00:00Z"},
        ]
    )
    card = thread.get_context_card(max_recent_messages=2, min_relevant_results_by_type={"message": 2})
    root = ET.fromstring(card.content)
    recent = {m.findtext("content"): m.findtext("timestamp") for m in root.find("recent_messages")}  # type: ignore[union-attr]
    found = {m.findtext("content"): m.findtext("timestamp") for m in root.find("relevant_information")}  # type: ignore[union-attr]
    stored = thread.get_message("no-time").created_at.isoformat()
    assert recent == {"Pizza tonight?": stored, "Pizza it is.": "2026-01-04T00:00:00+00:00"}
    assert found == recent, "one message, one time, in every section of the card"


def test_multi_line_text_keeps_its_own_lines_and_indentation_in_every_section(client: AgentMemory) -> None:
    texts = [f"Steps {n}:\n1. reconcile <invoices>\n   then the ledger\n\n2. done" for n in range(3)]
    thread = client.create_thread(thread_id="lines", user_id="maya", agent_id="helper")
    thread.add_messages([{"role": "user", "content": texts[0]}, {"role": "user", "content": texts[1]}])
    client.add_memory(texts[2], memory_id="steps", user_id="maya", agent_id="helper")
    card = thread.get_context_card(
        except_last_messages=1, max_recent_messages=1, min_relevant_results_by_type={"message": 1, "memory": 1}
    )
    root = ET.fromstring(card.content)
    relevant = root.find("relevant_information")
    recent = root.find("recent_messages")
    assert relevant is not None and recent is not None
    assert sorted((r.tag, r.findtext("content")) for r in relevant) == [("memory", texts[2]), ("message", texts[0])]
    assert [m.findtext("content") for m in recent] == [texts[1]]
    for text in texts:
        escaped = text.replace("<", "&lt;").replace(">", "&gt;")
        assert f"<content>{escaped}</content>" in card.content


def test_a_custom_message_format_is_indented_but_the_text_it_holds_is_not() -> None:
    stored = datetime(2026, 1, 4, tzinfo=UTC)
    message = Message(id="m1", thread_id="t", role="user", content="two\n  lines", seq=1, created_at=stored)
    card = ContextCard("s", recent_messages=(message,), message_format="<m r='{role}'>{{x}}\n  {content}</m>")
    assert card.content.splitlines()[-6:] == [
        "  <recent_messages>",
        "    <m r='user'>{x}",
        "      two",
        "  lines</m>",
        "  </recent_messages>",
        "</context_card>",
    ]


def test_recent_messages_alone_do_not_exclude_anything(thread: MemoryThread) -> None:
    card = thread.get_context_card(max_recent_messages=2)
    assert [m.id for m in card.recent_messages] == ["m4", "m5"]
    assert "currency service timeout" in card.summary


@ARGUMENT_CHECK
@pytest.mark.parametrize(("skip", "recent"), [(2, 1), (2, 3), (1, 5)])
def test_a_tail_must_be_kept_out_of_the_card_or_fully_inside_it(
    thread: MemoryThread, store: MemoryStore, skip: int, recent: int
) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="zero or the same"):
        thread.get_context_card(except_last_messages=skip, max_recent_messages=recent)
    assert snapshot(store) == before


def test_empty_sections_render_on_one_line_as_in_the_reference(thread: MemoryThread) -> None:
    assert ContextCard("Maya migrates invoices.").content == (
        "<context_card>\n"
        "  <topics></topics>\n"
        "  <summary>\n"
        "    Maya migrates invoices.\n"
        "  </summary>\n"
        "  <relevant_information></relevant_information>\n"
        "</context_card>"
    )
    card = thread.get_context_card(except_last_messages=6, max_recent_messages=6)
    assert card.content.splitlines()[:5] == [
        "<context_card>",
        "  <topics></topics>",
        "  <summary></summary>",
        "  <relevant_information></relevant_information>",
        "  <recent_messages>",
    ]


@ARGUMENT_CHECK
def test_except_last_messages_must_not_be_negative(thread: MemoryThread) -> None:
    with pytest.raises(ValidationError, match="non-negative"):
        thread.get_context_card(except_last_messages=-1)


def test_when_the_tail_is_everything_only_the_recent_messages_remain(thread: MemoryThread) -> None:
    card = thread.get_context_card(except_last_messages=6, max_recent_messages=6)
    assert _sections(card) == ["topics", "summary", "relevant_information", "recent_messages"]
    assert card.summary == "" and card.relevant_results == () and len(card.recent_messages) == 6
    assert thread.get_context_card(except_last_messages=9, max_recent_messages=0).content == ""


@ARGUMENT_CHECK
@pytest.mark.parametrize(
    ("minimums", "message"),
    [
        ([("fact", 1)], "mapping"),
        ("fact", "mapping"),
        ({"image": 1}, "unsupported"),
        ({"user_profile": 1}, "unsupported"),
        ({"fact": "1"}, "integers"),
        ({"fact": 1.0}, "integers"),
        ({"fact": True}, "integers"),
        ({"fact": 0}, "positive"),
        ({"fact": -2}, "positive"),
    ],
)
def test_minimums_by_type_are_validated(thread: MemoryThread, store: MemoryStore, minimums: object, message: str) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match=message):
        thread.get_context_card(min_relevant_results_by_type=minimums)  # type: ignore[arg-type]
    assert snapshot(store) == before


@ARGUMENT_CHECK
def test_minimums_may_not_exceed_an_explicit_maximum(thread: MemoryThread, store: MemoryStore) -> None:
    before = snapshot(store)
    with pytest.raises(ValidationError, match="must not exceed max_relevant_results"):
        thread.get_context_card(max_relevant_results=3, min_relevant_results_by_type={"fact": 2, "preference": 2})
    assert snapshot(store) == before


@ARGUMENT_CHECK
@pytest.mark.parametrize(("field", "bad"), [("max_relevant_results", 0), ("max_recent_messages", -1), ("fallback_message_count", "5")])
def test_card_counts_are_validated(thread: MemoryThread, field: str, bad: object) -> None:
    with pytest.raises(ValidationError):
        thread.get_context_card(**{field: bad})  # type: ignore[arg-type]


@ARGUMENT_CHECK
def test_unknown_card_arguments_are_rejected(thread: MemoryThread) -> None:
    with pytest.raises(TypeError):
        thread.get_context_card(max_results=3)  # type: ignore[call-arg]


def test_minimums_come_first_and_their_total_expands_the_default_cap(thread: MemoryThread) -> None:
    card = thread.get_context_card(min_relevant_results_by_type={"fact": 3, "preference": 3, "guideline": 1})
    types = [r.record_type.value for r in card.relevant_results]
    assert len(types) == 7, "max(5, 3 + 3 + 1)"
    assert types == ["fact"] * 3 + ["preference"] * 3 + ["guideline"]


def test_with_an_explicit_cap_the_remaining_slots_are_filled_from_all_memory_types(thread: MemoryThread) -> None:
    card = thread.get_context_card(max_relevant_results=9, min_relevant_results_by_type={"guideline": 2, "message": 1})
    types = [r.record_type.value for r in card.relevant_results]
    assert len(types) == 9
    assert types[:3] == ["guideline", "guideline", "message"]
    assert len(set(_relevant_ids(card))) == 9, "no duplicates across the per-type and fill searches"


def test_minimums_are_best_effort(thread: MemoryThread) -> None:
    card = thread.get_context_card(max_relevant_results=6, min_relevant_results_by_type={"guideline": 5})
    counts = Counter(r.record_type.value for r in card.relevant_results)
    assert counts["guideline"] == 2 and len(card.relevant_results) == 6


def test_message_results_come_only_from_the_current_thread(thread: MemoryThread, client: AgentMemory) -> None:
    other = client.create_thread(thread_id="other", user_id="maya", agent_id="helper")
    other.add_messages([{"role": "user", "content": f"invoice reconciliation ledger enrichment note {i}"} for i in range(8)])
    card = thread.get_context_card(max_relevant_results=20, min_relevant_results_by_type={"message": 10})
    messages = [r for r in card.relevant_results if r.record_type is RecordType.MESSAGE]
    assert messages and all(r.record.thread_id == "t" for r in messages)


def test_memory_results_keep_the_user_and_agent_scope(thread: MemoryThread, client: AgentMemory) -> None:
    client.add_memory("fact for another agent about invoice reconciliation", memory_id="alien", memory_type="fact", user_id="maya", agent_id="other")
    client.add_memory("fact for another user about invoice reconciliation", memory_id="stranger", memory_type="fact", user_id="bob", agent_id="helper")
    card = thread.get_context_card(max_relevant_results=30, min_relevant_results_by_type={"fact": 10})
    assert not {"alien", "stranger"} & set(_relevant_ids(card))


def test_a_card_matches_the_thread_agent_exactly_so_memories_without_an_agent_need_a_thread_without_one(
    thread: MemoryThread, client: AgentMemory
) -> None:
    """As the README says (and as the reference scopes cards and thread searches): a memory saved
    for the user alone is not in an agent's card, and is in the card of the user's agentless thread."""
    client.add_memory("user-level fact about invoice reconciliation", memory_id="user-level", memory_type="fact",
                      user_id="maya")
    card = thread.get_context_card(max_relevant_results=30, min_relevant_results_by_type={"fact": 10})
    assert "user-level" not in _relevant_ids(card)
    agentless = client.create_thread(user_id="maya")
    agentless.add_messages([{"role": "user", "content": "Where is the invoice reconciliation at?"}])
    assert "user-level" in _relevant_ids(agentless.get_context_card())


def test_the_metadata_filter_and_invalid_switch_apply_to_relevant_results(thread: MemoryThread, client: AgentMemory) -> None:
    client.add_memory("tagged invoice reconciliation memory", memory_id="tagged", user_id="maya", agent_id="helper", metadata={"pin": True})
    filtered = thread.get_context_card(metadata_filter={"pin": True})
    assert _relevant_ids(filtered) == ["tagged"]
    client.link_records("fact-0", "fact", "fact-1", "fact", "supersedes")
    with_invalid = thread.get_context_card(max_relevant_results=20, min_relevant_results_by_type={"fact": 4})
    without = thread.get_context_card(
        max_relevant_results=20, min_relevant_results_by_type={"fact": 4}, include_invalid_results=False
    )
    assert "fact-1" in _relevant_ids(with_invalid) and "fact-1" not in _relevant_ids(without)


@pytest.mark.filterwarnings("ignore:token_budget below 1000")
def test_token_budgets_trim_the_relevant_results(thread: MemoryThread) -> None:
    full = thread.get_context_card()
    assert thread.get_context_card(token_budget=5).relevant_results == ()
    assert len(thread.get_context_card(soft_token_budget=1).relevant_results) == 1
    assert len(full.relevant_results) == 5


def test_the_search_concurrency_does_not_change_the_card(thread: MemoryThread, client: AgentMemory) -> None:
    arguments = {"max_relevant_results": 8, "min_relevant_results_by_type": {"preference": 2, "guideline": 1, "message": 2}}
    parallel = thread.get_context_card(**arguments)  # type: ignore[arg-type]
    serial = client.get_thread("t", context_card_type_search_concurrency=1).get_context_card(**arguments)  # type: ignore[arg-type]
    assert parallel.content == serial.content


def test_without_a_summariser_the_card_summary_is_a_transcript(memory: AgentMemory) -> None:
    thread = memory.create_thread(user_id="maya")
    thread.add_messages([{"role": role, "content": text} for role, text in TURNS])
    card = thread.get_context_card(fallback_message_count=2)
    assert card.summary == f"user (-): {TURNS[4][1]}\n- assistant (-): {TURNS[5][1]}"
    tail = thread.get_context_card(fallback_message_count=1, except_last_messages=1)
    assert tail.summary == f"user (-): {TURNS[4][1]}"


def test_the_whole_thread_card_reuses_the_durable_summary(thread: MemoryThread, client: AgentMemory, store: MemoryStore) -> None:
    thread.get_context_card()
    revisions = [s.revision for s in stored_summaries(store, "t")]
    thread.get_context_card()
    assert [s.revision for s in stored_summaries(store, "t")] == revisions
    assert thread.get_summary().content == thread.get_context_card().summary


def test_a_card_on_an_unchanged_thread_embeds_nothing_again(store, clock) -> None:  # type: ignore[no-untyped-def]
    from clients import build_client
    from palimpsest.adapters import HashingEmbedder
    from palimpsest.application import MemoryExtractionConfig, SummaryText
    from palimpsest.application.testing import ScriptedSummariser

    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def embed(self, texts, *, is_query=False):  # type: ignore[no-untyped-def,override]
            self.calls += len(texts)
            return super().embed(texts, is_query=is_query)

    embedder = Counting()
    summariser = ScriptedSummariser(lambda previous, new: SummaryText("The user keeps bees on the roof.", ("bees",)))
    client = build_client(
        store,
        embedder=embedder,
        summariser=summariser,
        clock=clock,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "I keep bees on the roof."}])
    first = thread.get_context_card()
    calls = embedder.calls
    again = thread.get_context_card()
    assert embedder.calls == calls and again.content == first.content
    thread.add_messages([{"role": "user", "content": "And a hive in the garden."}])
    thread.get_context_card()
    assert embedder.calls == calls + 1  # the new message; the summary (the card's query) is the same text
    client.close()
