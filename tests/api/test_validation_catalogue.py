"""Every validation rule of the reference catalogue that applies to what is built.

Each case calls the public API with one bad argument on a seeded store and checks that
(1) the typed error is raised — a subclass of ``AgentMemoryError`` and of the builtin the
rule implies (``ValueError``, ``KeyError``; ``TypeError`` for unknown keyword arguments,
which Python's own convention answers with a plain ``TypeError``) — and (2) nothing was
written: the store's snapshot is unchanged.

The seeded store is shared by every case of one adapter (module scope): a rejected call
must leave it untouched, and the snapshot comparison of each case proves that it did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import (
    AgentMemory,
    MemoryExtractionConfig,
    MemoryRetentionConfig,
    MemoryThread,
    SearchResultFormatConfig,
    SearchScope,
    TimeToLiveAnchor,
)
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import (
    AgentMemoryError,
    ArgumentTypeError,
    ConfigurationError,
    ConflictError,
    CrossScopeLinkError,
    DuplicateIdError,
    InvalidMetadataError,
    InvalidMetadataFilterError,
    InvalidRecordTypeError,
    InvalidScopeError,
    InvalidSearchError,
    LinkExistsError,
    MessageNotFoundError,
    RecordNotFoundError,
    SelfLinkError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.ports import MemoryStore

from .helpers import NO_EXTRACTION, START, snapshot


@dataclass
class Env:
    client: AgentMemory
    thread: MemoryThread
    store: MemoryStore
    clock: ManualClock


@pytest.fixture(scope="module", params=["memory", "embedded"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    path: Path = tmp_path_factory.mktemp("catalogue") / "m.db"
    store: MemoryStore = InMemoryStore() if request.param == "memory" else EmbeddedStore(path)
    clock = ManualClock(START)
    client = build_client(
        store=store,
        embedder=HashingEmbedder(),
        summariser=ScriptedSummariser(),
        clock=clock,
        memory_extraction_config=NO_EXTRACTION,
    )
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a", metadata={"k": "v"})
    thread.add_messages(
        [{"id": "m1", "role": "user", "content": "I like pizza."}, {"id": "m2", "role": "assistant", "content": "Noted."}]
    )
    client.add_memory("Lives in Paris.", memory_id="old", memory_type="fact", user_id="u", agent_id="a")
    client.add_memory("Lives in Rome.", memory_id="new", memory_type="fact", user_id="u", agent_id="a")
    client.link_records("new", "fact", "old", "fact", "supersedes", relation_id="L")
    thread.add_memory("Thread guideline.", memory_id="tg", memory_type="guideline")
    client.add_memory("Lives in Oslo.", memory_id="theirs", memory_type="fact", user_id="w")
    try:
        yield Env(client, thread, store, clock)
    finally:
        store.close()


Call = Callable[[Env], Any]


@dataclass(frozen=True)
class Case:
    rule: str
    call: Call
    error: type[BaseException]
    builtin: type[BaseException] = ValueError

    @property
    def typed(self) -> bool:
        return issubclass(self.error, AgentMemoryError)


def _card(**kwargs: Any) -> Call:
    return lambda e: e.thread.get_context_card(**kwargs)


def _search(query: Any = "pizza", **kwargs: Any) -> Call:
    return lambda e: e.client.search(query, **kwargs)


def _thread_search(query: Any = "pizza", **kwargs: Any) -> Call:
    return lambda e: e.thread.search(query, **kwargs)


def _append(*messages: Any, **kwargs: Any) -> Call:
    return lambda e: e.thread.add_messages(list(messages), **kwargs)


def _add_memory(content: Any = "new memory", **kwargs: Any) -> Call:
    return lambda e: e.client.add_memory(content, **kwargs)


def _link(*args: Any, **kwargs: Any) -> Call:
    return lambda e: e.client.link_records(*args, **kwargs)


OK = {"role": "user", "content": "fine"}

CASES = [
    # -- context card ------------------------------------------------------------------------
    Case("except_last_messages >= 0", _card(except_last_messages=-1), ValidationError),
    Case("max_recent_messages is 0 or except_last_messages", _card(except_last_messages=2, max_recent_messages=1), ValidationError),
    Case("min_relevant_results_by_type is a mapping", _card(min_relevant_results_by_type=["fact"]), ValidationError),
    Case("min_relevant_results_by_type keys are supported", _card(min_relevant_results_by_type={"image": 1}), ValidationError),
    Case("min_relevant_results_by_type counts are ints", _card(min_relevant_results_by_type={"fact": "1"}), ValidationError),
    Case("min_relevant_results_by_type counts are positive", _card(min_relevant_results_by_type={"fact": 0}), ValidationError),
    Case(
        "min_relevant_results_by_type total <= explicit max_relevant_results",
        _card(max_relevant_results=1, min_relevant_results_by_type={"fact": 1, "memory": 1}),
        ValidationError,
    ),
    Case("get_context_card rejects unknown kwargs", _card(max_results=1), TypeError, TypeError),
    Case("get_summary rejects unknown kwargs", lambda e: e.thread.get_summary(style="x"), TypeError, TypeError),
    # -- search ------------------------------------------------------------------------------
    Case("query is non-empty", _search("   ", user_id="u"), InvalidSearchError),
    Case("thread query is non-empty", _thread_search(""), InvalidSearchError),
    Case("max_results >= 1", _search(user_id="u", max_results=0), InvalidSearchError),
    Case("max_results <= 1000", _search(user_id="u", max_results=1001), InvalidSearchError),
    Case("record_types entries are strings", _search(user_id="u", record_types=[1]), ArgumentTypeError),
    Case("record_types names are known", _search(user_id="u", record_types=["document"]), InvalidRecordTypeError),
    Case("metadata_filter is a dict or None", _search(user_id="u", metadata_filter="k=v"), ValidationError),
    Case("scope excludes explicit ids", _search(user_id="u", scope=SearchScope(user_id="u")), ValidationError),
    Case("thread scope excludes explicit ids", _thread_search(agent_id="a", scope=SearchScope(user_id="u")), ValidationError),
    Case("client search needs an explicit user", _search(), ValidationError),
    Case("client search needs exact user matching", _search(user_id="u", exact_user_match=False), ValidationError),
    Case("a thread search keeps exact user matching", _thread_search(exact_user_match=False), InvalidScopeError),
    Case("a thread search keeps to its user", _thread_search(user_id="w"), InvalidScopeError),
    Case("a thread search keeps to its user, not the unscoped records", _thread_search(user_id=None), InvalidScopeError),
    Case("a thread search scope keeps to its user", _thread_search(scope=SearchScope(user_id="w")), InvalidScopeError),
    Case("a thread search scope keeps exact user matching", _thread_search(scope=SearchScope(exact_user_match=False)), InvalidScopeError),
    Case("num_hops <= 5", _search(user_id="u", num_hops=6), InvalidSearchError),
    Case("num_hops >= 0", _search(user_id="u", num_hops=-1), InvalidSearchError),
    Case("max_linked_results >= 0", _search(user_id="u", max_linked_results=-1), InvalidSearchError),
    Case("include_invalid_results is a bool", _search(user_id="u", include_invalid_results="yes"), ValidationError),
    Case("token_budget is an int or None", _search(user_id="u", token_budget=1.5), ValidationError),
    # -- metadata filter language ------------------------------------------------------------
    Case("array operator lists are non-empty", _search(user_id="u", metadata_filter={"t": {"$array_contains_any": []}}), InvalidMetadataFilterError),
    Case("exact-match values are JSON-compatible", _search(user_id="u", metadata_filter={"t": {1, 2}}), InvalidMetadataFilterError),
    Case("operator dicts contain only operators", _search(user_id="u", metadata_filter={"t": {"$not": 1, "x": 2}}), InvalidMetadataFilterError),
    Case("field operators are supported ones", _search(user_id="u", metadata_filter={"t": {"$regex": "a"}}), InvalidMetadataFilterError),
    Case("operator values are JSON scalars", _search(user_id="u", metadata_filter={"t": {"$array_contains": {"a": 1}}}), InvalidMetadataFilterError),
    Case("list metadata filters are validated too", lambda e: e.client.list_memories(metadata_filter={"t": {"$regex": "a"}}), InvalidMetadataFilterError),
    # -- add_messages ------------------------------------------------------------------------
    Case("each message includes content", _append(OK, {"role": "user"}), ValidationError),
    Case("message ids are all set or all omitted", _append({"id": "m9", **OK}, OK), ValidationError),
    Case("message ids are unique in a batch", _append({"id": "m8", **OK}, {"id": "m8", **OK}), ValidationError),
    Case("message ids are unique in the store (whole batch refused)", _append({"id": "m9", **OK}, {"id": "m1", **OK}), DuplicateIdError),
    Case("content part lists are non-empty", _append(OK, {"role": "user", "content": []}), ValidationError),
    Case("content is a string or a part list", _append(OK, {"role": "user", "content": 7}), ValidationError),
    Case("text parts carry string text", _append(OK, {"role": "user", "content": [{"type": "text", "text": 5}]}), ValidationError),
    Case("message role is a string", _append(OK, {"role": 5, "content": "x"}), ValidationError),
    Case("message metadata is JSON", _append(OK, {"role": "user", "content": "x", "metadata": {"k": object()}}), InvalidMetadataError),
    Case("message timestamps are ISO-8601", _append(OK, {"role": "user", "content": "x", "timestamp": "yesterday"}), ValidationError),
    Case("per-message metadata lists match the batch", _append(OK, OK, metadata=[{}]), ValidationError),
    Case("per-message ttl lists match the batch", _append(OK, OK, ttl_days=[1, 2, 3]), ValidationError),
    Case("add_messages rejects unknown kwargs", _append(OK, role="user"), TypeError, TypeError),
    Case("messages is a list", lambda e: e.thread.add_messages(OK), ValidationError),  # type: ignore[arg-type]
    # -- add_memory / update_memory ----------------------------------------------------------
    Case("memory_type is memory-like", _add_memory(memory_type="message"), ValidationError),
    Case("memory_id_to_link needs link_type", _add_memory(memory_id_to_link="old"), ValidationError),
    Case("link_type needs memory_id_to_link", _add_memory(link_type="supports"), ValidationError),
    Case("the link target is a memory-like record", _add_memory(memory_id_to_link="m1", link_type="supports"), RecordNotFoundError, KeyError),
    Case("a thread links only to its own records", lambda e: e.thread.add_memory("x", memory_id_to_link="old", link_type="supports"), RecordNotFoundError, KeyError),
    Case("a memory explicitly without a user links into no user's records", _add_memory(user_id=None, memory_id_to_link="old", link_type="supersedes"), CrossScopeLinkError),
    Case("a memory links only inside its user", _add_memory(user_id="w", memory_id_to_link="old", link_type="supersedes"), CrossScopeLinkError),
    Case("memory content is non-empty", _add_memory("  "), ValidationError),
    Case("memory ids are unique", _add_memory(memory_id="old"), DuplicateIdError),
    Case("memory metadata is JSON", _add_memory(metadata={"k": float("nan")}), InvalidMetadataError),
    Case("scope ids are valid", _add_memory(user_id=""), InvalidScopeError),
    Case("add_memory has no timestamps parameter", _add_memory(timestamps=["2026-01-01"]), TypeError, TypeError),
    Case("update_memory needs a field", lambda e: e.client.update_memory("new"), ValidationError),
    Case("update_memory content is not None", lambda e: e.client.update_memory("new", None), ValidationError),
    Case("update_memory rejects unknown kwargs", lambda e: e.client.update_memory("new", "x", colour="blue"), TypeError, TypeError),
    Case("update_memory needs a visible record", lambda e: e.client.update_memory("missing", "x"), RecordNotFoundError, KeyError),
    # -- messages ----------------------------------------------------------------------------
    Case("update_message content is not None", lambda e: e.thread.update_message("m1", None), ValidationError),
    Case("update_message rejects unknown kwargs", lambda e: e.thread.update_message("m1", "x", role="system"), TypeError, TypeError),
    Case("update_message needs a message of this thread", lambda e: e.thread.update_message("nope", "x"), MessageNotFoundError, KeyError),
    Case("get_messages bounds are integers", lambda e: e.thread.get_messages(start="0"), ValidationError),
    # -- threads -----------------------------------------------------------------------------
    Case("get_thread needs a known thread", lambda e: e.client.get_thread("nope"), ThreadNotFoundError, KeyError),
    Case("thread ids are unique", lambda e: e.client.create_thread(thread_id="t"), ConflictError),
    Case("create_thread rejects unknown kwargs", lambda e: e.client.create_thread(thread_id="t9", colour="blue"), TypeError, TypeError),
    Case("update_thread cannot change the user", lambda e: e.client.update_thread("t", user_id="v"), TypeError, TypeError),
    Case(
        "extraction needs an extractor",
        lambda e: build_client(store=e.store, embedder=HashingEmbedder(), clock=e.clock).create_thread(thread_id="t9"),
        ConfigurationError,
    ),
    Case(
        "type search concurrency is positive",
        lambda e: e.client.create_thread(thread_id="t9", context_card_type_search_concurrency=0),
        ValidationError,
    ),
    # -- relations ---------------------------------------------------------------------------
    Case("no self links", _link("old", "fact", "old", "fact", "supports"), SelfLinkError),
    Case("relation endpoints exist", _link("new", "fact", "gone", "fact", "supports"), RecordNotFoundError, KeyError),
    Case("relation ids are unique", _link("tg", "guideline", "old", "fact", "supports", relation_id="L"), DuplicateIdError),
    Case("one link per (source, target, type)", _link("new", "fact", "old", "fact", "supersedes"), LinkExistsError),
    Case("endpoint types match the records", _link("new", "memory", "old", "fact", "supports"), ValidationError),
    Case("links stay inside one user", _link("theirs", "fact", "old", "fact", "supersedes"), CrossScopeLinkError),
    Case("links stay inside one user, either way", _link("new", "fact", "theirs", "fact", "supports"), CrossScopeLinkError),
    Case("endpoints are memory-like", _link("m1", "message", "old", "fact", "supports"), ValidationError),
    Case("opposite relation types are not None", _link("tg", "guideline", "old", "fact", "x", opposite_relation_type=None), ValidationError),
    Case("relation types are non-empty", _link("tg", "guideline", "old", "fact", " "), ValidationError),
    Case("link timestamps are ISO-8601", _link("tg", "guideline", "old", "fact", "x", timestamp="soon"), ValidationError),
    Case("update_record_link needs a field", lambda e: e.client.update_record_link("L"), ValidationError),
    Case("update_record_link opposite is not None", lambda e: e.client.update_record_link("L", opposite_relation_type=None), ValidationError),
    Case(
        "delete_record_link takes the relation id alone or the full tuple",
        lambda e: e.client.delete_record_link(source_record_id="new", target_record_id="old", relation_type="supersedes"),
        ValidationError,
    ),
    Case(
        "delete_record_link does not mix the relation id and the tuple",
        lambda e: e.client.delete_record_link(relation_id="L", relation_type="supersedes"),
        ValidationError,
    ),
    # -- retention ---------------------------------------------------------------------------
    Case("ttl_days is non-negative", _add_memory(ttl_days=-1), ValidationError),
    Case("ttl_anchor is a TimeToLiveAnchor", _add_memory(ttl_days=1, ttl_anchor="whenever"), ValidationError),
    Case("the TIMESTAMP anchor needs a timestamp", _add_memory(ttl_days=1, ttl_anchor=TimeToLiveAnchor.TIMESTAMP), ValidationError),
    Case("message TTLs are validated", _append(OK, ttl_days=-2), ValidationError),
    Case("default_ttl_days <= max_ttl_days", lambda e: MemoryRetentionConfig(default_ttl_days=3, max_ttl_days=1), ConfigurationError),
    # -- configuration objects ---------------------------------------------------------------
    Case("extraction mode is known", lambda e: MemoryExtractionConfig(extraction_mode="LATER"), ConfigurationError),
    Case("link extraction mode is known", lambda e: MemoryExtractionConfig(memory_link_extraction_mode="X"), ConfigurationError),
    Case("queue-full behaviour is known", lambda e: MemoryExtractionConfig(background_extraction_queue_full_behavior="X"), ConfigurationError),
    Case("the 'memory' image context is unsupported", lambda e: MemoryExtractionConfig(memory_extraction_image_context="memory"), ConfigurationError),
    Case("inherited metadata keys are unique", lambda e: MemoryExtractionConfig(memory_extraction_inherit_message_metadata=["a", "a"]), ConfigurationError),
    Case("inherited metadata keys are non-empty", lambda e: MemoryExtractionConfig(memory_extraction_inherit_message_metadata=[""]), ConfigurationError),
    Case("format options are booleans", lambda e: SearchResultFormatConfig(show_status=1), ValidationError),
    Case(
        "format_config is a SearchResultFormatConfig",
        lambda e: e.client.search("pizza", user_id="u")[0].format_content("compact"),
        ValidationError,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_a_rejected_call_raises_its_typed_error_and_writes_nothing(env: Env, case: Case) -> None:
    before = snapshot(env.store)
    with pytest.raises(case.error) as caught:
        case.call(env)
    assert isinstance(caught.value, case.builtin)
    if case.typed:
        assert isinstance(caught.value, AgentMemoryError)
    assert snapshot(env.store) == before


def test_the_catalogue_rules_are_unique() -> None:
    assert len({c.rule for c in CASES}) == len(CASES)
