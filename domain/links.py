"""Domain layer: the link lifecycle rules, as pure functions over entities and a given time.

The rules (shared by every store):

* built-in relation types carry a fixed opposite label: supersedes ↔ is_superseded_by,
  refines ↔ is_refined_by, supports ↔ is_supported_by; duplicates and contradicts are
  symmetric. A custom label reads the same both ways unless an opposite is given.
* supersedes, refines and duplicates are *lifecycle* links: their target becomes INVALID and
  stays as history. A record is INVALID exactly when at least one lifecycle link targets it,
  so retyping or deleting a link re-derives the status of both endpoints.
* no self-links; (source, target, relation_type) is unique; a pair of records is linked in
  one orientation only (A→B forbids any B→A).
* links stay inside one tenant (:func:`check_link_scope`): never between two users' records,
  nor two agents' records; an unscoped record may be the target of any user's record, never
  the source of a link into a user's record.

The application service loads what a decision needs, calls these functions, and persists the
outcome in one unit of work (the "determine actions" pattern): no rule lives in a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from .errors import (
    CrossScopeLinkError,
    InvalidLinkError,
    LinkEndpointTypeError,
    LinkExistsError,
    LinkOrientationError,
    SelfLinkError,
)
from .events import DomainEvent, RecordInvalidated, RecordRevalidated
from .model import MemoryRecord, RecordLink, RecordStatus, check_id

__all__ = [
    "BUILTIN_OPPOSITES",
    "CALLER_INVALIDATION_REASON",
    "LIFECYCLE_REASONS",
    "LIFECYCLE_TYPES",
    "check_link_request",
    "check_link_scope",
    "derive_status",
    "is_lifecycle",
    "new_link",
    "opposite_label",
    "retype_link",
    "set_status",
]

BUILTIN_OPPOSITES: Final[Mapping[str, str]] = {
    "supersedes": "is_superseded_by",
    "refines": "is_refined_by",
    "duplicates": "duplicates",
    "contradicts": "contradicts",
    "supports": "is_supported_by",
}

LIFECYCLE_REASONS: Final[Mapping[str, str]] = {
    "supersedes": "Superseded by another memory.",
    "refines": "Refined by another memory.",
    "duplicates": "Duplicated by another memory.",
}

LIFECYCLE_TYPES: Final = frozenset(LIFECYCLE_REASONS)

CALLER_INVALIDATION_REASON: Final = "Set invalid by the caller."
"""The ``invalidation_reason`` of a record its caller set invalid (``status=`` on add or update)."""


def is_lifecycle(relation_type: str) -> bool:
    """True for the link types that retire their target (supersedes, refines, duplicates)."""
    return relation_type in LIFECYCLE_TYPES


def opposite_label(relation_type: str, opposite: str | None = None) -> str:
    """The target → source label: forced for built-ins, ``opposite`` or the same label otherwise."""
    check_id(relation_type, "relation_type")
    if relation_type in BUILTIN_OPPOSITES:
        return BUILTIN_OPPOSITES[relation_type]
    if opposite is None:
        return relation_type
    return check_id(opposite, "opposite_relation_type")


def check_link_scope(source: MemoryRecord, target: MemoryRecord, relation_type: str | None = None) -> None:
    """Refuse ``source → target`` when it would join two tenants (:class:`CrossScopeLinkError`).

    A link changes its endpoints (a lifecycle link retires its target; deleting a record
    re-derives its partners), so a link across users would let one user's write change
    another's records. Refused: two different users; two different agents (when both ends
    have one); an unscoped source with a user's target, as a global write must not retire or
    attach to a user's record. A user's record may link to an unscoped (global) one, but not
    with a lifecycle type (``relation_type``), which would retire the global record for every
    user. The message names records, never the tenants they belong to.
    """
    if (
        relation_type is not None
        and is_lifecycle(relation_type)
        and target.user_id is None
        and source.user_id is not None
    ):
        raise CrossScopeLinkError(
            f"{source.id!r} belongs to a user and cannot {relation_type} {target.id!r}, which has no user: "
            "that would retire a shared record for every user; a supports, contradicts or custom link may join them."
        )
    if target.user_id is not None and source.user_id != target.user_id:
        if source.user_id is None:
            raise CrossScopeLinkError(
                f"{source.id!r} has no user and cannot link to {target.id!r}, which belongs to a user; "
                "a user's records are linked only by records of the same user."
            )
        raise CrossScopeLinkError(
            f"{source.id!r} and {target.id!r} belong to different users; links stay inside one user."
        )
    if source.agent_id is not None and target.agent_id is not None and source.agent_id != target.agent_id:
        raise CrossScopeLinkError(
            f"{source.id!r} and {target.id!r} belong to different agents; links stay inside one agent."
        )


def new_link(
    *,
    link_id: str,
    source: MemoryRecord,
    target: MemoryRecord,
    relation_type: str,
    existing_between: Iterable[RecordLink],
    now: datetime,
    opposite_relation_type: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    timestamp: datetime | None = None,
) -> RecordLink:
    """Decide whether ``source -[relation_type]-> target`` may be created, and build it.

    ``existing_between`` are all stored links joining the two records, in either direction.
    Raises :class:`SelfLinkError`, :class:`CrossScopeLinkError`, :class:`LinkExistsError` or
    :class:`LinkOrientationError`.
    """
    if source.id == target.id:
        raise SelfLinkError("A memory cannot be linked to itself.")
    for record in (source, target):
        if not record.record_type.is_memory_like:  # a profile
            raise LinkEndpointTypeError("Links join memory-like records only.")
    check_link_scope(source, target, relation_type)
    opposite = opposite_label(relation_type, opposite_relation_type)
    for link in existing_between:
        if link.source_id == target.id and link.target_id == source.id:
            raise LinkOrientationError(
                f"{source.id!r} and {target.id!r} are already linked as {target.id!r} → {source.id!r} "
                f"({link.relation_type}); a pair of records is linked in one orientation only."
            )
        if link.source_id == source.id and link.target_id == target.id and link.relation_type == relation_type:
            raise LinkExistsError(
                f"A {relation_type!r} link from {source.id!r} to {target.id!r} already exists ({link.id})."
            )
    return RecordLink(
        id=link_id,
        source_id=source.id,
        source_type=source.record_type,
        target_id=target.id,
        target_type=target.record_type,
        relation_type=relation_type,
        opposite_relation_type=opposite,
        created_at=now,
        metadata=dict(metadata) if metadata is not None else None,
        timestamp=timestamp,
    )


def retype_link(
    link: RecordLink,
    *,
    relation_type: str | None = None,
    opposite_relation_type: str | None = None,
    siblings: Sequence[RecordLink] = (),
    endpoints: tuple[MemoryRecord, MemoryRecord] | None = None,
) -> RecordLink:
    """Change a link's labels. Built-in types force their opposite; uniqueness still holds.

    ``siblings`` are the other stored links between the same two records. ``endpoints``
    (source, target), which the service always passes, are checked by :func:`check_link_scope`:
    a link that crosses tenants (stored before the rule) can be deleted, not changed.
    """
    if endpoints is not None:
        source, target = endpoints
        if (source.id, target.id) != (link.source_id, link.target_id):
            raise InvalidLinkError(f"The endpoints given are not those of link {link.id!r}.")
    new_type = link.relation_type if relation_type is None else check_id(relation_type, "relation_type")
    if endpoints is not None:
        check_link_scope(endpoints[0], endpoints[1], new_type)
    if new_type in BUILTIN_OPPOSITES:
        new_opposite = BUILTIN_OPPOSITES[new_type]
    elif opposite_relation_type is not None:
        new_opposite = check_id(opposite_relation_type, "opposite_relation_type")
    elif relation_type is not None and relation_type != link.relation_type:
        new_opposite = new_type
    else:
        new_opposite = link.opposite_relation_type
    for other in siblings:
        if other.id != link.id and other.source_id == link.source_id and other.relation_type == new_type:
            raise LinkExistsError(
                f"A {new_type!r} link from {link.source_id!r} to {link.target_id!r} already exists ({other.id})."
            )
    return replace(link, relation_type=new_type, opposite_relation_type=new_opposite)


def _first_lifecycle(incoming: Iterable[RecordLink], record_id: str) -> RecordLink | None:
    lifecycle = [l for l in incoming if l.target_id == record_id and is_lifecycle(l.relation_type)]
    if not lifecycle:
        return None
    return min(lifecycle, key=lambda l: (l.created_at, l.id))


def derive_status(
    record: MemoryRecord, links: Iterable[RecordLink], now: datetime
) -> tuple[MemoryRecord, tuple[DomainEvent, ...]]:
    """Recompute ``record``'s status from the links that touch it.

    INVALID iff a lifecycle link targets it; the reason comes from the earliest such link.
    A record that stays invalid keeps its original ``invalidated_at``.
    """
    cause = _first_lifecycle(links, record.id)
    if cause is None:
        if record.status is RecordStatus.VALID:
            return record, ()
        revalidated = replace(
            record, status=RecordStatus.VALID, invalidation_reason=None, invalidated_at=None, updated_at=now
        )
        return revalidated, (RecordRevalidated(record.id, now),)
    reason = LIFECYCLE_REASONS[cause.relation_type]
    if record.status is RecordStatus.INVALID:
        if record.invalidation_reason == reason:
            return record, ()
        return replace(record, invalidation_reason=reason, updated_at=now), ()
    invalidated = replace(
        record, status=RecordStatus.INVALID, invalidation_reason=reason, invalidated_at=now, updated_at=now
    )
    return invalidated, (RecordInvalidated(record.id, reason, now, cause.id),)


def set_status(record: MemoryRecord, status: RecordStatus, now: datetime) -> MemoryRecord:
    """``record`` with the status its caller set (ARCHITECTURE.md D2): INVALID with the
    caller's reason (a record already invalid keeps its reason and time), or VALID with both
    cleared. The next link change that touches the record derives its status from the links
    again (:func:`derive_status`)."""
    if status is RecordStatus.INVALID:
        if record.status is RecordStatus.INVALID:
            return record
        return replace(
            record, status=status, invalidation_reason=CALLER_INVALIDATION_REASON, invalidated_at=now
        )
    if record.status is RecordStatus.VALID:
        return record
    return replace(record, status=status, invalidation_reason=None, invalidated_at=None)


def check_link_request(relation_type: object) -> str:
    """Validate a relation label before any storage access."""
    if not isinstance(relation_type, str):
        raise InvalidLinkError("relation_type must be a string.")
    return check_id(relation_type, "relation_type")
