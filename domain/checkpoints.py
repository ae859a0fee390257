"""Domain layer: the stored form of an agent framework's graph checkpoints (ARCHITECTURE.md D41).

A store that offers :class:`~palimpsest.domain.ports.CheckpointStorage` keeps these rows beside
its memory, in the same transactions, so a thread's checkpoints live and die with the thread.
The values are opaque here: a checkpoint, a channel value and a pending write are each a
:class:`TypedBytes` written by the driving adapter's serializer (the store never interprets
them). What the store does read is plain: ids, the parent link, the run id, the JSON metadata
(for filters) and the channel versions (which blobs a checkpoint still needs).

Keys are LangGraph's: ``(thread_id, checkpoint_ns, checkpoint_id)``. Checkpoint ids are
time-ordered strings (UUIDv6), so "newest" is the greatest id in a thread and namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .metadata_filter import json_equal

__all__ = [
    "NO_VALUE_TYPE",
    "ChannelBlob",
    "CheckpointWrite",
    "StoredCheckpoint",
    "TypedBytes",
    "check_checkpoint_filter",
    "checkpoint_metadata_matches",
]

NO_VALUE_TYPE = "empty"
"""The type tag of a :class:`TypedBytes` that records "no value" (a channel versioned but empty
at that version): the one tag the application reads, to know how far back a value lies."""


@dataclass(frozen=True, slots=True)
class TypedBytes:
    """A serialized value and the serializer's type tag for it (``"msgpack"``, ``"null"``...)."""

    type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """One checkpoint row.

    ``checkpoint`` is the serialized checkpoint without its channel values (those are
    :class:`ChannelBlob` rows keyed by the versions in ``channel_versions``). ``metadata`` is a
    JSON object (filters compare its top-level keys by equality). ``run_id`` is the run that
    wrote it, when the metadata names one. ``created_at`` is the time of the put by the client's clock (retention by age reads it).
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: TypedBytes
    metadata: Mapping[str, Any]
    channel_versions: Mapping[str, str]
    run_id: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ChannelBlob:
    """The value of one channel at one version, in one thread and namespace."""

    channel: str
    version: str
    value: TypedBytes


@dataclass(frozen=True, slots=True)
class CheckpointWrite:
    """One pending write of a task against a checkpoint.

    ``idx`` is the write's index within the task (negative for LangGraph's special channels,
    which a later write of the same task and index replaces). ``task_path`` orders the writes
    of one super-step as live execution applies them."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: TypedBytes


def check_checkpoint_filter(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A checkpoint listing's metadata filter as a plain dict (``None`` or empty: no filter).

    Its keys are strings; its values are JSON values compared by equality (a nested object or
    array is a value, not a filter; ``None`` is JSON ``null``). ``ValidationError`` otherwise."""
    if not metadata:
        return None
    if not isinstance(metadata, Mapping) or not all(isinstance(key, str) for key in metadata):
        raise ValidationError("a checkpoint metadata filter must be a mapping with string keys.")
    return dict(metadata)


def checkpoint_metadata_matches(metadata: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Does a checkpoint's ``metadata`` have every key of ``flt`` with an equal JSON value?

    JSON equality (:func:`~palimpsest.domain.metadata_filter.json_equal`): types are strict
    (``True`` is not ``1``; ``1`` equals ``1.0``), objects compare by keys and values, arrays by
    order; a missing key never matches, not even ``None``. The one definition every store's
    checkpoint listing agrees with."""
    if not flt:
        return True
    return all(key in metadata and json_equal(metadata[key], value) for key, value in flt.items())
