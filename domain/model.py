"""Domain layer: the entities and value objects (threads, messages, memory records, links).

All are frozen, slotted dataclasses validated in ``__post_init__``; "changing" one means
building a new one with :func:`dataclasses.replace`. Times are timezone-aware UTC datetimes
passed in by the caller (the application reads them from a clock port), never read here.
Embeddings are not part of the entities: they belong to the index, not to the memory.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from .errors import (
    InvalidMetadataError,
    InvalidRecordTypeError,
    InvalidScopeError,
    ValidationError,
)

__all__ = [
    "MAX_COUNTER",
    "MAX_FAILURE_REASON_LENGTH",
    "MAX_ID_LENGTH",
    "MAX_JSON_INT_DIGITS",
    "MAX_SPEAKER_LENGTH",
    "MEMORY_RECORD_TYPES",
    "PROFILE_RECORD_TYPES",
    "RECORD_ROW_TYPES",
    "SEARCHABLE_RECORD_TYPES",
    "SPEAKER_KEY",
    "STORED_RECORD_TYPES",
    "UTC",
    "ZERO_TTL_MESSAGE",
    "ExtractionJob",
    "JobState",
    "MemoryRecord",
    "Message",
    "RecordLink",
    "RecordStatus",
    "RecordType",
    "Scope",
    "Thread",
    "ThreadSummary",
    "check_counter",
    "check_failure_reason",
    "check_id",
    "check_json_int",
    "check_metadata",
    "check_optional_id",
    "check_text",
    "check_time",
    "expiry_from_ttl",
    "failure_reason_of",
    "keyword_text",
    "parse_record_type",
    "profile_scope",
    "searched_text",
    "speaker_of",
    "turn_context",
]

_CONTROL: Final = re.compile("[\x00-\x1f]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""Lone surrogates: Python strings may hold them, but no UTF-8 store (SQLite, Oracle) can."""

MAX_ID_LENGTH: Final = 128
"""Ids, user ids, agent ids and labels fit a VARCHAR2(128) column on every backend."""

MAX_COUNTER: Final = 2**63 - 1
"""Seqs, revisions and job counters fit a signed 64-bit integer, the widest SQLite binds."""

MAX_JSON_INT_DIGITS: Final = 4300
"""Integers in JSON values (metadata, filters, settings) have at most this many digits: the
limit of CPython's int -> str conversion, past which ``json.dumps`` and ``json.loads`` fail."""

_JSON_INT_BOUND: Final = 10**MAX_JSON_INT_DIGITS


class RecordType(str, enum.Enum):
    """Kinds of searchable records. The first four are "memory-like" and can be linked; the
    two profiles are records too (stored, embedded and searched like memories) but are not
    memory-like: they are never linked, listed as memories or written by extraction; a
    message is a row of its thread; an image is a record row (its content is the image's
    description) whose bytes live beside it (:mod:`palimpsest.domain.images`)."""

    MEMORY = "memory"
    FACT = "fact"
    GUIDELINE = "guideline"
    PREFERENCE = "preference"
    MESSAGE = "message"
    USER_PROFILE = "user_profile"
    AGENT_PROFILE = "agent_profile"
    IMAGE = "image"

    def __str__(self) -> str:
        return self.value

    @property
    def is_memory_like(self) -> bool:
        return self in MEMORY_RECORD_TYPES

    @property
    def is_profile(self) -> bool:
        return self in PROFILE_RECORD_TYPES

    @property
    def is_record_row(self) -> bool:
        """Stored as a memory record (every type but ``message``): what a store's record
        table, record index and record search hold."""
        return self is not RecordType.MESSAGE


MEMORY_RECORD_TYPES: Final = frozenset(
    {RecordType.MEMORY, RecordType.FACT, RecordType.GUIDELINE, RecordType.PREFERENCE}
)
PROFILE_RECORD_TYPES: Final = frozenset({RecordType.USER_PROFILE, RecordType.AGENT_PROFILE})
"""A user's or an agent's profile: a :class:`MemoryRecord` whose id is that user's (agent's) id,
scoped to it on that dimension only (see :meth:`MemoryRecord.__post_init__`)."""
STORED_RECORD_TYPES: Final = frozenset(t for t in RecordType if t is not RecordType.MESSAGE)
"""The types a :class:`MemoryRecord` may have: every searchable type but ``message`` (the rows
of a store's record table, as opposed to its messages): memories, profiles and images."""
RECORD_ROW_TYPES: Final = STORED_RECORD_TYPES
SEARCHABLE_RECORD_TYPES: Final = frozenset(RecordType)


class RecordStatus(str, enum.Enum):
    """Lifecycle status. INVALID records are kept as history (never deleted by linking)."""

    VALID = "valid"
    INVALID = "invalid"

    def __str__(self) -> str:
        return self.value


def parse_record_type(
    value: object,
    *,
    memory_only: bool = False,
    record_row: bool = False,
    allowed: frozenset[RecordType] | None = None,
) -> RecordType:
    """Coerce ``"fact"`` or ``RecordType.FACT`` to ``RecordType.FACT``; raise on anything else
    (or on a type outside ``allowed``: by default every searchable type; ``memory_only``: the
    memory-like ones; ``record_row``: every type stored as a record)."""
    if allowed is None:
        allowed = MEMORY_RECORD_TYPES if memory_only else RECORD_ROW_TYPES if record_row else SEARCHABLE_RECORD_TYPES
    try:
        record_type = RecordType(value)
    except ValueError:
        record_type = None
    if record_type is None or record_type not in allowed:
        names = ", ".join(sorted(t.value for t in allowed))
        raise InvalidRecordTypeError(f"record type must be one of: {names}; got {value!r}.")
    return record_type


def check_id(value: object, what: str) -> str:
    """A non-empty, printable id of at most 128 characters."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}.")
    if not value.strip():
        raise ValidationError(f"{what} must not be empty.")
    if len(value) > MAX_ID_LENGTH:
        raise ValidationError(f"{what} must be at most {MAX_ID_LENGTH} characters.")
    if _CONTROL.search(value):
        raise ValidationError(f"{what} must not contain control characters.")
    return check_text(value, what)


def check_text(value: str, what: str) -> str:
    """Text that can be stored as UTF-8: no lone surrogate (e.g. from a bad ``surrogateescape``)."""
    if _SURROGATE.search(value):
        raise ValidationError(f"{what} must be valid Unicode text (it contains a lone surrogate).")
    return value


def check_optional_id(value: object, what: str) -> str | None:
    """Like :func:`check_id`, but ``None`` (unscoped) is allowed."""
    if value is None:
        return None
    try:
        return check_id(value, what)
    except ValidationError as exc:
        raise InvalidScopeError(str(exc)) from None


def check_time(value: object, what: str) -> datetime:
    """Timezone-aware datetimes only: a naive datetime is ambiguous across machines. Stores
    keep UTC, so the instant must also exist in UTC (``0001-01-01T00:00+01:00`` does not)."""
    if not isinstance(value, datetime):
        raise ValidationError(f"{what} must be a datetime, got {type(value).__name__}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{what} must be timezone-aware.")
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(f"{what} is out of the representable range in UTC: {value.isoformat()}.") from None
    return value


def check_counter(value: object, what: str, *, minimum: int = 1) -> int:
    """An integer of at least ``minimum`` that fits a signed 64-bit column (seqs, revisions)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_COUNTER:
        kind = "positive" if minimum == 1 else "non-negative"
        raise ValidationError(f"{what} must be a {kind} integer below 2**63.")
    return value


def check_json_int(value: int) -> bool:
    """Whether an integer can be written as JSON (at most ``MAX_JSON_INT_DIGITS`` digits)."""
    return -_JSON_INT_BOUND < value < _JSON_INT_BOUND


def _check_optional_time(value: object, what: str) -> datetime | None:
    return None if value is None else check_time(value, what)


def _check_json_value(value: object, path: str, depth: int = 0) -> None:
    if depth > 32:
        raise InvalidMetadataError(f"metadata is nested too deeply at {path}.")
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise InvalidMetadataError(f"metadata value at {path} contains a lone surrogate.")
        return
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not check_json_int(value):
            raise InvalidMetadataError(
                f"metadata integer at {path} has more than {MAX_JSON_INT_DIGITS} digits."
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidMetadataError(f"metadata value at {path} must be a finite number.")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(item, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidMetadataError(f"metadata keys must be strings (at {path}).")
            if _SURROGATE.search(key):
                raise InvalidMetadataError(f"metadata keys must be valid Unicode text (at {path}).")
            _check_json_value(item, f"{path}.{key}", depth + 1)
        return
    raise InvalidMetadataError(
        f"metadata value at {path} is not JSON-compatible ({type(value).__name__})."
    )


def _thaw(value: Any) -> Any:
    """A plain-JSON deep copy: mappings become dicts, tuples become lists."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


def check_metadata(value: object) -> dict[str, Any] | None:
    """``None`` or a JSON object; returns a private deep copy so callers cannot mutate state."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidMetadataError("metadata must be a dict or None.")
    _check_json_value(value, "$")
    thawed: dict[str, Any] = _thaw(value)
    return thawed


SPEAKER_KEY: Final = "speaker"
"""The metadata key naming who wrote a message (an OpenAI-style ``name`` field is stored there):
what tells apart the participants of a conversation of several people who share one role."""

MAX_SPEAKER_LENGTH: Final = 100


def speaker_of(metadata: Mapping[str, Any] | None) -> str | None:
    """A message's speaker: ``metadata["speaker"]`` when it is a string that is not empty once
    its spaces are trimmed (as SQL's ``TRIM`` does), else ``None``."""
    if not metadata:
        return None
    value = metadata.get(SPEAKER_KEY)
    return value.strip(" ") if isinstance(value, str) and value.strip(" ") else None


def searched_text(content: str, speaker: str | None) -> str:
    """What keyword search indexes for a message: ``"<speaker>: <content>"`` when it has a
    speaker (who said it is matched like a field of the text: a question naming one participant
    finds the turns they wrote), else the content. Memory records are indexed as they are."""
    return f"{speaker}: {content}" if speaker else content


def keyword_text(
    content: str, speaker: str | None, before_content: str | None = None, before_speaker: str | None = None
) -> str:
    """What keyword search indexes for a message (every store): :func:`searched_text`, after
    the searched text of the message just before it in its thread (``before_*``: its content
    and speaker) on a line of its own when both have a speaker. A conversation turn is read with
    the turn it answers ("Melanie: What are you researching?" / "Caroline: Adoption agencies."),
    so words split across the two both count."""
    own = searched_text(content, speaker)
    context = turn_context(speaker, before_content, before_speaker)
    return own if context is None else f"{context}\n{own}"


def turn_context(speaker: str | None, before_content: str | None, before_speaker: str | None) -> str | None:
    """The one rule of conversation context (keyword texts and index vectors alike): a turn is
    read after the searched text of the turn just before it when both have a speaker."""
    if speaker and before_speaker and before_content is not None:
        return searched_text(before_content, before_speaker)
    return None


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a record belongs to. ``None`` on a dimension means "unscoped on that dimension"."""

    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None

    def __post_init__(self) -> None:
        check_optional_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        check_optional_id(self.thread_id, "thread_id")


def profile_scope(record_type: RecordType, profile_id: str) -> Scope:
    """The scope of a profile: its id on its own dimension (user or agent), nothing else."""
    if record_type is RecordType.USER_PROFILE:
        return Scope(user_id=profile_id)
    if record_type is RecordType.AGENT_PROFILE:
        return Scope(agent_id=profile_id)
    raise InvalidRecordTypeError(f"{record_type.value!r} is not a profile type.")


@dataclass(frozen=True, slots=True)
class Thread:
    """A conversation. ``config``/``state`` hold persisted per-thread settings and counters."""

    id: str
    created_at: datetime
    updated_at: datetime
    user_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_id(self.id, "thread_id")
        check_optional_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        check_time(self.created_at, "created_at")
        check_time(self.updated_at, "updated_at")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))
        object.__setattr__(self, "config", check_metadata(self.config) or {})
        object.__setattr__(self, "state", check_metadata(self.state) or {})


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a thread. ``seq`` increases within a thread (gaps allowed after deletes).

    ``user_id``/``agent_id`` are copied from the thread so that messages can be scoped in
    search exactly like memories.
    """

    id: str
    thread_id: str
    role: str
    content: str
    seq: int
    created_at: datetime
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    expires_at: datetime | None = None
    parts: tuple[Any, ...] = field(default=(), compare=False)
    """The content parts, in order, of a message read with its images (text parts and
    :class:`~palimpsest.domain.images.ImagePart`); empty otherwise. Never stored as such: the
    text is ``content``, each image is an image record naming this message."""

    record_type: RecordType = field(default=RecordType.MESSAGE, init=False)

    def __post_init__(self) -> None:
        check_id(self.id, "message id")
        check_id(self.thread_id, "thread_id")
        if not isinstance(self.role, str) or not self.role.strip():
            raise ValidationError("message role must be a non-empty string.")
        if len(self.role) > 30:
            raise ValidationError("message role must be at most 30 characters.")
        if not isinstance(self.content, str):
            raise ValidationError("message content must be a string.")
        check_text(self.role, "message role")
        check_text(self.content, "message content")
        check_counter(self.seq, "message seq")
        check_time(self.created_at, "created_at")
        _check_optional_time(self.timestamp, "timestamp")
        _check_optional_time(self.expires_at, "expires_at")
        check_optional_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))

    @property
    def scope(self) -> Scope:
        return Scope(self.user_id, self.agent_id, self.thread_id)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def speaker(self) -> str | None:
        """Who wrote the message (:func:`speaker_of` its metadata), ``None`` when unnamed."""
        return speaker_of(self.metadata)

    @property
    def searched_text(self) -> str:
        """:func:`searched_text` of the message: its content, after its speaker when named."""
        return searched_text(self.content, self.speaker)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A typed, scoped memory (memory, fact, guideline or preference), a profile, or the record
    row of an image (type ``image``: its content is the description; see :mod:`palimpsest.domain.images`).

    A profile (``user_profile``, ``agent_profile``) describes one user (agent): its id *is*
    that user's (agent's) id, and its scope is that id on its own dimension and nothing on the
    others (a user profile has ``user_id == id`` and no agent or thread). So a search scoped to
    a user finds that user's profile and no other, on every store, through the scope filter
    every record obeys. A profile never expires and is always valid (it cannot be linked).

    ``status`` is derived: a record is INVALID exactly when at least one lifecycle link
    (supersedes, refines, duplicates) targets it, unless its caller set a status (``status=``),
    which holds until a link change touching it derives it again. ``invalidated_at`` records
    when it stopped being current and ``invalidation_reason`` why; both are cleared when it
    becomes valid again. ``timestamp`` is the optional event time (when the fact happened or
    was learned); ``valid_from`` falls back to the creation time.
    """

    id: str
    record_type: RecordType
    content: str
    created_at: datetime
    updated_at: datetime
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    status: RecordStatus = RecordStatus.VALID
    invalidation_reason: str | None = None
    invalidated_at: datetime | None = None
    timestamp: datetime | None = None
    expires_at: datetime | None = None

    def __post_init__(self) -> None:
        check_id(self.id, "memory id")
        object.__setattr__(self, "record_type", parse_record_type(self.record_type, allowed=STORED_RECORD_TYPES))
        if not isinstance(self.content, str):
            raise ValidationError("memory content must be a string.")
        if not self.content.strip():
            raise ValidationError("memory content must not be empty.")
        check_text(self.content, "memory content")
        check_time(self.created_at, "created_at")
        check_time(self.updated_at, "updated_at")
        check_optional_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        check_optional_id(self.thread_id, "thread_id")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))
        try:
            object.__setattr__(self, "status", RecordStatus(self.status))
        except ValueError:
            raise ValidationError(f"status must be 'valid' or 'invalid', got {self.status!r}.") from None
        _check_optional_time(self.invalidated_at, "invalidated_at")
        _check_optional_time(self.timestamp, "timestamp")
        _check_optional_time(self.expires_at, "expires_at")
        if self.status is RecordStatus.VALID and (
            self.invalidated_at is not None or self.invalidation_reason is not None
        ):
            raise ValidationError("a valid record carries no invalidation time or reason.")
        if self.record_type.is_profile:
            self._check_profile()

    def _check_profile(self) -> None:
        if self.scope != profile_scope(self.record_type, self.id):
            own = "user_id" if self.record_type is RecordType.USER_PROFILE else "agent_id"
            raise InvalidScopeError(
                f"a {self.record_type.value} is scoped to its own id as {own} and to nothing else."
            )
        if self.status is not RecordStatus.VALID or self.expires_at is not None:
            raise ValidationError(f"a {self.record_type.value} is always valid and never expires.")

    @property
    def scope(self) -> Scope:
        return Scope(self.user_id, self.agent_id, self.thread_id)

    @property
    def valid_from(self) -> datetime:
        return self.timestamp or self.created_at

    @property
    def is_valid(self) -> bool:
        return self.status is RecordStatus.VALID

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True, slots=True)
class RecordLink:
    """A directed, typed edge between two memory-like records.

    ``relation_type`` reads source → target ("B supersedes A"); ``opposite_relation_type``
    reads target → source ("A is_superseded_by B"). Lifecycle rules live in
    :mod:`palimpsest.domain.links`.
    """

    id: str
    source_id: str
    source_type: RecordType
    target_id: str
    target_type: RecordType
    relation_type: str
    opposite_relation_type: str
    created_at: datetime
    metadata: dict[str, Any] | None = None
    timestamp: datetime | None = None

    def __post_init__(self) -> None:
        check_id(self.id, "link id")
        check_id(self.source_id, "source_record_id")
        check_id(self.target_id, "target_record_id")
        object.__setattr__(self, "source_type", parse_record_type(self.source_type, memory_only=True))
        object.__setattr__(self, "target_type", parse_record_type(self.target_type, memory_only=True))
        check_id(self.relation_type, "relation_type")
        check_id(self.opposite_relation_type, "opposite_relation_type")
        check_time(self.created_at, "created_at")
        _check_optional_time(self.timestamp, "timestamp")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))

    def other_end(self, record_id: str) -> str:
        """The endpoint that is not ``record_id``."""
        return self.target_id if record_id == self.source_id else self.source_id

    def label_from(self, record_id: str) -> str:
        """The relation label as seen from ``record_id`` (the stored label or its opposite)."""
        return self.relation_type if record_id == self.source_id else self.opposite_relation_type

    @property
    def endpoints(self) -> frozenset[str]:
        return frozenset((self.source_id, self.target_id))


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One revision of a thread's durable summary.

    Revisions of a thread are numbered 1, 2, 3... and never reused: a refresh computed from
    revision ``r`` may only be stored as ``r + 1`` (compare-and-set), so two concurrent
    refreshes cannot both win and an invalidation (which stores an INVALID fence revision)
    cannot be overwritten by a refresh that read the summary before it.
    ``covered_through_seq`` is the seq of the last message the summary includes.
    """

    id: str
    thread_id: str
    revision: int
    text: str
    created_at: datetime
    topics: tuple[str, ...] = ()
    covered_through_seq: int = 0
    status: RecordStatus = RecordStatus.VALID
    user_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_id(self.id, "summary id")
        check_id(self.thread_id, "thread_id")
        check_counter(self.revision, "summary revision")
        if not isinstance(self.text, str):
            raise ValidationError("summary text must be a string.")
        check_text(self.text, "summary text")
        topics = tuple(self.topics)
        if not all(isinstance(t, str) for t in topics):
            raise ValidationError("summary topics must be strings.")
        for topic in topics:
            check_text(topic, "summary topic")
        object.__setattr__(self, "topics", topics)
        check_counter(self.covered_through_seq, "covered_through_seq", minimum=0)
        try:
            object.__setattr__(self, "status", RecordStatus(self.status))
        except ValueError:
            raise ValidationError(f"summary status must be 'valid' or 'invalid', got {self.status!r}.") from None
        if self.status is RecordStatus.VALID and not self.text.strip():
            raise ValidationError("a valid summary must have text.")
        check_time(self.created_at, "created_at")
        check_optional_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))

    @property
    def is_valid(self) -> bool:
        return self.status is RecordStatus.VALID


class JobState(str, enum.Enum):
    """Where an extraction job stands (see :meth:`ExtractionJob.state`)."""

    PENDING = "pending"  # waiting for its first attempt (or its worker vanished mid-attempt)
    RUNNING = "running"  # a worker holds its lease now
    RETRYING = "retrying"  # an attempt failed; the next one is due at ``claimed_until``
    FAILED = "failed"  # every allowed attempt failed; kept until retried or its thread is deleted


@dataclass(frozen=True, slots=True)
class ExtractionJob:
    """Pending extraction over messages ``first_seq..last_seq`` of a thread.

    Recorded in the same transaction as the messages it covers, so acknowledged messages are
    never left unextracted by a crash; a worker *claims* a job with a lease (``claimed_until``)
    and deletes it when done, and an expired lease lets another worker retry it. A failed
    attempt *postpones* the job: ``failure_reason`` keeps the attempt's reason and the lease
    runs to the time of the next attempt. A job that failed its last allowed attempt is kept,
    marked *failed* (``failed_at``), until it is retried or its thread is deleted.
    """

    id: str
    thread_id: str
    first_seq: int
    last_seq: int
    created_at: datetime
    attempts: int = 0
    claimed_by: str | None = None
    claimed_until: datetime | None = None
    failed_at: datetime | None = None
    failure_reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.failed_at is not None

    @property
    def last_error(self) -> str | None:
        """The reason of the last failed attempt (``None`` while no attempt has failed)."""
        return self.failure_reason

    def state(self, now: datetime) -> JobState:
        """Failed for good; retrying after a failed attempt; running under a live lease; or
        pending (never tried, or its worker's lease ran out)."""
        if self.failed_at is not None:
            return JobState.FAILED
        if self.failure_reason is not None:
            return JobState.RETRYING
        if self.claimed_until is not None and self.claimed_until > now:
            return JobState.RUNNING
        return JobState.PENDING

    def __post_init__(self) -> None:
        check_id(self.id, "job id")
        check_id(self.thread_id, "thread_id")
        for name in ("first_seq", "last_seq", "attempts"):
            check_counter(getattr(self, name), name, minimum=0)
        if self.first_seq > self.last_seq:
            raise ValidationError("first_seq must not exceed last_seq.")
        check_time(self.created_at, "created_at")
        _check_optional_time(self.claimed_until, "claimed_until")
        _check_optional_time(self.failed_at, "failed_at")
        if self.failed_at is not None or self.failure_reason is not None:
            check_failure_reason(self.failure_reason)


MAX_FAILURE_REASON_LENGTH: Final = 2000


def check_failure_reason(reason: object) -> str:
    """A failed job's reason: a non-empty string of at most ``MAX_FAILURE_REASON_LENGTH``
    characters (see :func:`failure_reason_of` to shorten an arbitrary message)."""
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError("failure_reason must be a non-empty string.")
    if len(reason) > MAX_FAILURE_REASON_LENGTH:
        raise ValidationError(f"failure_reason must have at most {MAX_FAILURE_REASON_LENGTH} characters.")
    if "\x00" in reason:
        raise ValidationError("failure_reason must not contain NUL characters.")
    return check_text(reason, "failure_reason")


def failure_reason_of(error: BaseException) -> str:
    """``"TypeName: message"`` of an exception, cleaned and shortened to a valid reason."""
    text = f"{type(error).__name__}: {error}".strip().rstrip(":")
    text = _SURROGATE.sub("\ufffd", text.replace("\x00", " "))
    if len(text) > MAX_FAILURE_REASON_LENGTH:
        text = text[: MAX_FAILURE_REASON_LENGTH - 1] + "\u2026"
    return text


ZERO_TTL_MESSAGE: Final = (
    "ttl_days=0 would make the record expire at once; pass a positive number of days, or None for no expiry."
)
"""Why a TTL of 0 days is refused: the row would be written, its id returned, and no read see it."""


def expiry_from_ttl(now: datetime, ttl_days: float | None) -> datetime | None:
    """``None`` ttl means "never expires"; a positive number of days otherwise (0 is refused:
    the record would expire at once)."""
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, (int, float)) or not math.isfinite(ttl_days):
        raise ValidationError("ttl_days must be a number of days or None.")
    if ttl_days < 0:
        raise ValidationError("ttl_days must be non-negative.")
    if ttl_days == 0:
        raise ValidationError(ZERO_TTL_MESSAGE)
    return now + timedelta(days=ttl_days)
