"""The typed requests of the public API (``application/requests.py``): parsed from keywords and
from JSON, their errors, the three states of an argument (omitted / ``None`` / a value), and a
thread's scope bound to the same value."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from palimpsest.application import AgentMemory, SearchScope, SearchStrategy, TimeToLiveAnchor
from palimpsest.application import images as images_module
from palimpsest.application import messages as messages_module
from palimpsest.application import profiles as profiles_module
from palimpsest.application import records as records_module
from palimpsest.application import thread_service as thread_service_module
from palimpsest.application.requests import (
    AddMemory,
    AppendMessages,
    CardRequest,
    DeleteRecordLink,
    LinkRecords,
    ListRecords,
    ListThreads,
    SearchRequest,
    UpdateMemory,
    UpdateRecordLink,
)
from palimpsest.application.thread import MemoryThread
from palimpsest.domain import ANY, NOTSET
from palimpsest.domain.errors import ArgumentTypeError, InvalidScopeError, InvalidSearchError, ValidationError
from palimpsest.domain.model import RecordStatus, RecordType, Thread

WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
THREAD = Thread(id="t1", user_id="u1", agent_id="a1", created_at=WHEN, updated_at=WHEN)


# -- AddMemory / UpdateMemory ------------------------------------------------------------------


def test_add_memory_from_keywords_is_parsed_once() -> None:
    request = AddMemory(
        "Likes tea.",
        memory_type="fact",
        timestamp="2025-01-02T03:04:05Z",
        ttl_days=3,
        ttl_anchor="timestamp",
        status="invalid",
        memory_id_to_link="m0",
        link_type="supersedes",
        link_timestamp="2025-01-02T03:04:05+00:00",
    )
    assert request.memory_type is RecordType.FACT
    assert request.timestamp == WHEN and request.link_timestamp == WHEN
    assert request.ttl_anchor is TimeToLiveAnchor.TIMESTAMP
    assert request.status is RecordStatus.INVALID


@pytest.mark.parametrize(("given_value", "kept"), [(NOTSET, NOTSET), (None, None), ({"k": 1}, {"k": 1})])
def test_add_memory_keeps_the_three_states_of_an_argument(given_value: Any, kept: Any) -> None:
    request = AddMemory("x", user_id=given_value if given_value != {"k": 1} else "u", metadata=given_value)
    assert request.metadata == kept
    from_json = AddMemory.from_json({"content": "x"} if given_value is NOTSET else {"content": "x", "metadata": given_value})
    assert from_json.metadata == kept


@pytest.mark.parametrize(
    ("keywords", "error", "message"),
    [
        ({"content": ""}, ValidationError, "memory content must be a non-empty string"),
        ({"content": "x", "memory_type": "message"}, ValidationError, "memory_type must be one of"),
        ({"content": "x", "memory_id_to_link": "m"}, ValidationError, "must be provided together"),
        ({"content": "x", "autonomous_linking": 1}, ValidationError, "autonomous_linking must be True or False"),
        ({"content": "x", "timestamp": "yesterday"}, ValidationError, "ISO-8601"),
        ({"content": "x", "ttl_days": -1}, ValidationError, "ttl_days must be non-negative"),
        ({"content": "x", "ttl_anchor": "later"}, ValidationError, "ttl_anchor must be"),
        ({"content": "x", "status": "gone"}, ValidationError, "status must be"),
        ({"content": "x", "user_id": ""}, ValidationError, "user_id"),
    ],
)
def test_add_memory_errors_are_the_public_ones(keywords: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        AddMemory(**keywords)
    with pytest.raises(error, match=message):
        AddMemory.from_json(keywords)


def test_from_json_rejects_unknown_keys_and_the_threads_binding() -> None:
    with pytest.raises(ValidationError, match="AddMemory does not take: colour"):
        AddMemory.from_json({"content": "x", "colour": "blue"})
    with pytest.raises(ValidationError, match="does not take: owner_thread"):
        AddMemory.from_json({"content": "x", "owner_thread": "t1"})
    with pytest.raises(ValidationError, match="JSON object"):
        AddMemory.from_json(["content"])
    with pytest.raises(ValidationError, match="content"):
        AddMemory.from_json({})


def test_a_thread_binds_its_scope_to_an_add_memory_request() -> None:
    bound = AddMemory("x").within_thread(THREAD)
    assert (bound.user_id, bound.agent_id, bound.thread_id, bound.owner_thread) == ("u1", "a1", "t1", "t1")
    assert AddMemory("x", user_id="u1", thread_id="t1").within_thread(THREAD).owner_thread == "t1"
    for other in ({"user_id": "u2"}, {"user_id": None}, {"agent_id": "a2"}, {"thread_id": "t2"}):
        with pytest.raises(InvalidScopeError, match="own scope"):
            AddMemory("x", **other).within_thread(THREAD)


def test_update_memory_needs_a_field_and_parses_status() -> None:
    with pytest.raises(ValidationError, match="at least one of content"):
        UpdateMemory("m1")
    with pytest.raises(ValidationError, match="content cannot be None"):
        UpdateMemory("m1", content=None)  # type: ignore[arg-type]
    assert UpdateMemory("m1", status=RecordStatus.VALID).status is RecordStatus.VALID
    assert UpdateMemory.from_json({"memory_id": "m1", "metadata": None}).metadata is None
    assert UpdateMemory("m1", content="y").within_thread(THREAD).owner_thread == "t1"


# -- links -------------------------------------------------------------------------------------


def test_link_requests_parse_endpoint_types_and_keep_omitted_fields() -> None:
    link = LinkRecords.from_json(
        {
            "source_record_id": "a",
            "source_record_type": "fact",
            "target_record_id": "b",
            "target_record_type": "memory",
            "relation_type": "supports",
            "timestamp": "2025-01-02T03:04:05Z",
        }
    )
    assert (link.source_record_type, link.target_record_type, link.timestamp) == (RecordType.FACT, RecordType.MEMORY, WHEN)
    assert link.metadata is NOTSET and link.relation_id is NOTSET
    with pytest.raises(ValidationError, match="memory-like record"):
        LinkRecords("a", "message", "b", "memory", "supports")
    with pytest.raises(ValidationError, match="opposite_relation_type cannot be None"):
        LinkRecords("a", "memory", "b", "memory", "supports", opposite_relation_type=None)  # type: ignore[arg-type]
    update = UpdateRecordLink("l1", metadata=None)
    assert update.metadata is None and update.timestamp is NOTSET
    with pytest.raises(ValidationError, match="at least one relation field"):
        UpdateRecordLink("l1")
    with pytest.raises(ValidationError, match="relation_id alone"):
        DeleteRecordLink(source_record_id="a", relation_id="l1")
    with pytest.raises(ValidationError, match="relation_id alone"):
        DeleteRecordLink(source_record_id="a")
    assert DeleteRecordLink.from_json({"relation_id": "l1"}).within_thread(THREAD).owner_thread == "t1"


# -- listings ----------------------------------------------------------------------------------


def test_listing_requests_keep_omitted_apart_from_none() -> None:
    omitted = ListRecords()
    assert (omitted.user_id, omitted.limit) == (NOTSET, None)
    unscoped = ListRecords.from_json({"user_id": None, "limit": 3})
    assert (unscoped.user_id, unscoped.limit) == (None, 3)
    assert ListThreads.from_json({"user_id": "u1"}).agent_id is NOTSET
    with pytest.raises(ValidationError, match="does not take: colour"):
        ListRecords.from_json({"colour": 1})


# -- search and cards --------------------------------------------------------------------------


def test_a_search_request_resolves_its_scope_once() -> None:
    request = SearchRequest("tea", user_id="u1", search_strategy="keyword", record_types=["fact", "memory"])
    assert request.search_strategy is SearchStrategy.KEYWORD
    assert request.record_types == frozenset({RecordType.FACT, RecordType.MEMORY})
    assert (request.scoped.user_id, request.scoped.agent_id, request.scoped.thread_id) == ("u1", ANY, ANY)
    with pytest.raises(InvalidScopeError, match="scoped to a user"):
        SearchRequest("tea")
    with pytest.raises(InvalidSearchError, match="search_strategy must be"):
        SearchRequest("tea", user_id="u1", search_strategy="semantic")
    with pytest.raises(InvalidSearchError, match="max_results must be at least 1"):
        SearchRequest("tea", user_id="u1", max_results=0)
    with pytest.raises(ValidationError, match="not a string"):
        SearchRequest("tea", user_id="u1", record_types="fact")
    with pytest.raises(ArgumentTypeError):
        SearchRequest("tea", user_id="u1", record_types=[1])  # type: ignore[list-item]


def test_a_search_request_from_json_takes_a_scope_object() -> None:
    request = SearchRequest.from_json({"query": "tea", "scope": {"user_id": "u1", "exact_thread_match": True}})
    assert request.scope == SearchScope(user_id="u1", exact_thread_match=True)
    assert request.scoped.thread_id is None  # exact thread match without a thread: unthreaded only
    with pytest.raises(ValidationError, match="SearchScope does not take: colour"):
        SearchRequest.from_json({"query": "tea", "scope": {"colour": 1}})
    with pytest.raises(ValidationError, match="does not take: scope_filter"):
        SearchRequest.from_json({"query": "tea", "user_id": "u1", "scope_filter": None})


def test_a_thread_search_uses_the_threads_defaults_and_never_leaves_its_user() -> None:
    request = SearchRequest.for_thread(THREAD, "tea")
    assert (request.scoped.user_id, request.scoped.agent_id, request.scoped.thread_id) == ("u1", "a1", ANY)
    narrowed = SearchRequest.for_thread(THREAD, "tea", exact_thread_match=True)
    assert narrowed.scoped.thread_id == "t1"
    assert SearchRequest.for_thread(THREAD, "tea", scope=SearchScope(agent_id="a2")).scoped.user_id == "u1"
    for keywords in ({"user_id": "u2"}, {"exact_user_match": False}, {"scope": SearchScope(user_id="u2")}):
        with pytest.raises(InvalidScopeError, match="own user's records only"):
            SearchRequest.for_thread(THREAD, "tea", **keywords)


def test_a_card_request_resolves_every_default() -> None:
    card = CardRequest()
    assert (card.fallback, card.max_relevant, card.recent, card.except_last, card.minimums, card.include_invalid) == (
        5,
        5,
        0,
        0,
        {},
        True,
    )
    assert CardRequest(min_relevant_results_by_type={"fact": 7}).max_relevant == 7
    assert CardRequest.from_json({"token_budget": None}).token_budget is None
    with pytest.raises(ValidationError, match="total must not exceed"):
        CardRequest(max_relevant_results=2, min_relevant_results_by_type={"fact": 3})
    with pytest.raises(ValidationError, match="does not take: except_last"):
        CardRequest.from_json({"except_last": 1})


# -- messages ----------------------------------------------------------------------------------


def test_append_messages_parses_each_message_with_its_shared_options() -> None:
    request = AppendMessages.from_json(
        {
            "messages": [
                {"role": "user", "content": "hi", "timestamp": "2025-01-02T03:04:05Z", "name": "Ann"},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            ],
            "metadata": {"channel": "chat"},
            "ttl_days": [1, None],
        }
    )
    first, second = request.inputs
    assert (first.role, first.content, first.timestamp, first.id) == ("user", "hi", WHEN, None)
    assert first.metadata == {"channel": "chat", "speaker": "Ann"}
    assert (second.content, second.ttl_days, second.ttl_anchor) == ("hello", None, NOTSET)
    with pytest.raises(ValidationError, match="all set or all omitted"):
        AppendMessages([{"role": "user", "content": "a", "id": "m1"}, {"role": "user", "content": "b"}])
    with pytest.raises(ValidationError, match="length must match"):
        AppendMessages([{"role": "user", "content": "a"}], ttl_days=[1, 2])
    with pytest.raises(ValidationError, match="list of messages"):
        AppendMessages.from_json({"messages": "hi"})


# -- round trip of what a server would send ---------------------------------------------------

_ids = st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=12)
_metadata = st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(-5, 5), max_size=3))


@given(
    content=st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and "\x00" not in s),
    memory_type=st.sampled_from(["memory", "fact", "guideline", "preference"]),
    user_id=st.one_of(st.none(), _ids),
    metadata=_metadata,
    status=st.sampled_from(["valid", "invalid"]),
    ttl_days=st.one_of(st.none(), st.integers(1, 400)),
)
def test_the_same_request_comes_from_keywords_and_from_json(
    content: str, memory_type: str, user_id: str | None, metadata: Any, status: str, ttl_days: int | None
) -> None:
    keywords = {
        "content": content,
        "memory_type": memory_type,
        "user_id": user_id,
        "metadata": metadata,
        "status": status,
        "ttl_days": ttl_days,
    }
    assert AddMemory.from_json(keywords) == AddMemory(**keywords)  # type: ignore[arg-type]


# -- the boundary's shape ----------------------------------------------------------------------


def _untyped_parameters(module: object) -> list[str]:
    """The parameters of ``module``'s functions and methods annotated with ``Any`` or ``object``
    (anywhere in the annotation: ``Sequence[Any]`` counts)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())  # type: ignore[arg-type]
    return [
        f"{node.name}({arg.arg})"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if arg.annotation is not None
        and {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)} & {"Any", "object"}
    ]


def test_no_parameter_of_the_record_commands_is_typed_any() -> None:
    """The record commands take typed requests, not the facades' keywords as ``Any``."""
    tree = ast.parse(Path(inspect.getfile(records_module)).read_text())
    assert not _untyped_parameters(records_module)
    assert "Any" not in {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("module", [images_module, profiles_module, messages_module, thread_service_module])
def test_no_parameter_of_the_image_profile_message_and_thread_services_is_untyped(module: object) -> None:
    """These services take typed requests (and typed values), not keywords as ``Any`` or
    ``object``: no function or method of theirs, private helpers included, has such a parameter."""
    assert not _untyped_parameters(module)


# The reference's parameter names (Appendix A) of the methods both facades share, in order.
REFERENCE_PARAMETERS = {
    "add_memory": [
        "content", "memory_type", "user_id", "agent_id", "thread_id", "memory_id", "metadata", "timestamp",
        "ttl_days", "ttl_anchor", "status", "autonomous_linking", "memory_id_to_link", "link_type", "link_id",
        "link_timestamp", "link_metadata",
    ],
    "update_memory": ["memory_id", "content", "metadata", "timestamp", "ttl_days", "ttl_anchor", "status"],
    "delete_memory": ["memory_id"],
    "link_records": [
        "source_record_id", "source_record_type", "target_record_id", "target_record_type", "relation_type",
        "opposite_relation_type", "relation_id", "timestamp", "metadata",
    ],
    "update_record_link": ["relation_id", "relation_type", "opposite_relation_type", "timestamp", "metadata"],
    "delete_record_link": [
        "source_record_id", "source_record_type", "target_record_id", "target_record_type", "relation_type",
        "relation_id",
    ],
    "search": [
        "query", "user_id", "agent_id", "thread_id", "exact_user_match", "exact_agent_match", "exact_thread_match",
        "max_results", "token_budget", "soft_token_budget", "record_types", "metadata_filter", "num_hops",
        "max_linked_results", "include_invalid_results", "scope",
    ],
    "add_image": [
        "image", "description", "mime_type", "image_id", "user_id", "agent_id", "thread_id", "metadata",
        "timestamp", "ttl_days", "ttl_anchor",
    ],
    "update_image": [
        "image_id", "image", "description", "mime_type", "metadata", "timestamp", "ttl_days", "ttl_anchor",
    ],
    "delete_image": ["image_id"],
}
# this project's additions, after the reference's
EXTENSIONS = {"search": ["search_strategy"], "add_image": ["image_input_limit_config"]}


def _shape(method: Any) -> list[tuple[str, Any, Any]]:
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(method).parameters.values()
        if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


@pytest.mark.parametrize("name", sorted(REFERENCE_PARAMETERS))
def test_both_facades_declare_the_shared_methods_once_with_the_references_names(name: str) -> None:
    client, thread = getattr(AgentMemory, name), getattr(MemoryThread, name)
    # Each facade wraps it for its own events (D39); underneath, one function on the shared base.
    assert inspect.unwrap(client) is inspect.unwrap(thread), "declared once, on the shared base"
    assert [p[0] for p in _shape(client)] == REFERENCE_PARAMETERS[name] + EXTENSIONS.get(name, [])
    assert all(p[2] is NOTSET for p in _shape(client) if p[2] is not inspect.Parameter.empty)
    assert inspect.getdoc(client)
    for cls in (AgentMemory, MemoryThread):
        twin = getattr(cls, f"{name}_async")
        assert inspect.iscoroutinefunction(twin) and _shape(twin) == _shape(client)


# The reference gives the facades different ``list_images`` (a thread's has no scope keywords):
# each declares its own signature, over one helper on the shared base.
LIST_IMAGES_PARAMETERS = {
    AgentMemory: ["image_id", "user_id", "agent_id", "thread_id", "metadata_filter", "include_bytes", "limit"],
    MemoryThread: ["image_id", "metadata_filter", "include_bytes", "limit"],
}


@pytest.mark.parametrize("cls", [AgentMemory, MemoryThread], ids=lambda c: c.__name__)
def test_each_facade_lists_images_with_the_references_signature_over_the_shared_helper(cls: type) -> None:
    method = cls.list_images
    assert [p[0] for p in _shape(method)] == LIST_IMAGES_PARAMETERS[cls]
    assert all(p[2] is NOTSET for p in _shape(method))
    assert "_list_images" in inspect.unwrap(method).__code__.co_names
    assert "_list_images" not in cls.__dict__, "the helper is the shared base's"
    twin = cls.list_images_async
    assert inspect.iscoroutinefunction(twin) and _shape(twin) == _shape(method)
