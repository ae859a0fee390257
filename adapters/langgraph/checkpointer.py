"""Adapters layer (LangGraph): ``PalimpsestSaver``, a ``BaseCheckpointSaver`` on the client's store.

A graph compiled with ``checkpointer=PalimpsestSaver(memory)`` keeps its checkpoints in the
same store as the memory (same file or database, same transactions, same backups), through
``memory.checkpoints`` (ARCHITECTURE.md D41). Every LangGraph call is one unit of work; the
async methods run the same code in a worker thread (``asyncio.to_thread``).

Layout, as LangGraph's own savers: a checkpoint row without its channel values, one blob per
``(channel, version)`` (versions are strings, as ``InMemorySaver``'s ``get_next_version`` makes
them), pending writes per task. Values go through :class:`CheckpointSerializer`, which reads
back only what it writes. With ``key=``, every value also carries an HMAC-SHA256 over its place
(thread, namespace, checkpoint id, parent and metadata; channel and version; task, index,
channel and path) and its bytes: a row altered, or moved to another thread or checkpoint, is
refused with ``CheckpointIntegrityError``, and so is a row without the tag.

``retention=CheckpointRetention(keep_latest=N, max_age=...)`` trims a thread's namespace after
each put, in the put's unit of work (a run's ``configurable["checkpoint_retention"]`` overrides it), keeping the newest checkpoint and the ancestors its delta
channels need (``prune("keep_latest")`` keeps them too).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import random
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from palimpsest.application import AgentMemory, CheckpointRetention, CheckpointState
from palimpsest.domain.checkpoints import NO_VALUE_TYPE, ChannelBlob, CheckpointWrite, TypedBytes
from palimpsest.domain.errors import ArgumentTypeError, CheckpointIntegrityError, ValidationError

from .serde import CheckpointSerializer

__all__ = ["RETENTION_CONFIG_KEY", "CheckpointRetention", "PalimpsestSaver"]

RETENTION_CONFIG_KEY = "checkpoint_retention"
"""The ``configurable`` key of a run's config whose ``CheckpointRetention`` (or ``None``: keep
everything) replaces the saver's for the checkpoints that run puts."""

_SEALED = "+hmac-sha256"
_MAC_SIZE = 32


def _json_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata as the store keeps it (a JSON object); tuples become lists."""
    try:
        value = json.loads(json.dumps(dict(metadata), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"Checkpoint metadata must be JSON (strings, numbers, lists, objects): {exc}") from exc
    return value  # type: ignore[no-any-return]


def _canonical(metadata: Mapping[str, Any]) -> str:
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _configurable(config: RunnableConfig) -> Mapping[str, Any]:
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping) or configurable.get("thread_id") is None:
        raise ValidationError('A checkpoint config needs {"configurable": {"thread_id": ...}}.')
    return configurable


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}}


class PalimpsestSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints in a palimpsest client's store (sync and async).

    ``memory``: the client (its store must offer checkpoints: every shipped store does, else
    ``ConfigurationError`` here). ``serde``: another serializer (the default,
    :class:`CheckpointSerializer`, reads only what it writes; ``allowed_types`` extends its
    allow-list). ``retention``: trimming applied after each put. ``key``: authenticate every
    stored value (at least 16 bytes)."""

    def __init__(
        self,
        memory: AgentMemory,
        *,
        serde: SerializerProtocol | None = None,
        retention: CheckpointRetention | None = None,
        key: bytes | None = None,
        allowed_types: Iterable[tuple[str, ...] | type] = (),
    ) -> None:
        if serde is not None and allowed_types:
            raise ValidationError("allowed_types= extends the default serializer; a given serde= has its own rules.")
        super().__init__(serde=serde if serde is not None else CheckpointSerializer(allowed_types))
        if retention is not None and not isinstance(retention, CheckpointRetention):
            raise ArgumentTypeError(f"retention must be a CheckpointRetention, not {type(retention).__name__}.")
        if key is not None and (not isinstance(key, bytes) or len(key) < 16):
            raise ValidationError("key must be bytes, at least 16 of them.")
        self._checkpoints = memory.checkpoints
        self._checkpoints.require()
        self._retention = retention
        self._key = key

    @property
    def retention(self) -> CheckpointRetention | None:
        """The retention applied after each put, if any."""
        return self._retention

    def with_allowlist(self, extra_allowlist: Iterable[tuple[str, ...]]) -> PalimpsestSaver:
        """A saver on the same store whose serializer also reads ``extra_allowlist``."""
        if not isinstance(self.serde, CheckpointSerializer):
            return self
        serde = self.serde.with_allowlist(extra_allowlist)
        if serde is self.serde:
            return self
        clone = object.__new__(PalimpsestSaver)
        clone.__dict__.update(self.__dict__)
        clone.serde = serde
        return clone

    # -- values in and out ----------------------------------------------------------------------

    def _mac(self, context: Sequence[str], type_: str, payload: bytes) -> bytes:
        assert self._key is not None
        digest = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in (*context, type_):
            encoded = part.encode("utf-8", "surrogatepass")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
        digest.update(payload)
        return digest.digest()

    def _seal(self, value: tuple[str, bytes], context: Sequence[str]) -> TypedBytes:
        type_, payload = value
        if self._key is None:
            return TypedBytes(type_, bytes(payload))
        mac = self._mac(context, type_, payload)
        if type_ == NO_VALUE_TYPE:  # stays recognisable as "no value" to the store's readers
            return TypedBytes(NO_VALUE_TYPE, mac)
        return TypedBytes(type_ + _SEALED, mac + bytes(payload))

    def _unseal(self, value: TypedBytes, context: Sequence[str]) -> tuple[str, bytes]:
        if self._key is None:
            if value.type.endswith(_SEALED):
                raise CheckpointIntegrityError("This checkpoint row is authenticated: open the saver with its key=.")
            return value.type, value.data
        if value.type == NO_VALUE_TYPE:
            type_, mac, payload = NO_VALUE_TYPE, value.data, b""
        elif value.type.endswith(_SEALED) and len(value.data) >= _MAC_SIZE:
            type_, mac, payload = value.type[: -len(_SEALED)], value.data[:_MAC_SIZE], value.data[_MAC_SIZE:]
        else:
            raise CheckpointIntegrityError(
                f"Refused a checkpoint row without an authentication tag ({', '.join(context[:2])})."
            )
        if not hmac.compare_digest(mac, self._mac(context, type_, payload)):
            raise CheckpointIntegrityError(
                f"Refused a checkpoint row whose authentication tag does not match it or its place ({', '.join(context)})."
            )
        return type_, payload

    def _load(self, value: TypedBytes, context: Sequence[str]) -> Any:
        return self.serde.loads_typed(self._unseal(value, context))

    @staticmethod
    def _checkpoint_context(thread_id: str, ns: str, checkpoint_id: str, parent: str | None, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        return ("checkpoint", thread_id, ns, checkpoint_id, parent or "", _canonical(metadata))

    @staticmethod
    def _blob_context(thread_id: str, ns: str, channel: str, version: str) -> tuple[str, ...]:
        return ("blob", thread_id, ns, channel, version)

    @staticmethod
    def _write_context(thread_id: str, ns: str, checkpoint_id: str, write: CheckpointWrite) -> tuple[str, ...]:
        return ("write", thread_id, ns, checkpoint_id, write.task_id, str(write.idx), write.channel, write.task_path)

    def _tuple(self, state: CheckpointState) -> CheckpointTuple:
        row = state.checkpoint
        thread_id, ns, checkpoint_id = row.thread_id, row.checkpoint_ns, row.checkpoint_id
        context = self._checkpoint_context(thread_id, ns, checkpoint_id, row.parent_checkpoint_id, row.metadata)
        checkpoint = self._load(row.checkpoint, context)
        values: dict[str, Any] = {}
        for channel, blob in state.blobs.items():
            plain = self._unseal(blob.value, self._blob_context(thread_id, ns, channel, blob.version))
            if plain[0] != NO_VALUE_TYPE:
                values[channel] = self.serde.loads_typed(plain)
        writes = [
            (w.task_id, w.channel, self._load(w.value, self._write_context(thread_id, ns, checkpoint_id, w)))
            for w in state.writes
        ]
        parent = row.parent_checkpoint_id
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=cast(Checkpoint, {**checkpoint, "channel_values": values}),
            metadata=cast(CheckpointMetadata, dict(row.metadata)),
            parent_config=_config(thread_id, ns, parent) if parent else None,
            pending_writes=writes,
        )

    def _reseal(self, state: CheckpointState, target: str) -> CheckpointState:
        """``state`` bound to thread ``target``: each value checked, then sealed for its new place."""
        row = state.checkpoint
        ns, checkpoint_id = row.checkpoint_ns, row.checkpoint_id
        old = self._checkpoint_context(row.thread_id, ns, checkpoint_id, row.parent_checkpoint_id, row.metadata)
        new = self._checkpoint_context(target, ns, checkpoint_id, row.parent_checkpoint_id, row.metadata)
        blobs = {
            channel: replace(
                blob,
                value=self._seal(
                    self._unseal(blob.value, self._blob_context(row.thread_id, ns, channel, blob.version)),
                    self._blob_context(target, ns, channel, blob.version),
                ),
            )
            for channel, blob in state.blobs.items()
        }
        writes = [
            replace(
                w,
                value=self._seal(
                    self._unseal(w.value, self._write_context(row.thread_id, ns, checkpoint_id, w)),
                    self._write_context(target, ns, checkpoint_id, w),
                ),
            )
            for w in state.writes
        ]
        checkpoint = replace(row, thread_id=target, checkpoint=self._seal(self._unseal(row.checkpoint, old), new))
        return CheckpointState(checkpoint=checkpoint, blobs=blobs, writes=writes)

    # -- BaseCheckpointSaver: sync --------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's newest)."""
        configurable = _configurable(config)
        state = self._checkpoints.get(
            str(configurable["thread_id"]), configurable.get("checkpoint_ns", ""), get_checkpoint_id(config)
        )
        return None if state is None else self._tuple(state)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, when it names one),
        every thread's without a config; ``filter`` compares metadata keys."""
        configurable = _configurable(config) if config is not None else None
        states = self._checkpoints.list(
            thread_id=None if configurable is None else str(configurable["thread_id"]),
            checkpoint_ns=None if configurable is None else configurable.get("checkpoint_ns"),
            checkpoint_id=None if config is None else get_checkpoint_id(config),
            before=None if before is None else get_checkpoint_id(before),
            metadata=None if not filter else _json_metadata(filter),
            limit=limit,
        )
        for state in states:
            yield self._tuple(state)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the blobs of its new channel versions (then the retention)."""
        configurable = _configurable(config)
        thread_id, ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        parent = configurable.get("checkpoint_id")
        checkpoint_id = checkpoint["id"]
        body: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = body.pop("channel_values")
        stored_metadata = _json_metadata(get_serializable_checkpoint_metadata(config, metadata))
        blobs = []
        for channel, version in new_versions.items():
            value = self.serde.dumps_typed(values[channel]) if channel in values else (NO_VALUE_TYPE, b"")
            blobs.append(
                ChannelBlob(
                    channel, str(version), self._seal(value, self._blob_context(thread_id, ns, channel, str(version)))
                )
            )
        run_id = stored_metadata.get("run_id")
        retention = configurable.get(RETENTION_CONFIG_KEY, self._retention)
        if retention is not None and not isinstance(retention, CheckpointRetention):
            raise ArgumentTypeError(f"{RETENTION_CONFIG_KEY} must be a CheckpointRetention or None, not {type(retention).__name__}.")
        self._checkpoints.put(
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent,
            checkpoint=self._seal(
                self.serde.dumps_typed(body),
                self._checkpoint_context(thread_id, ns, checkpoint_id, parent, stored_metadata),
            ),
            metadata=stored_metadata,
            channel_versions={channel: str(version) for channel, version in checkpoint["channel_versions"].items()},
            blobs=blobs,
            run_id=run_id if isinstance(run_id, str) else None,
            retention=retention,
        )
        return _config(thread_id, ns, checkpoint_id)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against ``config``'s checkpoint."""
        configurable = _configurable(config)
        thread_id, ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable["checkpoint_id"]
        stored = []
        for idx, (channel, value) in enumerate(writes):
            write = CheckpointWrite(task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, TypedBytes("", b""))
            sealed = self._seal(self.serde.dumps_typed(value), self._write_context(thread_id, ns, checkpoint_id, write))
            stored.append(replace(write, value=sealed))
        self._checkpoints.put_writes(thread_id, ns, checkpoint_id, stored)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, blobs and writes (every namespace). The palimpsest
        thread of that id, if any, stays: ``memory.delete_thread`` deletes both."""
        self._checkpoints.delete_threads([str(thread_id)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints these runs wrote, with their writes and orphaned blobs."""
        self._checkpoints.delete_for_runs(list(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, blobs and writes to another thread (re-authenticated
        for it with ``key=``)."""
        reseal = self._reseal if self._key is not None else None
        self._checkpoints.copy_thread(str(source_thread_id), str(target_thread_id), reseal=reseal)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: each namespace keeps its newest checkpoint and the ancestors its
        delta channels need; ``"delete"``: everything of these threads goes."""
        self._checkpoints.prune([str(t) for t in thread_ids], strategy=strategy)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A zero-padded counter and a random fraction, as ``InMemorySaver``'s (sortable strings)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- BaseCheckpointSaver: async (the same calls in a worker thread) --------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
