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

import base64
import binascii
import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, ClassVar, Self

from palimpsest.domain.errors import (
    ArgumentTypeError,
    ConfigurationError,
    InvalidScopeError,
    InvalidSearchError,
    InvalidSettingsError,
    ValidationError,
)
from palimpsest.domain.images import ImageMimeType, parse_mime_type
from palimpsest.domain.metadata_filter import validate_metadata_filter
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
from .config import (
    DEPRECATED_EXTRACTION_KEYWORDS,
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemorySearchConfig,
    check_llm,
    fold_deprecated_extraction,
)
from .principal import Principal

__all__ = [
    "CARD_MAX_RELEVANT_DEFAULT",
    "CARD_TYPE_KEYS",
    "PROFILE_OWNERS",
    "AddImage",
    "AddMemory",
    "AddProfile",
    "AppendMessages",
    "CardRequest",
    "ChatMessage",
    "CreateThread",
    "DeleteProfile",
    "DeleteRecordLink",
    "GetThread",
    "ImageInput",
    "LinkRecords",
    "ListImages",
    "ListMessages",
    "ListProfiles",
    "ListRecords",
    "ListThreads",
    "MessageInput",
    "SearchRequest",
    "SearchScope",
    "SearchStrategy",
    "ThreadOptions",
    "UpdateImage",
    "UpdateMemory",
    "UpdateMessage",
    "UpdateRecordLink",
    "UpdateThread",
    "image_description",
    "parse_image_part",
    "raw_image_bytes",
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

    KEYWORD_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields the facades' keywords set but a JSON object may not (deprecated keywords)."""

    @classmethod
    def _json_fields(cls) -> list[str]:
        refused = cls.JSON_ONLY_FIELDS | cls.KEYWORD_ONLY_FIELDS
        return [f.name for f in dataclasses.fields(cls) if f.name not in refused]  # type: ignore[arg-type]

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
        try:
            values = cls._from_json_values(dict(mapping))
            return cls(**values)
        except TypeError as exc:  # a required key is missing
            raise ValidationError(f"{cls.__name__}: {exc}") from None
        except ConfigurationError as exc:  # settings in the object: the caller's to fix
            if isinstance(exc, ValidationError):
                raise
            raise InvalidSettingsError(f"{cls.__name__}: {exc}") from exc


class _Scoped:
    """A request with the three scope ids (``user_id``, ``agent_id``, ``thread_id``)."""

    user_id: str | None | NotSetType
    agent_id: str | None | NotSetType
    thread_id: str | None | NotSetType

    @property
    def scope(self) -> dict[str, str | None | NotSetType]:
        """The scope ids as given (``NOTSET``: omitted)."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "thread_id": self.thread_id}


@dataclass(frozen=True, slots=True)
class _ThreadOwned(_Request):
    """A request a thread handle may make: ``owner_thread`` names the thread whose handle made
    it (``None``: the client), and the services keep the call to that thread's records. A JSON
    object cannot set it; ``within_thread`` does."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"owner_thread"})

    owner_thread: str | Principal | None = field(default=None, kw_only=True)
    """The thread whose handle made the request (its id), or the principal it is made for (D44)."""

    def within_thread(self, thread: Thread) -> Self:
        """This request made through ``thread``'s handle."""
        return replace(self, owner_thread=thread.id)

    def for_principal(self, principal: Principal) -> Self:
        """This request made for ``principal``: only its records are found."""
        return replace(self, owner_thread=principal)


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


def bind_principal(given: object, own: str, name: str) -> str:
    """A principal's scope for one dimension: omitted means the principal's; anything else must be it."""
    if isinstance(given, NotSetType) or given == own:
        return own
    raise InvalidScopeError(f"{name} must be the caller's own ({own!r}) or left out.")


def bind_owner(principal: Principal, user_id: object, agent_id: Any) -> tuple[str, Any]:
    """A request's user and agent made ``principal``'s (:func:`bind_principal` for each; the
    agent is left as given when the principal has none): another one given is an
    ``InvalidScopeError``, the agent checked first."""
    agent = agent_id if principal.agent_id is None else bind_principal(agent_id, principal.agent_id, "agent_id")
    return bind_principal(user_id, principal.user_id, "user_id"), agent


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddMemory(_ThreadOwned, _Scoped):
    """``add_memory``: a memory-like record, optionally linked to an existing one."""

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
        _check_ids(self, "user_id", "agent_id", "thread_id")
        if _set(self.memory_id_to_link):
            check_id(self.memory_id_to_link, "memory_id_to_link")
            _frozen_set(self, "link_timestamp", _timestamp(self.link_timestamp, "link_timestamp"))
            _frozen_set(self, "link_metadata", _metadata(self.link_metadata))
        if _set(self.memory_id) and self.memory_id is not None:
            check_id(self.memory_id, "memory_id")
        _frozen_set(self, "status", _status(self.status))
        if isinstance(self.owner_thread, str):
            check_id(self.owner_thread, "owner_thread")

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

    def for_principal(self, principal: Principal) -> AddMemory:
        """This request made for ``principal``: its user (and agent, when it has one); another
        one given is an ``InvalidScopeError``, and a link target must be the principal's."""
        user, agent = bind_owner(principal, self.user_id, self.agent_id)
        return replace(self, user_id=user, agent_id=agent, owner_thread=principal)


@dataclass(frozen=True, slots=True)
class UpdateMemory(_ThreadOwned):
    """``update_memory``: a partial update (metadata replaced whole); scope and type are immutable."""

    memory_id: str
    content: str | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET
    status: RecordStatus | str | NotSetType = NOTSET

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


def _endpoint_type(record_type: object, what: str) -> RecordType:
    if not isinstance(record_type, str):
        raise ValidationError(f"{what} must be a string.")
    try:
        return parse_record_type(record_type, memory_only=True)
    except ValidationError:
        raise ValidationError("A memory link endpoint must be a memory-like record.") from None


@dataclass(frozen=True, slots=True)
class LinkRecords(_ThreadOwned):
    """``link_records``: a directed link between two memory-like records."""

    source_record_id: str
    source_record_type: RecordType | str
    target_record_id: str
    target_record_type: RecordType | str
    relation_type: str
    opposite_relation_type: str | NotSetType = NOTSET
    relation_id: str | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _frozen_set(self, "source_record_type", _endpoint_type(self.source_record_type, "source_record_type"))
        _frozen_set(self, "target_record_type", _endpoint_type(self.target_record_type, "target_record_type"))
        check_id(self.source_record_id, "source_record_id")
        check_id(self.target_record_id, "target_record_id")
        if self.opposite_relation_type is None:
            raise ValidationError("opposite_relation_type cannot be None; omit it for the default label.")
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))


@dataclass(frozen=True, slots=True)
class UpdateRecordLink(_ThreadOwned):
    """``update_record_link``: omitted fields unchanged; ``None`` clears timestamp/metadata."""

    relation_id: str
    relation_type: str | NotSetType = NOTSET
    opposite_relation_type: str | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        check_id(self.relation_id, "relation_id")
        fields = (self.relation_type, self.opposite_relation_type, self.timestamp, self.metadata)
        if all(isinstance(v, NotSetType) for v in fields):
            raise ValidationError("Provide at least one relation field to update.")
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))


@dataclass(frozen=True, slots=True)
class DeleteRecordLink(_ThreadOwned):
    """``delete_record_link``: by ``relation_id`` alone, or by the complete directed tuple."""

    source_record_id: str | NotSetType = NOTSET
    source_record_type: RecordType | str | NotSetType = NOTSET
    target_record_id: str | NotSetType = NOTSET
    target_record_type: RecordType | str | NotSetType = NOTSET
    relation_type: str | NotSetType = NOTSET
    relation_id: str | NotSetType = NOTSET

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


def content_parts(content: object) -> tuple[str, tuple[ImageInput, ...]]:
    """Message content as its text and its image parts: a string, or a content-part list whose
    text parts make the text and whose image parts (:func:`parse_image_part`) are kept with
    their position."""
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
                images.append(parse_image_part(part, position))
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


@dataclass(frozen=True, slots=True)
class UpdateMessage(_Request):
    """``update_message``: a message's new text (a string or text parts), metadata (whole
    replace; ``None`` clears) or time to live; role and time are immutable, omitted fields stay."""

    message_id: str
    content: str | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET

    def __post_init__(self) -> None:
        if self.content is None:
            raise ValidationError("content must be provided when updating a message; omit content to preserve it.")
        if _set(self.content):
            _frozen_set(self, "content", text_of(self.content))
        _frozen_set(self, "metadata", _metadata(self.metadata))
        check_id(self.message_id, "message_id")
        _ttl(self, self.ttl_days, self.ttl_anchor)


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
) -> tuple[str, str, datetime | None, dict[str, Any] | None, Any, tuple[ImageInput, ...]]:
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
    images: tuple[ImageInput, ...] = ()
    """Its image content parts."""


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


# -- images ----------------------------------------------------------------------------------


def raw_image_bytes(value: object) -> bytes:
    """The caller's image as ``bytes``; only raw bytes are images (a path or base64 text is not)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ValidationError("image must be raw bytes.")


def _base64(text: object, message: str) -> bytes:
    if not isinstance(text, str):
        raise ValidationError(message)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(message) from None


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An image content part of a message to append, parsed: its position among the message's
    parts, bytes, MIME type (``None``/``NOTSET``: detected) and description (``None``/``NOTSET``:
    the captioner writes one)."""

    position: int
    data: bytes
    mime_type: ImageMimeType | None | NotSetType = NOTSET
    description: str | None | NotSetType = NOTSET

    @property
    def caption(self) -> str | None:
        """The description given, if any."""
        return None if isinstance(self.description, NotSetType) else self.description


def parse_image_part(part: Mapping[str, Any], position: int = 0) -> ImageInput:
    """An image content part of a message, at ``position``: ``{"type": "image", "bytes": <raw
    bytes>}`` or ``{"type": "image", "data": <base64 text>}`` (JSON has no bytes), with an
    optional ``"mime_type"`` (else detected) and ``"description"`` (else the captioner writes one)."""
    if ("bytes" in part) == ("data" in part):
        raise ValidationError(
            'An image content part carries its image as "bytes" (raw bytes) or "data" (base64 text): one of them.'
        )
    if "bytes" in part:
        raw = raw_image_bytes(part["bytes"])
    else:
        raw = _base64(part["data"], 'An image content part\'s "data" must be base64 text.')
    description = part.get("description", NOTSET)
    if _set(description) and description is not None:
        description = image_description(description)
    return ImageInput(position, raw, _mime_type(part.get("mime_type", NOTSET)), description)


def image_description(value: object) -> str:
    """An image's description as given (or as a captioner wrote it): non-empty text."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("description must be a non-empty string, or None to generate one.")
    return check_text(value, "description")


DATA_URL_PREFIX = "data:"
BASE64_SUFFIX = ";base64"
_JSON_IMAGE_MESSAGE = "image must be base64 text or a data URL (data:<MIME type>;base64,<base64 text>)."


def _json_image(values: dict[str, Any]) -> dict[str, Any]:
    """A JSON object's ``image`` as bytes: base64 text, or a data URL whose MIME type stands for
    an omitted ``mime_type`` (a different ``mime_type`` is refused)."""
    if "image" not in values:
        return values
    text = values["image"]
    if isinstance(text, str) and text.startswith(DATA_URL_PREFIX):
        header, comma, text = text.partition(",")
        if not comma or not header.endswith(BASE64_SUFFIX):
            raise ValidationError(_JSON_IMAGE_MESSAGE)
        mime = header[len(DATA_URL_PREFIX) : -len(BASE64_SUFFIX)]
        if values.setdefault("mime_type", mime) != mime:
            raise ValidationError("mime_type differs from the MIME type of the image's data URL.")
    values["image"] = _base64(text, _JSON_IMAGE_MESSAGE)
    return values


def _json_limits(values: dict[str, Any]) -> dict[str, Any]:
    """A JSON object's ``image_input_limit_config`` (an object of the limits' fields) as the config."""
    limits = values.get("image_input_limit_config")
    if isinstance(limits, Mapping):
        values["image_input_limit_config"] = _config_from_json(ImageInputLimitConfig, limits, "image_input_limit_config")
    return values


def _config_from_json(cls: type[Any], mapping: Mapping[str, Any], name: str) -> Any:
    """A configuration value from a JSON object of its fields (an unknown one is refused)."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in mapping if k not in known)
    if unknown:
        raise ValidationError(f"{name} does not take: {', '.join(unknown)}.")
    return cls(**mapping)


def _mime_type(value: object) -> ImageMimeType | None | NotSetType:
    """``NOTSET`` and ``None`` (detect it from the bytes) stay; anything else is parsed."""
    return value if value is None or isinstance(value, NotSetType) else parse_mime_type(value)


def _requested_limits(value: object) -> ImageInputLimitConfig | None:
    """The call's own image limits: omitted → ``None`` (the thread's, then the client's)."""
    if isinstance(value, NotSetType):
        return None
    if not isinstance(value, ImageInputLimitConfig):
        raise ConfigurationError("image_input_limit_config must be an ImageInputLimitConfig.")
    return value


def _check_ids(obj: object, *names: str) -> None:
    """Check the scope ids of a request that were given (``None`` is a value)."""
    for name in names:
        value = getattr(obj, name)
        if _set(value):
            check_optional_id(value, name)


@dataclass(frozen=True, slots=True)
class AddImage(_Request, _Scoped):
    """``add_image``: a standalone image (raw bytes; PNG, JPEG or WebP, detected when
    ``mime_type`` is omitted or ``None``), its description (omitted or ``None``: the captioner
    writes one) and scope. The limits of ``image_input_limit_config`` are the call's own.

    In JSON, ``image`` is base64 text or a data URL (``data:image/png;base64,...``, whose MIME
    type stands for an omitted ``mime_type``), and ``image_input_limit_config`` an object of
    :class:`ImageInputLimitConfig`'s fields."""

    image: bytes
    description: str | None | NotSetType = NOTSET
    mime_type: ImageMimeType | str | None | NotSetType = NOTSET
    image_id: str | None | NotSetType = NOTSET
    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET
    image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _frozen_set(self, "image", raw_image_bytes(self.image))
        _frozen_set(self, "mime_type", _mime_type(self.mime_type))
        _check_ids(self, "user_id", "agent_id", "thread_id")
        if _set(self.image_id) and self.image_id is not None:
            check_id(self.image_id, "image_id")
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))
        _ttl(self, self.ttl_days, self.ttl_anchor)
        if _set(self.description) and self.description is not None:
            _frozen_set(self, "description", image_description(self.description))
        _frozen_set(self, "image_input_limit_config", _requested_limits(self.image_input_limit_config))

    @classmethod
    def _from_json_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        return _json_limits(_json_image(values))

    @property
    def mime(self) -> ImageMimeType | None | NotSetType:
        """``mime_type`` parsed (``None``, ``NOTSET``: detected from the bytes)."""
        return self.mime_type  # type: ignore[return-value]

    @property
    def limits(self) -> ImageInputLimitConfig | None:
        """The call's own limits (``None``: the thread's, then the client's)."""
        return self.image_input_limit_config  # type: ignore[return-value]

    @property
    def event_time(self) -> datetime | None:
        return None if isinstance(self.timestamp, NotSetType) else self.timestamp  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class UpdateImage(_Request):
    """``update_image``: new bytes (``image`` and ``mime_type`` together; ``mime_type=None``
    detects it), description (``None``: the captioner writes a new one), metadata, timestamp or
    time to live; omitted fields stay. In JSON, ``image`` as :class:`AddImage` takes it."""

    image_id: str
    image: bytes | NotSetType = NOTSET
    description: str | None | NotSetType = NOTSET
    mime_type: ImageMimeType | str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET
    timestamp: datetime | str | None | NotSetType = NOTSET
    ttl_days: float | None | NotSetType = NOTSET
    ttl_anchor: TimeToLiveAnchor | str | NotSetType = NOTSET

    def __post_init__(self) -> None:
        check_id(self.image_id, "image_id")
        if isinstance(self.image, NotSetType) != isinstance(self.mime_type, NotSetType):
            raise ValidationError("image and mime_type must be updated together.")
        fields = (self.image, self.description, self.metadata, self.timestamp, self.ttl_days, self.ttl_anchor)
        if all(isinstance(v, NotSetType) for v in fields):
            raise ValidationError(
                "Provide at least one of image, description, metadata, timestamp, ttl_days or ttl_anchor."
            )
        if _set(self.image):
            _frozen_set(self, "image", raw_image_bytes(self.image))
        _frozen_set(self, "mime_type", _mime_type(self.mime_type))
        if _set(self.description) and self.description is not None:
            _frozen_set(self, "description", image_description(self.description))
        _frozen_set(self, "metadata", _metadata(self.metadata))
        _frozen_set(self, "timestamp", _timestamp(self.timestamp))
        _ttl(self, self.ttl_days, self.ttl_anchor)

    @classmethod
    def _from_json_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        return _json_image(values)

    @property
    def mime(self) -> ImageMimeType | None | NotSetType:
        """``mime_type`` parsed (``None``, ``NOTSET``: detected from the bytes)."""
        return self.mime_type  # type: ignore[return-value]

    @property
    def event_time(self) -> datetime | None | NotSetType:
        """The new event time, parsed (``NOTSET``: unchanged)."""
        return self.timestamp  # type: ignore[return-value]

    @property
    def changes_expiry(self) -> bool:
        return _set(self.ttl_days) or _set(self.ttl_anchor)


@dataclass(frozen=True, slots=True)
class ListImages(_Request, _Scoped):
    """``list_images``: images of a scope (a thread handle's is its thread's), oldest first;
    ``limit`` keeps the newest; ``include_bytes=True`` only with one ``image_id``."""

    image_id: str | NotSetType = NOTSET
    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    include_bytes: bool | NotSetType = NOTSET
    limit: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _check_ids(self, "user_id", "agent_id", "thread_id")
        if self.include_bytes is not True and self.include_bytes is not False and _set(self.include_bytes):
            raise ValidationError("include_bytes must be True or False.")
        if self.include_bytes is True and isinstance(self.image_id, NotSetType):
            raise ValidationError("include_bytes=True needs an image_id (bytes are loaded for one image at a time).")
        if _set(self.image_id):
            check_id(self.image_id, "image_id")
        if _set(self.metadata_filter):
            _frozen_set(self, "metadata_filter", validate_metadata_filter(self.metadata_filter))
        _frozen_set(self, "limit", _limit(self.limit))


# -- users and agents (their profiles) -------------------------------------------------------


PROFILE_OWNERS: Mapping[RecordType, str] = {RecordType.USER_PROFILE: "user_id", RecordType.AGENT_PROFILE: "agent_id"}
"""The profile types and the scope dimension whose id names each one's owner."""


def _profile_kind(kind: object) -> RecordType:
    try:
        parsed = RecordType(kind)
    except ValueError:
        parsed = None
    if parsed not in PROFILE_OWNERS:
        raise ValidationError(f"{kind!r} is not a profile type.")
    return parsed  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class _ProfileRequest(_Request):
    """What the profile requests share: ``kind`` (``RecordType.USER_PROFILE`` or
    ``AGENT_PROFILE``, or their names ``"user_profile"``, ``"agent_profile"``)."""

    kind: RecordType | str

    def __post_init__(self) -> None:
        _frozen_set(self, "kind", _profile_kind(self.kind))

    @property
    def owner(self) -> str:
        """The scope dimension of the profile's id: ``"user_id"`` or ``"agent_id"``."""
        return PROFILE_OWNERS[self.kind]  # type: ignore[index]

    @property
    def record_type(self) -> RecordType:
        return self.kind  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class AddProfile(_ProfileRequest):
    """``add_user``/``add_agent``: the profile of user (agent) ``profile_id``; ``metadata``
    omitted keeps a stored profile's, ``None`` clears it."""

    profile_id: str
    information: str
    metadata: dict[str, Any] | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _ProfileRequest.__post_init__(self)
        check_id(self.profile_id, self.owner)
        if self.information is None:
            raise ValidationError("profile information cannot be None.")
        if not isinstance(self.information, str) or not self.information.strip():
            raise ValidationError("profile information must be a non-empty string.")
        check_text(self.information, "profile information")
        _frozen_set(self, "metadata", _metadata(self.metadata))


@dataclass(frozen=True, slots=True)
class DeleteProfile(_ProfileRequest):
    """``delete_user``/``delete_agent``: the profile, and with ``cascade`` (the default)
    everything the user (agent) owns."""

    profile_id: str
    cascade: bool = True

    def __post_init__(self) -> None:
        _ProfileRequest.__post_init__(self)
        check_id(self.profile_id, self.owner)
        if self.cascade is not True and self.cascade is not False:
            raise ValidationError("cascade must be True or False.")


@dataclass(frozen=True, slots=True)
class ListProfiles(_ProfileRequest):
    """``list_users``/``list_agents``: ``metadata_filter=None`` lists those without metadata;
    ``limit`` keeps the newest (omitted or ``None``: all)."""

    metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET
    limit: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _ProfileRequest.__post_init__(self)
        _frozen_set(self, "limit", _limit(self.limit))


# -- messages of every thread ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListMessages(ListRecords):
    """``list_messages``: the filters of :class:`ListRecords` over every thread's messages;
    ``include_image_bytes=True`` loads the bytes of their images."""

    include_image_bytes: bool | NotSetType = NOTSET

    def __post_init__(self) -> None:
        _check_ids(self, "user_id", "agent_id", "thread_id")
        flag = self.include_image_bytes
        if flag is not True and flag is not False and _set(flag):
            raise ValidationError("include_image_bytes must be True or False.")
        ListRecords.__post_init__(self)

    @property
    def image_bytes(self) -> bool:
        return self.include_image_bytes is True


# -- threads ---------------------------------------------------------------------------------


def _json_thread_configs(values: dict[str, Any]) -> dict[str, Any]:
    """A JSON object's thread configurations as their values (``search_config`` in its
    persisted form, ``{"type": "base"|"top_k", ...}``)."""
    extraction = values.get("memory_extraction_config")
    if isinstance(extraction, Mapping):
        values["memory_extraction_config"] = _config_from_json(
            MemoryExtractionConfig, extraction, "memory_extraction_config"
        )
    if isinstance(values.get("search_config"), Mapping):
        values["search_config"] = MemorySearchConfig.from_json(values["search_config"])
    return _json_limits(values)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadOptions(_Request):
    """The settings keywords ``create_thread``, ``get_thread`` and ``update_thread`` share,
    parsed once: ``llm`` only as ``None``; the deprecated inline extraction keywords folded
    into ``memory_extraction_config`` (with a ``DeprecationWarning``; with it, a
    ``ConfigurationError``) and left omitted. What they resolve to is the thread service's.
    A JSON object does not take those deprecated keywords (it gives ``memory_extraction_config``)."""

    KEYWORD_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset(DEPRECATED_EXTRACTION_KEYWORDS)

    llm: None | NotSetType = NOTSET
    max_message_token_length: int | NotSetType = NOTSET
    message_shortening_input_token_limit: int | NotSetType = NOTSET
    memory_extraction_config: MemoryExtractionConfig | NotSetType = NOTSET
    search_config: MemorySearchConfig | None | NotSetType = NOTSET
    context_card_token_limit: int | NotSetType = NOTSET
    context_card_type_search_concurrency: int | NotSetType = NOTSET
    extract_memories: bool | NotSetType = NOTSET
    memory_extraction_window: int | NotSetType = NOTSET
    context_summary_update_frequency: int | NotSetType = NOTSET
    memory_extraction_frequency: int | NotSetType = NOTSET
    memory_extraction_token_limit: int | NotSetType = NOTSET
    memory_extraction_custom_instructions: str | None | NotSetType = NOTSET
    memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSetType = NOTSET
    enable_context_summary: bool | NotSetType = NOTSET
    image_input_limit_config: ImageInputLimitConfig | NotSetType = NOTSET

    def __post_init__(self) -> None:
        self._parse_options()

    def _parse_options(self) -> None:
        check_llm(self.llm)
        deprecated = [getattr(self, name) for name in DEPRECATED_EXTRACTION_KEYWORDS]
        folded = fold_deprecated_extraction(self.memory_extraction_config, *deprecated)
        _frozen_set(self, "memory_extraction_config", folded)
        for name in DEPRECATED_EXTRACTION_KEYWORDS:
            _frozen_set(self, name, NOTSET)

    @classmethod
    def _from_json_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        return _json_thread_configs(values)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateThread(ThreadOptions):
    """``create_thread``: the thread's ids (``thread_id`` generated when omitted), metadata and
    settings."""

    thread_id: str | NotSetType = NOTSET
    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    metadata: dict[str, Any] | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        self._parse_options()
        if _set(self.thread_id):
            check_id(self.thread_id, "thread_id")
        _check_ids(self, "user_id", "agent_id")
        _frozen_set(self, "metadata", _metadata(self.metadata))


@dataclass(frozen=True, slots=True, kw_only=True)
class GetThread(ThreadOptions):
    """``get_thread``: a stored thread, with setting overrides for the returned handle only."""

    thread_id: str

    def __post_init__(self) -> None:
        self._parse_options()
        check_id(self.thread_id, "thread_id")


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateThread(ThreadOptions):
    """``update_thread``: new metadata (whole replace; ``None`` clears) and durable setting
    overrides. The search concurrency is not persisted, so not taken here."""

    JSON_ONLY_FIELDS: ClassVar[frozenset[str]] = frozenset({"context_card_type_search_concurrency"})

    thread_id: str
    metadata: dict[str, Any] | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        if _set(self.context_card_type_search_concurrency):
            raise ValidationError("update_thread does not take context_card_type_search_concurrency (it is not persisted).")
        self._parse_options()
        check_id(self.thread_id, "thread_id")
        _frozen_set(self, "metadata", _metadata(self.metadata))
