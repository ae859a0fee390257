"""Application layer: the one codec between the domain's entities and JSON-safe objects.

Threads, messages, memory records, links and summary revisions become ``dict`` objects that
``json.dumps`` writes as they are (``"kind"`` first; times ISO 8601 in UTC with microseconds;
enums by value; ``topics`` a list), and such objects become entities again, through the
entities' own constructors, so every domain check applies to what is decoded. Export and
import (:mod:`.transfer`) and the command line's ``--json`` listings use it; a server that
speaks JSON uses it too, so one entity has one JSON shape everywhere.

Fields of each kind (the export format's, unchanged):

* ``thread`` — ``id, user_id, agent_id, metadata, config, state, created_at, updated_at``;
* ``message`` — ``id, thread_id, seq, role, content, timestamp, metadata, user_id, agent_id,
  created_at, expires_at``;
* ``memory`` — ``id, memory_type, content, user_id, agent_id, thread_id, metadata, status,
  invalidation_reason, invalidated_at, timestamp, expires_at, created_at, updated_at``;
* ``link`` — ``id, source_id, source_type, target_id, target_type, relation_type,
  opposite_relation_type, metadata, timestamp, created_at``;
* ``summary`` — ``id, thread_id, revision, text, topics, covered_through_seq, status, user_id,
  agent_id, metadata, created_at``.

Decoding refuses an unknown field, a missing required one, a time without a UTC offset and
anything an entity's constructor refuses, each as a :class:`ValidationError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, Thread, ThreadSummary

__all__ = [
    "ENTITY_KINDS",
    "FIELDS",
    "REQUIRED",
    "Entity",
    "decode",
    "decode_time",
    "encode",
    "encode_time",
    "kind_of",
]

Entity = Thread | Message | MemoryRecord | RecordLink | ThreadSummary
"""What the codec converts."""

ENTITY_KINDS: Final = ("thread", "message", "memory", "link", "summary")

FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "thread": ("id", "user_id", "agent_id", "metadata", "config", "state", "created_at", "updated_at"),
    "message": (
        "id",
        "thread_id",
        "seq",
        "role",
        "content",
        "timestamp",
        "metadata",
        "user_id",
        "agent_id",
        "created_at",
        "expires_at",
    ),
    "memory": (
        "id",
        "memory_type",
        "content",
        "user_id",
        "agent_id",
        "thread_id",
        "metadata",
        "status",
        "invalidation_reason",
        "invalidated_at",
        "timestamp",
        "expires_at",
        "created_at",
        "updated_at",
    ),
    "link": (
        "id",
        "source_id",
        "source_type",
        "target_id",
        "target_type",
        "relation_type",
        "opposite_relation_type",
        "metadata",
        "timestamp",
        "created_at",
    ),
    "summary": (
        "id",
        "thread_id",
        "revision",
        "text",
        "topics",
        "covered_through_seq",
        "status",
        "user_id",
        "agent_id",
        "metadata",
        "created_at",
    ),
}
"""Each kind's fields, in the order they are written (after ``"kind"``)."""

REQUIRED: Final[Mapping[str, frozenset[str]]] = {
    "thread": frozenset({"id", "created_at", "updated_at"}),
    "message": frozenset({"id", "thread_id", "seq", "role", "content", "created_at"}),
    "memory": frozenset({"id", "memory_type", "content", "created_at", "updated_at"}),
    "link": frozenset(
        {
            "id",
            "source_id",
            "source_type",
            "target_id",
            "target_type",
            "relation_type",
            "opposite_relation_type",
            "created_at",
        }
    ),
    "summary": frozenset({"id", "thread_id", "revision", "text", "created_at"}),
}
"""The fields a decoded object must carry; the others default as the entity's constructor says."""

_TIME_FIELDS: Final = frozenset({"created_at", "updated_at", "timestamp", "expires_at", "invalidated_at"})


def encode_time(value: datetime | None) -> str | None:
    """A time as ISO 8601 in UTC with microseconds (``None`` stays ``None``)."""
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def decode_time(value: Any, name: str) -> datetime | None:
    """An ISO 8601 time with a UTC offset, in UTC (``None`` stays ``None``); else ``ValidationError``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be an ISO 8601 time string or null.")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(f"{name} is not an ISO 8601 time: {value!r}.") from None
    if parsed.tzinfo is None:
        raise ValidationError(f"{name} must carry a UTC offset: {value!r}.")
    try:
        return parsed.astimezone(UTC)  # what the stores keep
    except OverflowError:
        raise ValidationError(f"{name} is out of the representable range in UTC: {value!r}.") from None


def kind_of(entity: Entity) -> str:
    """The ``"kind"`` an entity is written as."""
    if isinstance(entity, Thread):
        return "thread"
    if isinstance(entity, Message):
        return "message"
    if isinstance(entity, MemoryRecord):
        return "memory"
    if isinstance(entity, RecordLink):
        return "link"
    if isinstance(entity, ThreadSummary):
        return "summary"
    raise TypeError(f"cannot encode {type(entity).__name__}")


def encode(entity: Entity) -> dict[str, Any]:
    """The JSON-safe object of one entity, ``"kind"`` first, then its fields in :data:`FIELDS` order."""
    kind = kind_of(entity)
    values: dict[str, Any]
    if isinstance(entity, MemoryRecord):
        values = {
            "memory_type": entity.record_type.value,
            "status": entity.status.value,
        }
    elif isinstance(entity, RecordLink):
        values = {"source_type": entity.source_type.value, "target_type": entity.target_type.value}
    elif isinstance(entity, ThreadSummary):
        values = {"topics": list(entity.topics), "status": entity.status.value}
    else:
        values = {}
    obj: dict[str, Any] = {"kind": kind}
    for name in FIELDS[kind]:
        if name in values:
            obj[name] = values[name]
        elif name in _TIME_FIELDS:
            obj[name] = encode_time(getattr(entity, name))
        else:
            obj[name] = getattr(entity, name)
    return obj


def decode(obj: Mapping[str, Any], *, kind: str | None = None) -> Entity:
    """The entity ``obj`` describes. ``kind`` is taken from ``obj["kind"]`` unless given (an
    object without ``"kind"`` then decodes as that kind). ``ValidationError`` for an unknown
    kind or field, a missing required field, a bad time, or what the entity refuses."""
    fields = dict(obj)
    given = fields.pop("kind", None)
    if kind is None:
        kind = given
    elif given is not None and given != kind:
        raise ValidationError(f'"kind" is {given!r}, expected {kind!r}.')
    if kind not in FIELDS:
        raise ValidationError(f'"kind" must be one of {", ".join(ENTITY_KINDS)}; got {kind!r}.')
    unknown = sorted(set(fields) - set(FIELDS[kind]))
    if unknown:
        raise ValidationError(f"unknown field(s) for a {kind}: {', '.join(unknown)}.")
    missing = sorted(REQUIRED[kind] - set(fields))
    if missing:
        raise ValidationError(f"a {kind} needs {', '.join(missing)}.")
    for name in _TIME_FIELDS & set(fields):
        fields[name] = decode_time(fields[name], name)
    try:
        return _build(kind, fields)
    except TypeError as exc:  # a constructor given a value of a type it cannot compare or hash
        raise ValidationError(f"a {kind} has a field of the wrong type ({exc}).") from None


def _build(kind: str, fields: dict[str, Any]) -> Entity:
    if kind == "thread":
        return Thread(
            id=fields["id"],
            user_id=fields.get("user_id"),
            agent_id=fields.get("agent_id"),
            metadata=fields.get("metadata"),
            config=fields.get("config") or {},
            state=fields.get("state") or {},
            created_at=fields["created_at"],
            updated_at=fields["updated_at"],
        )
    if kind == "message":
        return Message(
            id=fields["id"],
            thread_id=fields["thread_id"],
            seq=fields["seq"],
            role=fields["role"],
            content=fields["content"],
            timestamp=fields.get("timestamp"),
            metadata=fields.get("metadata"),
            user_id=fields.get("user_id"),
            agent_id=fields.get("agent_id"),
            created_at=fields["created_at"],
            expires_at=fields.get("expires_at"),
        )
    if kind == "memory":
        return MemoryRecord(
            id=fields["id"],
            record_type=fields["memory_type"],
            content=fields["content"],
            user_id=fields.get("user_id"),
            agent_id=fields.get("agent_id"),
            thread_id=fields.get("thread_id"),
            metadata=fields.get("metadata"),
            status=fields.get("status", "valid"),
            invalidation_reason=fields.get("invalidation_reason"),
            invalidated_at=fields.get("invalidated_at"),
            timestamp=fields.get("timestamp"),
            expires_at=fields.get("expires_at"),
            created_at=fields["created_at"],
            updated_at=fields["updated_at"],
        )
    if kind == "link":
        return RecordLink(
            id=fields["id"],
            source_id=fields["source_id"],
            source_type=fields["source_type"],
            target_id=fields["target_id"],
            target_type=fields["target_type"],
            relation_type=fields["relation_type"],
            opposite_relation_type=fields["opposite_relation_type"],
            metadata=fields.get("metadata"),
            timestamp=fields.get("timestamp"),
            created_at=fields["created_at"],
        )
    topics = fields.get("topics") or []
    if not isinstance(topics, list):
        raise ValidationError("topics must be a list of strings.")
    return ThreadSummary(
        id=fields["id"],
        thread_id=fields["thread_id"],
        revision=fields["revision"],
        text=fields["text"],
        topics=tuple(topics),
        covered_through_seq=fields.get("covered_through_seq", 0),
        status=fields.get("status", "valid"),
        user_id=fields.get("user_id"),
        agent_id=fields.get("agent_id"),
        metadata=fields.get("metadata"),
        created_at=fields["created_at"],
    )
