"""Hypothesis strategies for every public method of ``AgentMemory`` and ``MemoryThread``.

``METHOD_PARAMETERS`` names, for each public method, the strategy of each of its parameters
(by parameter name, from ``PARAMETER_VALUES``, unless the method overrides it). The tests
enumerate the public methods by introspection and fail when one has no entry here, or when a
parameter has no strategy, so a new method or argument cannot be forgotten.

Each value strategy mixes plausible values (ids that exist in the seeded store, known record
types and relation labels, well-formed metadata) with hostile ones: wrong types, empty and huge
strings, NUL bytes, lone surrogates, control characters, unknown enum values, negative and
huge numbers, NaN and infinities, malformed metadata and metadata filters, naive and
out-of-range datetimes.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

from hypothesis import strategies as st
from images_samples import jpeg, png, webp
from palimpsest.application import (
    AgentMemory,
    ChatMessage,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    SearchScope,
    TimeToLiveAnchor,
    TopKMemorySearchConfig,
)
from palimpsest.application.config import DEPRECATED_EXTRACTION_KEYWORDS
from palimpsest.application.principal import Principal
from palimpsest.domain import NOTSET

START: Final = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# -- the seeded store (see ``seed``) ---------------------------------------------------------

THREAD_IDS: Final = ("t1", "t2")
USER_IDS: Final = ("u1", "u2")
AGENT_IDS: Final = ("a1", "a2")
MEMORY_IDS: Final = ("m1", "m2", "m3", "m4")
MESSAGE_IDS: Final = ("msg1", "msg2", "msg3", "msg4")
LINK_IDS: Final = ("l1", "l2")


def seed(memory: AgentMemory) -> None:
    """Two users' threads, messages, memories of every type, links and a summary."""
    t1 = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1", metadata={"topic": "food"})
    t2 = memory.create_thread(thread_id="t2", user_id="u2", agent_id="a2")
    t1.add_messages(
        [
            {"id": "msg1", "role": "user", "content": "I love sourdough pizza.", "metadata": {"tags": ["a"]}},
            {"id": "msg2", "role": "assistant", "content": "Noted: sourdough pizza."},
            {"id": "msg3", "role": "user", "content": "I live in Lyon."},
        ]
    )
    t2.add_messages([{"id": "msg4", "role": "user", "content": "Tea, never coffee."}])
    memory.add_memory("Likes thin crust pizza.", memory_id="m1", memory_type="preference", user_id="u1", agent_id="a1",
                      thread_id="t1", metadata={"tags": ["food", "pizza"], "level": 1})
    memory.add_memory("Likes sourdough pizza.", memory_id="m2", memory_type="preference", user_id="u1", agent_id="a1",
                      thread_id="t1", memory_id_to_link="m1", link_type="supersedes", link_id="l1")
    memory.add_memory("Lives in Lyon.", memory_id="m3", memory_type="fact", user_id="u1", agent_id="a1")
    memory.add_memory("Drinks tea.", memory_id="m4", memory_type="guideline", user_id="u2", agent_id="a2")
    memory.link_records("m3", "fact", "m2", "preference", "supports", relation_id="l2")
    memory.add_image(png(seed=1), "a pizza oven", image_id="i1", thread_id="t1", metadata={"tags": ["food"]})
    t1.get_summary()  # stores a summary revision when the client has a summariser


# -- hostile building blocks -----------------------------------------------------------------

HUGE: Final = "x" * 200_000
SPECIAL_STRINGS: Final = (
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\ud800",
    "a\udfffb",
    "\ud83d",  # half of a surrogate pair
    "\x1b[31m",
    "\ufeff",
    "\u202e",
    "x" * 129,
    HUGE,
    "<memory>x</memory>",
    "</context_card>",
    "'; DROP TABLE memory; --",
    "%s%n",
    "$not",
    "\\",
    "null",
)


class _Weird:
    """An object of no JSON type, with a hostile ``str``."""

    def __str__(self) -> str:
        return "</content><system>"


class _BadMapping(Mapping[str, Any]):
    """A mapping that is not a dict."""

    def __getitem__(self, key: str) -> Any:
        return {"k": "v"}[key]

    def __iter__(self) -> Any:
        return iter(["k"])

    def __len__(self) -> int:
        return 1


def _recursive_dict() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        value = {"k": value}
    return value


weird_strings = st.one_of(
    st.sampled_from(SPECIAL_STRINGS),
    st.text(max_size=12),
    st.lists(st.sampled_from(["a", " ", "\x00", "\ud800", "\udc00", "<", "&", "\x07", "é", "\U0001f600"]), max_size=8).map(
        "".join
    ),
)

wrong_types = st.sampled_from(
    [None, 0, -1, 2**63, -(2**70), 1.5, float("nan"), float("inf"), True, False, b"bytes", bytearray(b"x"),
     [], ["x"], (), {}, set(), frozenset({"x"}), _Weird(), print]
)

integers = st.one_of(
    st.sampled_from([0, 1, 2, -1, -2, 2**31, 2**63 - 1, 2**63, 2**64, 2**70, -(2**63), -(2**70), 10**100]),
    st.integers(min_value=-50, max_value=50),
)
numbers = st.one_of(integers, st.sampled_from([0.5, -0.5, 1e-300, 1e300, -1e300, float("nan"), float("inf"), -float("inf")]))


def anything(*plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A parameter's strategy: mostly its plausible values (so that a call gets past the checks of
    its other arguments), else hostile ones of any kind."""
    hostile = st.one_of(weird_strings, wrong_types, integers)
    if not plausible:
        return hostile
    likely = st.one_of(*plausible)
    return st.one_of(likely, likely, hostile)


def ids(*known: str) -> st.SearchStrategy[Any]:
    return anything(st.sampled_from(known), st.sampled_from(["nope", "t1", "m1", "l1", "msg1", "u1"]))


# -- metadata and filters --------------------------------------------------------------------

good_metadata = st.sampled_from([None, {}, {"k": "v"}, {"tags": ["a", "b"], "n": 1, "f": 0.5, "b": True, "z": None},
                                 {"nested": {"deep": [1, {"x": "y"}]}}, {"$agent_memory": {"scope": "x"}}])
bad_metadata = st.sampled_from(
    [
        {1: "x"},
        {"k": _Weird()},
        {"k": float("nan")},
        {"k": float("inf")},
        {"k": {"x", "y"}},
        {"k": b"bytes"},
        {"k": 2**100},
        {"k": datetime(2026, 1, 1)},
        {"\ud800": "surrogate key"},
        {"k": "surrogate \udfff value"},
        {"k": "nul \x00 value"},
        {"k": HUGE},
        ["not", "a", "dict"],
        "a string",
        _BadMapping(),
        types.MappingProxyType({"k": "v"}),
    ]
)
metadata = st.one_of(
    good_metadata,
    bad_metadata,
    st.builds(_deep, st.sampled_from([30, 33, 40, 500])),
    st.builds(_recursive_dict),
    wrong_types,
    st.dictionaries(weird_strings, st.one_of(weird_strings, integers, st.none()), max_size=3),
)

good_filters = st.sampled_from(
    [None, {}, {"level": 1}, {"tags": {"$array_contains": "food"}}, {"tags": {"$array_contains_any": ["a", "pizza"]}},
     {"tags": {"$not": {"$array_contains": "a"}}}, {"nested": {"deep": [1, {"x": "y"}]}}, {"topic": "food"}]
)
bad_filters = st.sampled_from(
    [
        {"k": {"$bad": 1}},
        {"k": {"$array_contains_any": []}},
        {"k": {"$array_contains_any": "x"}},
        {"k": {"$array_contains": []}},
        {"k": {"$array_contains": [_Weird()]}},
        {"k": {"$array_contains": {"a": 1}}},
        {"k": {"$not": 1, "x": 2}},
        {"k": {"$not": {"$not": {"$nope": 1}}}},
        {1: 2},
        {"k": _Weird()},
        {"k": float("nan")},
        {"k": "\ud800"},
        {"\x00": "nul"},
        {"k": 2**100},
        {"$array_contains": "top-level operator"},
        ["list"],
        "string",
        _BadMapping(),
    ]
)


def _deep_filter(levels: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(levels):
        value = {"$not": value}
    return {"k": value}


metadata_filters = st.one_of(
    good_filters, bad_filters, st.builds(_deep_filter, st.sampled_from([5, 33, 40, 2000])), st.builds(_recursive_dict),
    wrong_types,
)

# -- times, TTLs, enums ------------------------------------------------------------------------

timestamps = anything(
    st.sampled_from(
        [
            None,
            "2026-01-01T00:00:00Z",
            "2026-01-01",
            "2026-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59",
            "0001-01-01T00:00:00",
            "9999-12-31T23:59:59-12:00",
            "not a date",
            "2026-13-45",
            START,
            datetime(2026, 1, 1),  # naive
            datetime.max,
            datetime.min,
            datetime.max.replace(tzinfo=timezone(timedelta(hours=-23))),
            datetime.min.replace(tzinfo=timezone(timedelta(hours=23))),
        ]
    )
)
ttl_days = anything(numbers, st.sampled_from([None, 0, 1, 0.5, 365, 1e9, 1e15, 10**12]))
ttl_anchors = anything(st.sampled_from([TimeToLiveAnchor.CREATED_AT, TimeToLiveAnchor.TIMESTAMP, "created_at", "timestamp", "TIMESTAMP"]))
memory_types = anything(st.sampled_from(["memory", "fact", "guideline", "preference", "message", "MEMORY", "facts"]))
record_type_names = st.sampled_from(["memory", "fact", "guideline", "preference", "message", "thread", "Fact", ""])
record_type_lists = anything(
    st.lists(record_type_names, max_size=4), st.lists(anything(), max_size=3), st.just(iter(["fact"])),
    st.sampled_from([None, "fact", ("fact", "memory"), frozenset({"fact"})]),
)
relation_types = anything(
    st.sampled_from(["supersedes", "refines", "duplicates", "supports", "contradicts", "is_superseded_by", "custom-label"])
)
booleans = anything(st.booleans())
extraction_configs = anything(
    st.sampled_from(
        [
            MemoryExtractionConfig(extract_memories=False),
            MemoryExtractionConfig(extract_memories=True),
            MemoryExtractionConfig(),
        ]
    )
)
scopes = anything(
    st.builds(
        SearchScope,
        user_id=st.one_of(st.just(NOTSET), st.none(), st.sampled_from(USER_IDS), weird_strings, wrong_types),
        agent_id=st.one_of(st.just(NOTSET), st.none(), st.sampled_from(AGENT_IDS), weird_strings),
        thread_id=st.one_of(st.just(NOTSET), st.none(), st.sampled_from(THREAD_IDS), wrong_types),
        exact_user_match=st.one_of(st.just(NOTSET), booleans),
        exact_agent_match=st.one_of(st.just(NOTSET), booleans),
        exact_thread_match=st.one_of(st.just(NOTSET), booleans),
    )
)
queries = anything(st.sampled_from(["pizza", "sourdough pizza Lyon", "tea", "*", '"', "NEAR(a b)", "a OR b", "-x"]))
contents = anything(st.sampled_from(["A plain memory.", "Likes sourdough pizza."]))
message_contents = anything(
    st.sampled_from(["hello", "Likes tea."]),
    st.lists(
        st.one_of(
            st.fixed_dictionaries({"type": st.just("text"), "text": anything()}),
            st.fixed_dictionaries({"type": st.sampled_from(["image_url", "text", 5]), "text": st.just("x")}),
            anything(),
        ),
        max_size=3,
    ),
)

_message_fields = {
    "role": anything(st.sampled_from(["user", "assistant", "system", "tool", "r" * 31])),
    "content": message_contents,
    "timestamp": timestamps,
    "metadata": metadata,
    "id": ids(*MESSAGE_IDS, "new-message-1", "new-message-2"),
}
message_dicts = st.fixed_dictionaries({}, optional=_message_fields)
chat_messages = st.builds(
    ChatMessage,
    role=_message_fields["role"],
    content=_message_fields["content"],
    timestamp=_message_fields["timestamp"],
    metadata=_message_fields["metadata"],
    id=st.one_of(st.none(), _message_fields["id"]),
)
message_lists = anything(
    st.lists(st.one_of(message_dicts, chat_messages, anything()), max_size=4),
    st.lists(message_dicts, min_size=1, max_size=3),
    st.just(({"role": "user", "content": "a tuple of one"},)),
    st.just({"role": "user", "content": "a dict, not a list"}),
)


def _per_message(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(values, st.lists(values, max_size=4))


progress_callbacks = anything(st.just(lambda done, total: None))
timeouts = anything(st.sampled_from([None, 0, 0.001, 1.0, -1.0, float("nan"), float("inf"), -float("inf")]))

# -- images ----------------------------------------------------------------------------------

_PNG = png()
image_bytes = anything(
    st.sampled_from([_PNG, jpeg(), webp(), png(animated=True), _PNG[:20], b"", b"GIF89a" + bytes(20), bytearray(_PNG)]),
    st.binary(max_size=64),
)
mime_types = anything(st.sampled_from(["image/png", "image/jpeg", "image/webp", "image/gif", "", None]))
descriptions = anything(st.sampled_from(["a red bicycle", "", "   ", None, "\ud800"]))
image_limits = anything(
    st.sampled_from([None, ImageInputLimitConfig(), ImageInputLimitConfig(max_raw_image_bytes=16)])
)
image_id_lists = anything(st.lists(st.sampled_from(["i1", "nope", ""]), max_size=3), st.none())

# -- parameter table -------------------------------------------------------------------------

PARAMETER_VALUES: Final[dict[str, st.SearchStrategy[Any]]] = {
    "thread_id": ids(*THREAD_IDS),
    "user_id": anything(st.sampled_from(USER_IDS), st.none()),
    "agent_id": anything(st.sampled_from(AGENT_IDS), st.none()),
    "metadata": metadata,
    "metadata_filter": metadata_filters,
    "memory_extraction_config": extraction_configs,
    "context_card_type_search_concurrency": integers,
    "max_message_token_length": integers,
    "context_card_token_limit": integers,
    "limit": anything(st.none(), integers),
    "content": contents,
    "information": contents,
    "cascade": booleans,
    "memory_type": memory_types,
    "memory_id": ids(*MEMORY_IDS, "new-memory"),
    "timestamp": timestamps,
    "ttl_days": ttl_days,
    "ttl_anchor": ttl_anchors,
    "memory_id_to_link": ids(*MEMORY_IDS),
    "link_type": relation_types,
    "link_id": ids(*LINK_IDS, "new-link"),
    "link_timestamp": timestamps,
    "link_metadata": metadata,
    "autonomous_linking": booleans,
    "llm": anything(st.none()),
    "message_shortening_input_token_limit": integers,
    "search_config": anything(st.none(), st.builds(TopKMemorySearchConfig, max_results=st.integers(1, 20))),
    **dict.fromkeys(DEPRECATED_EXTRACTION_KEYWORDS, st.just(NOTSET)),  # their warnings: tests/api
    "status": anything(st.sampled_from(["valid", "invalid", "VALID", ""])),
    "source_record_id": ids(*MEMORY_IDS),
    "source_record_type": memory_types,
    "target_record_id": ids(*MEMORY_IDS),
    "target_record_type": memory_types,
    "relation_type": relation_types,
    "opposite_relation_type": relation_types,
    "relation_id": ids(*LINK_IDS, "new-link"),
    "query": queries,
    "exact_user_match": booleans,
    "exact_agent_match": booleans,
    "exact_thread_match": booleans,
    "max_results": integers,
    "token_budget": anything(st.none(), integers),
    "soft_token_budget": anything(st.none(), integers),
    "record_types": record_type_lists,
    "num_hops": integers,
    "max_linked_results": integers,
    "include_invalid_results": booleans,
    "scope": scopes,
    "search_strategy": anything(st.sampled_from(["vector", "keyword", "hybrid", "semantic", "Vector", ""])),
    "batch_size": integers,
    "progress": progress_callbacks,
    "timeout": timeouts,
    "threads": anything(st.sampled_from([1, 4, 64, 65, 0, True]), integers),
    "poll_seconds": anything(st.sampled_from([0.5, 0.01, 0, -1.0, 3600, float("nan"), float("inf")])),
    "on_outcome": anything(st.none(), st.just(lambda outcome: None)),
    "backfill_seconds": anything(st.sampled_from([60.0, 0.01, 86_400, 86_401, 0, -1.0, float("nan"), float("inf")])),
    "messages": message_lists,
    "start": anything(st.none(), integers),
    "end": anything(st.none(), integers),
    "message_id": ids(*MESSAGE_IDS),
    "except_last": integers,
    "fallback_message_count": integers,
    "max_relevant_results": integers,
    "max_recent_messages": integers,
    "except_last_messages": integers,
    "image": image_bytes,
    "description": descriptions,
    "mime_type": mime_types,
    "image_id": ids("i1", "new-image"),
    "include_bytes": booleans,
    "include_image_bytes": booleans,
    "included_image_ids": image_id_lists,
    "image_input_limit_config": image_limits,
    "principal": anything(
        st.builds(Principal, st.sampled_from(["u1", "u2"]), st.sampled_from([None, "a1"]), st.sampled_from(["read", "write", "admin"]))
    ),
    "min_relevant_results_by_type": anything(
        st.dictionaries(
            st.one_of(record_type_names, weird_strings, integers, st.sampled_from([None, 1.5, b"x", frozenset(), _Weird()])),
            anything(integers),
            max_size=3,
        )
    ),
}

METHOD_OVERRIDES: Final[dict[tuple[str, str], st.SearchStrategy[Any]]] = {
    ("MemoryThread.add_messages", "metadata"): _per_message(metadata),
    ("MemoryThread.add_messages", "ttl_days"): _per_message(ttl_days),
    ("MemoryThread.add_messages", "ttl_anchor"): _per_message(ttl_anchors),
    ("MemoryThread.update_message", "content"): message_contents,
    ("AgentMemory.update_thread", "metadata"): metadata,
}

PUBLIC_METHODS: Final[dict[str, frozenset[str]]] = {
    "AgentMemory": frozenset(
        {
            "create_thread", "get_thread", "update_thread", "delete_thread", "list_threads", "add_memory",
            "update_memory", "delete_memory", "list_memories", "link_records", "update_record_link",
            "delete_record_link", "search", "purge_expired", "reembed", "embed_waiting", "wait_for_memory_extraction",
            "close", "acting_for",
            "failed_extractions", "pending_extractions", "retry_failed_extractions", "extraction_worker",
            "add_user", "add_agent", "delete_user", "delete_agent", "list_users", "list_agents", "list_messages",
            "add_image", "update_image", "delete_image", "list_images",
        }
    ),
    "MemoryThread": frozenset(
        {
            "add_messages", "get_messages", "get_message", "update_message", "delete_message", "get_summary",
            "get_context_card", "search", "add_memory", "update_memory", "delete_memory", "link_records",
            "update_record_link", "delete_record_link", "wait_for_memory_extraction",
            "add_image", "update_image", "delete_image", "list_images",
        }
    ),
}
"""The methods with a strategy entry (their parameters come from ``PARAMETER_VALUES``)."""


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """Every public method of ``cls`` (properties excluded), by introspection."""
    found = {}
    for name, value in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        if callable(value):
            found[name] = value
    return found


def sync_name(name: str) -> str:
    """The sync method an ``_async`` twin runs (twins share their sync method's strategy)."""
    return name.removesuffix("_async")


def parameters(cls: type, name: str) -> list[inspect.Parameter]:
    """The parameters of a public method, without ``self`` and ``**kwargs``."""
    signature = inspect.signature(getattr(cls, sync_name(name)))
    return [
        p for p in signature.parameters.values()
        if p.name != "self" and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    ]


def strategy_for(cls: type, name: str, parameter: str) -> st.SearchStrategy[Any] | None:
    key = (f"{cls.__name__}.{sync_name(name)}", parameter)
    return METHOD_OVERRIDES.get(key, PARAMETER_VALUES.get(parameter))


@st.composite
def calls(draw: st.DrawFn, cls: type, name: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments for one call of ``cls.name``: every required parameter, a random subset of the
    optional ones (keyword-only ones as keywords, the others positionally or by keyword)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional_ok = True
    for parameter in parameters(cls, name):
        strategy = strategy_for(cls, name, parameter.name)
        assert strategy is not None, f"no strategy for {cls.__name__}.{name}({parameter.name})"
        required = parameter.default is inspect.Parameter.empty
        if not required and not draw(st.booleans()):
            positional_ok = False  # a skipped optional parameter: the later ones go by keyword
            continue
        value = draw(strategy)
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY or not positional_ok or not draw(st.booleans()):
            kwargs[parameter.name] = value
            positional_ok = False
        else:
            args.append(value)
    return tuple(args), kwargs
