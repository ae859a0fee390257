"""Application layer: the typed requests of the public API, parsed once at the boundary.

Every public command and query has one frozen value here. Its constructor validates and
normalises what it is given (the facades pass their keywords straight through; ``NOTSET`` keeps
"omitted" apart from ``None``, ARCHITECTURE.md D9), and ``from_json`` builds the same value from
a JSON object (strings for times, lists for record types, a missing key for an omitted
argument; an unknown key is a ``ValidationError``) for servers that speak JSON. The services take
these values, so a keyword is mapped to its meaning in exactly one place.

A thread handle binds its own scope to a request (``within_thread``) instead of re-declaring it:
the value then carries the thread that owns the call, and the services keep to it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, Self

from palimpsest.domain.errors import ArgumentTypeError, InvalidScopeError, InvalidSearchError, ValidationError
from palimpsest.domain.model import (
    MAX_SPEAKER_LENGTH,
    MEMORY_RECORD_TYPES,
    SPEAKER_KEY,
    Message,
    RecordStatus,
    RecordType,
    Thread,
    check_id,
    check_metadata,
    check_optional_id,
    check_text,
    parse_record_type,
)
from palimpsest.domain.search import MAX_SEARCH_K, ScopeFilter
from palimpsest.domain.sentinel import ANY, NOTSET, NotSetType

from .arguments import TimeToLiveAnchor, check_ttl_arguments, parse_timestamp
from .images import parse_image_part

__all__ = [
    "CARD_MAX_RELEVANT_DEFAULT",
    "CARD_TYPE_KEYS",
    "AddMemory",
    "AppendMessages",
    "CardRequest",
    "ChatMessage",
    "DeleteRecordLink",
    "LinkRecords",
    "ListRecords",
    "ListThreads",
    "MessageInput",
    "SearchRequest",
    "SearchScope",
    "SearchStrategy",
    "UpdateMemory",
    "UpdateRecordLink",
    "resolve_scope",
]

MEMORY_TYPE_NAMES = ", ".join(sorted(t.value for t in MEMORY_RECORD_TYPES))
CARD_MAX_RELEVANT_DEFAULT = 5
CARD_TYPE_KEYS = frozenset({"message", "memory", "fact", "guideline", "preference"})
DEFAULT_MAX_RESULTS = 10


class SearchStrategy(str, enum.Enum):
    """How a search retrieves: by vector, by keywords, or both fused. The strings
    ``"vector"``, ``"hybrid"`` and ``"keyword"`` are accepted wherever a strategy is."""

    VECTOR = "vector"
    HYBRID = "hybrid"
    KEYWORD = "keyword"

    @classmethod
    def parse(cls, value: object, error: type[Exception] = InvalidSearchError) -> SearchStrategy:
        try:
            return cls(value)
        except ValueError:
            raise error("search_strategy must be 'vector', 'keyword' or 'hybrid'.") from None


def _set(value: object) -> bool:
    return not isinstance(value, NotSetType)


def _frozen_set(obj: object, name: str, value: object) -> None:
    """Normalise a field of a frozen value in its ``__post_init__``."""
    object.__setattr__(obj, name, value)


def _metadata(value: object) -> Any:
    """``NOTSET`` stays omitted; ``None`` clears; a mapping is checked (and copied)."""
    return value if isinstance(value, NotSetType) else check_metadata(value)


def _timestamp(value: object, what: str = "timestamp") -> Any:
    return value if isinstance(value, NotSetType) else parse_timestamp(value, what)


class _Request:
    """What every request value shares: the JSON path (``from_json``)."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields that a JSON object may not set (a thread's binding, say)."""

    @classmethod
    def _json_fields(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in cls.JSON_ONLY_FIELDS]  # type: ignore[arg-type]

    @classmethod
    def _from_json_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Turn JSON-only shapes into the constructor's (overridden where needed)."""
        return values

    @classmethod
    def from_json(cls, mapping: object) -> Self:
        """The request a JSON object describes: a missing key is an omitted argument, ``null``
        is ``None``; an unknown key is a ``ValidationError``."""
        if not isinstance(mapping, Mapping):
            raise ValidationError(f"{cls.__name__} must be given as a JSON object.")
        allowed = cls._json_fields()
        unknown = sorted(str(k) for k in mapping if k not in allowed)
        if unknown:
            raise ValidationError(f"{cls.__name__} does not take: {', '.join(unknown)}.")
        values = cls._from_json_values(dict(mapping))
        try:
            return cls(**values)
        except TypeError as exc:  # a required key is missing
            raise ValidationError(f"{cls.__name__}: {exc}") from None


def _ttl(obj: object, ttl_days: object, ttl_anchor: object) -> None:
    anchor = check_ttl_arguments(ttl_days, ttl_anchor)
    _frozen_set(obj, "ttl_anchor", anchor)


def _status(value: object) -> RecordStatus | NotSetType:
    if isinstance(value, NotSetType):
        return value
    try:
        return RecordStatus(value)
    except ValueError:
        raise ValidationError("status must be RecordStatus.VALID or RecordStatus.INVALID ('valid' or 'invalid').") from None


def _bind_scope(given: object, own: str | None, name: str) -> str | None:
    """A thread's scope for one dimension: omitted means the thread's; anything else must be it."""
    if isinstance(given, NotSetType) or given == own:
        return own
    raise InvalidScopeError(
        f"A thread handle writes into its own scope: leave {name} unset (or give the thread's); "
        "write elsewhere through AgentMemory."
    )


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddMemory(_Request):
    """``add_memory``: a memory-like record, optionally linked to an existing one."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    content: str
    memory_type: RecordType | str | NotSetType = NOTSET
    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    memory_id: str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET
    status: RecordStatus | str | NotSetType = NOTSET
    autonomous_linking: bool | NotSetType = NOTSET
    memory_id_to_link: str | NotSetType = NOTSET
    link_type: str | NotSetType = NOTSET
    link_id: str | NotSetType = NOTSET
    link_timestamp: datetime | str | None | NotSetType = NOTSET
    link_metadata: dict[str, Any] | None | NotSetType = NOTSET
    owner_thread: str | None = None
    """The thread whose handle made the call: the record is that thread's, and so must a link
    target be."""

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) or not self.content.strip():
            raise ValidationError("memory content must be a non-empty string.")
        try:
            record_type = RecordType.MEMORY if isinstance(self.memory_type, NotSetType) else parse_record_type(
                self.memory_type, memory_only=True
            )
        except ValidationError:
            raise ValidationError(f"memory_type must be one of: {MEMORY_TYPE_NAMES}.") from None
        _frozen_set(self, "memory_type", record_type)
        if isinstance(self.memory_id_to_link, NotSetType) != isinstance(self.link_type, NotSetType):
            raise ValidationError("memory_id_to_link and link_type must be provided together.")
        if self.autonomous_linking is not True and self.autonomous_linking is not False and _set(self.autonomous_linking):
            raise ValidationError("autonomous_linking must be True or False.")
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))
        _ttl(self, self.ttl_days, self.ttl_anchor)
        _frozen_set(self, "metadata", _metadata(self.metadata))
        for name in ("user_id", "agent_id", "thread_id"):
            value = getattr(self, name)
            if _set(value):
                check_optional_id(value, name)
        if _set(self.memory_id_to_link):
            check_id(self.memory_id_to_link, "memory_id_to_link")
            _frozen_set(self, "link_timestamp", _timestamp(self.link_timestamp, "link_timestamp"))
            _frozen_set(self, "link_metadata", _metadata(self.link_metadata))
        if _set(self.memory_id) and self.memory_id is not None:
            check_id(self.memory_id, "memory_id")
        _frozen_set(self, "status", _status(self.status))
        if self.owner_thread is not None:
            check_id(self.owner_thread, "owner_thread")

    @property
    def scope(self) -> dict[str, str | None | NotSetType]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "thread_id": self.thread_id}

    def within_thread(self, thread: Thread) -> AddMemory:
        """This request made through ``thread``'s handle: the thread's user, agent and thread
        (explicit ones must be the thread's: ``InvalidScopeError``), owned by the thread."""
        return replace(
            self,
            user_id=_bind_scope(self.user_id, thread.user_id, "user_id"),
            agent_id=_bind_scope(self.agent_id, thread.agent_id, "agent_id"),
            thread_id=_bind_scope(self.thread_id, thread.id, "thread_id"),
            owner_thread=thread.id,
        )


@dataclass(frozen=True, slots=True)
class UpdateMemory(_Request):
    """``update_memory``: a partial update (metadata replaced whole); scope and type are immutable."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    memory_id: str
    content: str | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET
    status: RecordStatus | str | NotSetType = NOTSET
    owner_thread: str | None = None

    def __post_init__(self) -> None:
        check_id(self.memory_id, "memory_id")
        if self.content is None:
            raise ValidationError("content cannot be None; omit it to keep the current text.")
        if not isinstance(self.content, (str, NotSetType)):
            raise ValidationError("memory content must be a string.")
        fields = (self.content, self.metadata, self.timestamp, self.ttl_days, self.ttl_anchor, self.status)
        if all(isinstance(v, NotSetType) for v in fields):
            raise ValidationError(
                "Provide at least one of content, metadata, timestamp, ttl_days, ttl_anchor or status."
            )
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))
        _ttl(self, self.ttl_days, self.ttl_anchor)
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "status", _status(self.status))

    def within_thread(self, thread: Thread) -> UpdateMemory:
        return replace(self, owner_thread=thread.id)


def _endpoint_type(record_type: object, what: str) -> RecordType:
    if not isinstance(record_type, str):
        raise ValidationError(f"{what} must be a string.")
    try:
        return parse_record_type(record_type, memory_only=True)
    except ValidationError:
        raise ValidationError("A memory link endpoint must be a memory-like record.") from None


@dataclass(frozen=True, slots=True)
class LinkRecords(_Request):
    """``link_records``: a directed link between two memory-like records."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    source_record_id: str
    source_record_type: RecordType | str
    target_record_id: str
    target_record_type: RecordType | str
    relation_type: str
    opposite_relation_type: str | NotSetType = NOTSET
    relation_id: str | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    owner_thread: str | None = None

    def __post_init__(self) -> None:
        _frozen_set(self, "source_record_type", _endpoint_type(self.source_record_type, "source_record_type"))
        _frozen_set(self, "target_record_type", _endpoint_type(self.target_record_type, "target_record_type"))
        check_id(self.source_record_id, "source_record_id")
        check_id(self.target_record_id, "target_record_id")
        if self.opposite_relation_type is None:
            raise ValidationError("opposite_relation_type cannot be None; omit it for the default label.")
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))

    def within_thread(self, thread: Thread) -> LinkRecords:
        return replace(self, owner_thread=thread.id)


@dataclass(frozen=True, slots=True)
class UpdateRecordLink(_Request):
    """``update_record_link``: omitted fields unchanged; ``None`` clears timestamp/metadata."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    relation_id: str
    relation_type: str | NotSetType = NOTSET
    opposite_relation_type: str | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    owner_thread: str | None = None

    def __post_init__(self) -> None:
        check_id(self.relation_id, "relation_id")
        fields = (self.relation_type, self.opposite_relation_type, self.timestamp, self.metadata)
        if all(isinstance(v, NotSetType) for v in fields):
            raise ValidationError("Provide at least one relation field to update.")
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))

    def within_thread(self, thread: Thread) -> UpdateRecordLink:
        return replace(self, owner_thread=thread.id)


@dataclass(frozen=True, slots=True)
class DeleteRecordLink(_Request):
    """``delete_record_link``: by ``relation_id`` alone, or by the complete directed tuple."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    source_record_id: str | NotSetType = NOTSET
    source_record_type: RecordType | str | NotSetType = NOTSET
    target_record_id: str | NotSetType = NOTSET
    target_record_type: RecordType | str | NotSetType = NOTSET
    relation_type: str | NotSetType = NOTSET
    relation_id: str | NotSetType = NOTSET
    owner_thread: str | None = None

    def __post_init__(self) -> None:
        given = [_set(v) for v in self.endpoints]
        if _set(self.relation_id):
            if any(given):
                raise ValidationError("Provide relation_id alone or a complete relation endpoint tuple.")
            check_id(self.relation_id, "relation_id")
            return
        if not all(given):
            raise ValidationError("Provide relation_id alone or a complete relation endpoint tuple.")
        _frozen_set(self, "source_record_type", _endpoint_type(self.source_record_type, "source_record_type"))
        _frozen_set(self, "target_record_type", _endpoint_type(self.target_record_type, "target_record_type"))

    @property
    def endpoints(self) -> tuple[object, ...]:
        return (
            self.source_record_id,
            self.source_record_type,
            self.target_record_id,
            self.target_record_type,
            self.relation_type,
        )

    def within_thread(self, thread: Thread) -> DeleteRecordLink:
        return replace(self, owner_thread=thread.id)


def _limit(value: object) -> int | None:
    """A listing's ``limit``: omitted → ``None``, every row (the store checks the rest)."""
    return None if isinstance(value, NotSetType) else value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class ListRecords(_Request):
    """``list_memories``: omitted = no filter; ``None`` = unscoped only; ``limit`` keeps the newest."""

    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    limit: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _frozen_set(self, "limit", _limit(self.limit))


@dataclass(frozen=True, slots=True)
class ListThreads(_Request):
    """``list_threads``: a user's threads (``None``: threads without a user)."""

    user_id: str | None
    agent_id: str | None | NotSetType = NOTSET
    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    limit: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        check_optional_id(self.user_id, "user_id")
        _frozen_set(self, "limit", _limit(self.limit))


# -- search ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchScope:
    """An explicit search scope, the alternative to passing ids and flags one by one."""

    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    exact_user_match: bool | NotSetType = NOTSET
    exact_agent_match: bool | NotSetType = NOTSET
    exact_thread_match: bool | NotSetType = NOTSET


def _dimension(value: str | None | NotSetType, exact: bool | NotSetType, *, narrows_by_default: bool) -> Any:
    if not isinstance(exact, (bool, NotSetType)):
        raise ValidationError("exact_*_match flags must be True or False.")
    if not isinstance(value, NotSetType):
        check_optional_id(value, "scope id")
    if exact is False:
        return ANY
    if exact is True:
        return None if isinstance(value, NotSetType) else value
    if isinstance(value, NotSetType) or not narrows_by_default:
        return ANY
    return value


def resolve_scope(
    *,
    user_id: str | None | NotSetType,
    agent_id: str | None | NotSetType,
    thread_id: str | None | NotSetType,
    exact_user_match: bool | NotSetType,
    exact_agent_match: bool | NotSetType,
    exact_thread_match: bool | NotSetType,
    scope: SearchScope | NotSetType,
    require_user: bool,
) -> ScopeFilter:
    """The store-level scope filter for a public search call."""
    if not isinstance(scope, NotSetType):
        if not isinstance(scope, SearchScope):
            raise ValidationError("scope must be a SearchScope.")
        explicit = (user_id, agent_id, thread_id, exact_user_match, exact_agent_match, exact_thread_match)
        if any(not isinstance(v, NotSetType) for v in explicit):
            raise ValidationError("Provide either 'scope' or explicit user/agent/thread ids, not both.")
        user_id, agent_id, thread_id = scope.user_id, scope.agent_id, scope.thread_id
        exact_user_match, exact_agent_match, exact_thread_match = (
            scope.exact_user_match,
            scope.exact_agent_match,
            scope.exact_thread_match,
        )
    if require_user:
        if isinstance(user_id, NotSetType):
            raise InvalidScopeError(
                "Client searches must be scoped to a user: pass user_id=... (or user_id=None for "
                "unscoped records only), or scope=SearchScope(user_id=...)."
            )
        if exact_user_match is False:
            raise InvalidScopeError("Client searches require exact user scoping; do not set exact_user_match=False.")
    return ScopeFilter(
        user_id=_dimension(user_id, exact_user_match, narrows_by_default=True),
        agent_id=_dimension(agent_id, exact_agent_match, narrows_by_default=True),
        thread_id=_dimension(thread_id, exact_thread_match, narrows_by_default=False),
    )


def _record_types(value: object) -> frozenset[RecordType] | None:
    if isinstance(value, NotSetType) or value is None:
        return None
    if isinstance(value, str):
        raise ValidationError("record_types must be a list of record type names, not a string.")
    if not isinstance(value, Iterable):
        raise ArgumentTypeError("record_types must be a list of record type names or None.")
    items = list(value)
    if not all(isinstance(t, str) for t in items):
        raise ArgumentTypeError("record_types entries must be strings.")
    return frozenset(parse_record_type(t) for t in items)


def _budget(value: object, name: str) -> int | None | NotSetType:
    if isinstance(value, NotSetType) or value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an integer or None.")
    return value


@dataclass(frozen=True, slots=True)
class SearchRequest(_Request):
    """``search``: a query with its scope (ids and flags, or a ``SearchScope``) and options.

    The scope is resolved when the value is built (a client search must name its user); a
    thread handle's ``within_thread`` resolves it with the thread's defaults instead."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"scope_filter"})

    query: str
    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    exact_user_match: bool | NotSetType = NOTSET
    exact_agent_match: bool | NotSetType = NOTSET
    exact_thread_match: bool | NotSetType = NOTSET
    max_results: int | NotSetType = NOTSET
    token_budget: int | None | NotSetType = NOTSET
    soft_token_budget: int | None | NotSetType = NOTSET
    record_types: Iterable[str] | frozenset[RecordType] | None | NotSetType = NOTSET
    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    num_hops: int | NotSetType = NOTSET
    max_linked_results: int | NotSetType = NOTSET
    include_invalid_results: bool | NotSetType = NOTSET
    scope: SearchScope | NotSetType = NOTSET
    search_strategy: SearchStrategy | str | NotSetType = NOTSET
    scope_filter: ScopeFilter | None = None
    """The resolved scope (``None`` until a client or a thread resolves it)."""

    def __post_init__(self) -> None:
        if self.scope_filter is None:
            _frozen_set(self, "scope_filter", self._resolve(require_user=True))
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidSearchError("query must be a non-empty string.")
        if _set(self.search_strategy):
            _frozen_set(self, "search_strategy", SearchStrategy.parse(self.search_strategy))
        k = self.max_results
        if _set(k) and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InvalidSearchError("max_results must be at least 1; allow at least one search result.")
        if isinstance(k, int) and k > MAX_SEARCH_K:
            raise InvalidSearchError("max_results exceeds the maximum allowed search result count (1000).")
        if not isinstance(self.metadata_filter, (dict, NotSetType)) and self.metadata_filter is not None:
            raise ValidationError("metadata_filter must be a dict or None.")
        if not isinstance(self.include_invalid_results, (bool, NotSetType)):
            raise ValidationError("include_invalid_results must be True or False.")
        if not isinstance(self.record_types, frozenset):
            _frozen_set(self, "record_types", _record_types(self.record_types))
        _frozen_set(self, "token_budget", _budget(self.token_budget, "token_budget"))
        _frozen_set(self, "soft_token_budget", _budget(self.soft_token_budget, "soft_token_budget"))

    @classmethod
    def _from_json_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        scope = values.get("scope")
        if isinstance(scope, Mapping):
            unknown = sorted(str(k) for k in scope if k not in SearchScope.__dataclass_fields__)
            if unknown:
                raise ValidationError(f"SearchScope does not take: {', '.join(unknown)}.")
            values["scope"] = SearchScope(**scope)
        return values

    def _resolve(self, *, require_user: bool) -> ScopeFilter:
        return resolve_scope(
            user_id=self.user_id,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
            exact_user_match=self.exact_user_match,
            exact_agent_match=self.exact_agent_match,
            exact_thread_match=self.exact_thread_match,
            scope=self.scope,
            require_user=require_user,
        )

    @property
    def scoped(self) -> ScopeFilter:
        assert self.scope_filter is not None  # set by __post_init__
        return self.scope_filter

    @classmethod
    def for_thread(cls, thread: Thread, query: str, **keywords: Any) -> SearchRequest:
        """A search through ``thread``'s handle: its user and agent exactly, any of their
        threads (``exact_thread_match=True`` keeps to this one). A thread handle never reads
        outside its user: a ``scope`` without a user means the thread's, and another user (or
        none, for a thread with one) or ``exact_user_match=False`` is an ``InvalidScopeError``."""
        scope = keywords.get("scope", NOTSET)
        if isinstance(scope, NotSetType):
            for name, default in (
                ("user_id", thread.user_id),
                ("agent_id", thread.agent_id),
                ("thread_id", thread.id),
                ("exact_user_match", True),
                ("exact_agent_match", True),
            ):
                if isinstance(keywords.get(name, NOTSET), NotSetType):
                    keywords[name] = default
        elif isinstance(scope, SearchScope) and isinstance(scope.user_id, NotSetType):
            keywords["scope"] = replace(scope, user_id=thread.user_id)
        names = ("user_id", "agent_id", "thread_id", "exact_user_match", "exact_agent_match", "exact_thread_match")
        resolved = resolve_scope(
            **{name: keywords.get(name, NOTSET) for name in names},
            scope=keywords.get("scope", NOTSET),
            require_user=False,
        )
        if resolved.user_id is ANY or resolved.user_id != thread.user_id:
            raise InvalidScopeError(
                "A thread handle searches its own user's records only: leave user_id unset (or give "
                "the thread's) and keep exact_user_match; search other users through AgentMemory.search."
            )
        return cls(query, scope_filter=resolved, **keywords)


# -- context cards ---------------------------------------------------------------------------


def _count(name: str, value: object, default: int, *, minimum: int = 0) -> int:
    if isinstance(value, NotSetType):
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an integer.")
    if value < minimum:
        raise ValidationError(f"{name} must be at least {minimum}.")
    return value


@dataclass(frozen=True, slots=True)
class CardRequest(_Request):
    """``get_context_card``: every argument resolved to its value (omitted ones to the defaults)."""

    fallback_message_count: int | NotSetType = NOTSET
    max_relevant_results: int | NotSetType = NOTSET
    max_recent_messages: int | NotSetType = NOTSET
    except_last_messages: int | NotSetType = NOTSET
    min_relevant_results_by_type: Mapping[str, int] | None | NotSetType = NOTSET
    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    include_invalid_results: bool | NotSetType = NOTSET
    token_budget: int | None | NotSetType = NOTSET
    soft_token_budget: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        except_last = self.except_last_messages
        if not isinstance(except_last, NotSetType) and isinstance(except_last, int) and except_last < 0:
            raise ValidationError("except_last_messages must be non-negative.")
        skip = _count("except_last_messages", except_last, 0)
        tail = _count("max_recent_messages", self.max_recent_messages, 0)
        if skip and tail not in (0, skip):
            raise ValidationError("except_last_messages requires max_recent_messages to be zero or the same count.")
        mins: dict[str, int] = {}
        minimums = self.min_relevant_results_by_type
        if not isinstance(minimums, NotSetType) and minimums is not None:
            if not isinstance(minimums, Mapping):
                raise ValidationError("min_relevant_results_by_type must be a mapping.")
            unsupported = sorted(repr(key) for key in set(minimums) - CARD_TYPE_KEYS)
            if unsupported:
                raise ValidationError(
                    f"min_relevant_results_by_type contains unsupported record type(s): {', '.join(unsupported)} "
                    f"(supported: {', '.join(sorted(CARD_TYPE_KEYS))})."
                )
            for key, count in minimums.items():
                if isinstance(count, bool) or not isinstance(count, int):
                    raise ValidationError("min_relevant_results_by_type counts must be integers.")
                if count < 1:
                    raise ValidationError("min_relevant_results_by_type counts must be positive integers.")
                mins[key] = count
        total = sum(mins.values())
        if isinstance(self.max_relevant_results, NotSetType):
            cap = max(CARD_MAX_RELEVANT_DEFAULT, total)
        else:
            cap = _count("max_relevant_results", self.max_relevant_results, CARD_MAX_RELEVANT_DEFAULT, minimum=1)
            if total > cap:
                raise ValidationError("min_relevant_results_by_type total must not exceed max_relevant_results.")
        if not isinstance(self.include_invalid_results, (bool, NotSetType)):
            raise ValidationError("include_invalid_results must be True or False.")
        _frozen_set(self, "fallback_message_count", _count("fallback_message_count", self.fallback_message_count, 5))
        _frozen_set(self, "max_relevant_results", cap)
        _frozen_set(self, "max_recent_messages", tail)
        _frozen_set(self, "except_last_messages", skip)
        _frozen_set(self, "min_relevant_results_by_type", mins)
        _frozen_set(self, "include_invalid_results", True if isinstance(self.include_invalid_results, NotSetType) else self.include_invalid_results)
        _frozen_set(self, "token_budget", _budget(self.token_budget, "token_budget"))
        _frozen_set(self, "soft_token_budget", _budget(self.soft_token_budget, "soft_token_budget"))

    # The resolved values, typed (the fields keep the public names).
    @property
    def fallback(self) -> int:
        return self.fallback_message_count  # type: ignore[return-value]

    @property
    def max_relevant(self) -> int:
        return self.max_relevant_results  # type: ignore[return-value]

    @property
    def recent(self) -> int:
        return self.max_recent_messages  # type: ignore[return-value]

    @property
    def except_last(self) -> int:
        return self.except_last_messages  # type: ignore[return-value]

    @property
    def minimums(self) -> dict[str, int]:
        return self.min_relevant_results_by_type  # type: ignore[return-value]

    @property
    def include_invalid(self) -> bool:
        return self.include_invalid_results  # type: ignore[return-value]


# -- messages --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A message to append: role and text, optionally an id, an event timestamp, metadata and
    the ``name`` of the participant who wrote it (kept as ``metadata["speaker"]``)."""

    role: str
    content: str
    timestamp: str | datetime | None = None
    metadata: dict[str, Any] | None = None
    id: str | None = None
    name: str | None = None


def content_parts(content: object) -> tuple[str, tuple[tuple[int, object, object, object], ...]]:
    """Message content as its text and its image parts: a string, or a content-part list whose
    text parts make the text and whose image parts (:func:`~palimpsest.application.images.parse_image_part`)
    are kept with their position: (position, bytes, MIME type, description)."""
    if isinstance(content, str):
        return content, ()
    if isinstance(content, (list, tuple)):
        if not content:
            raise ValidationError("Message requires at least one content part.")
        texts = []
        images = []
        for position, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise ValidationError("Message content must be a string or a sequence of content parts.")
            kind = part.get("type", "text")
            if kind == "image":
                images.append((position, *parse_image_part(part)))
            elif kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                raise ValidationError('A content part is {"type": "text", "text": ...} or {"type": "image", ...}.')
        return "".join(texts), tuple(images)
    raise ValidationError("Message content must be a string or a sequence of content parts.")


def text_of(content: object) -> str:
    """The new text of an edited message: a string or text parts (its images are not edited this way)."""
    text, images = content_parts(content)
    if images:
        raise ValidationError("update_message changes a message's text; its images stay as they are.")
    return text


def _per_message(value: object, count: int, name: str) -> list[Any]:
    if isinstance(value, list):
        if len(value) != count:
            raise ValidationError(f"When using a list for {name}, its length must match the messages.")
        return value
    return [value] * count


def _with_speaker(metadata: dict[str, Any] | None, name: object) -> dict[str, Any] | None:
    """``metadata`` with the message's ``name`` (OpenAI's participant name) as its speaker."""
    if name is None:
        return metadata
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("Message name must be a non-empty string or None.")
    if len(name) > MAX_SPEAKER_LENGTH:
        raise ValidationError(f"Message name must be at most {MAX_SPEAKER_LENGTH} characters.")
    check_text(name, "message name")
    current = (metadata or {}).get(SPEAKER_KEY)
    if current is not None and current != name:
        raise ValidationError(
            f"Message name {name!r} differs from its metadata[{SPEAKER_KEY!r}] {current!r}; give one of them."
        )
    return {**(metadata or {}), SPEAKER_KEY: name}


def _parse_message(
    raw: object,
) -> tuple[str, str, datetime | None, dict[str, Any] | None, Any, tuple[tuple[int, object, object, object], ...]]:
    role: Any  # checked below, whatever the input was
    name: Any = None
    if isinstance(raw, ChatMessage):
        role, content, ts, meta, mid, name = raw.role, raw.content, raw.timestamp, raw.metadata, raw.id, raw.name
    elif isinstance(raw, Message):
        role, content, ts, meta, mid = raw.role, raw.content, raw.timestamp, raw.metadata, raw.id
    elif isinstance(raw, Mapping):
        if "content" not in raw:
            raise ValidationError("Each thread message must include content.")
        role, content, name = raw.get("role"), raw["content"], raw.get("name")
        ts, meta, mid = raw.get("timestamp"), raw.get("metadata"), raw.get("id")
    else:
        raise ValidationError("messages must be dicts or ChatMessage objects.")
    if not isinstance(role, str) or not role.strip():
        raise ValidationError("Message role must be a non-empty string.")
    text, images = content_parts(content)
    return role, text, parse_timestamp(ts), _with_speaker(check_metadata(meta), name), mid, images


@dataclass(frozen=True, slots=True)
class MessageInput:
    """One message of an append, parsed (``id`` ``None``: the service generates one)."""

    role: str
    content: str
    timestamp: datetime | None
    metadata: dict[str, Any] | None
    id: str | None
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | NotSetType = NOTSET
    images: tuple[tuple[int, object, object, object], ...] = ()
    """Its image content parts, as given: (position, bytes, MIME type, description)."""


@dataclass(frozen=True, slots=True)
class AppendMessages(_Request):
    """``add_messages``: messages (dicts, ``ChatMessage`` or ``Message`` values), with shared or
    per-message metadata, TTL and anchor; parsed into :class:`MessageInput` values."""

    messages: Sequence[Any]
    metadata: Mapping[str, Any] | None | list[Any] | NotSetType = NOTSET
    ttl_days: float | None | list[Any] | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | list[Any] | NotSetType = NOTSET

    def __post_init__(self) -> None:
        messages = self.messages
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise ValidationError("messages must be a list of messages.")
        if messages and all(isinstance(m, MessageInput) for m in messages):
            _frozen_set(self, "messages", tuple(messages))
            return
        parsed = [_parse_message(m) for m in messages]
        given = [p[4] for p in parsed]
        if any(i is None for i in given) and any(i is not None for i in given):
            raise ValidationError("message ids must be either all set or all omitted.")
        ids = [check_id(i, "message id") if i is not None else None for i in given]
        present = [i for i in ids if i is not None]
        if len(set(present)) != len(present):
            raise ValidationError("Duplicate message ids are not allowed.")
        shared_meta = _per_message(self.metadata, len(parsed), "metadata")
        ttls = _per_message(self.ttl_days, len(parsed), "ttl_days")
        anchors = _per_message(self.ttl_anchor, len(parsed), "ttl_anchor")
        rows = []
        for (role, text, ts, meta, _, images), mid, extra, ttl, anchor in zip(parsed, ids, shared_meta, ttls, anchors):
            if not isinstance(extra, NotSetType) and extra is not None:
                meta = {**(check_metadata(extra) or {}), **(meta or {})}
            rows.append(MessageInput(role, text, ts, meta, mid, ttl, check_ttl_arguments(ttl, anchor), images))
        _frozen_set(self, "messages", tuple(rows))

    @property
    def inputs(self) -> tuple[MessageInput, ...]:
        return tuple(self.messages)
