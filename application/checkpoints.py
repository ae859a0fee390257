"""Application layer: ``CheckpointService``, the use cases of an agent framework's graph
checkpoints kept in the client's store (ARCHITECTURE.md D41).

A store offers checkpoints as a capability (:class:`~palimpsest.domain.ports.CheckpointStorage`);
this service is what a driver (LangGraph's ``PalimpsestSaver``) calls, each use case one unit of
work: put a checkpoint with its new channel blobs (and apply a retention in the same unit of
work), put pending writes, read the newest or one checkpoint with its blobs and writes, list with
filters, delete threads or runs, copy a thread, prune. Values are opaque
:class:`~palimpsest.domain.checkpoints.TypedBytes`; what the service reads is plain: ids, the
parent link, the channel versions, whether a blob holds a value, and one metadata key.

Pruning and retention keep a delta channel's ancestor chain: a checkpoint whose metadata names
channels in ``counters_since_delta_snapshot`` (LangGraph's record of the channels written since
their last snapshot) keeps, along its parent chain, every ancestor up to the nearest one that
stores a value for each of those channels (that ancestor included, with its writes); when the
chain reaches its root first, the whole chain stays. Blobs that no remaining checkpoint of the
thread and namespace names go with the checkpoints that named them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from palimpsest.domain.checkpoints import (
    NO_VALUE_TYPE,
    ChannelBlob,
    CheckpointWrite,
    StoredCheckpoint,
    TypedBytes,
)
from palimpsest.domain.errors import ArgumentTypeError, ConfigurationError, ValidationError
from palimpsest.domain.model import check_id
from palimpsest.domain.ports import CheckpointRepository, CheckpointStorage, Clock, MemoryStore, UnitOfWork

__all__ = [
    "DELTA_COUNTERS_KEY",
    "CheckpointRetention",
    "CheckpointService",
    "CheckpointState",
    "PruneStrategy",
    "delete_thread_checkpoints_in",
]

DELTA_COUNTERS_KEY = "counters_since_delta_snapshot"
"""The metadata key naming the delta channels written since their last snapshot (LangGraph's)."""

PruneStrategy = Literal["keep_latest", "delete"]
_STRATEGIES = ("keep_latest", "delete")


@dataclass(frozen=True, slots=True)
class CheckpointRetention:
    """How many checkpoints a thread keeps, applied per thread and namespace after each put.

    ``keep_latest``: the newest N checkpoints stay; ``max_age``: checkpoints older than this
    (by the client's clock at their put) go. Given both, a checkpoint stays only if both keep
    it. The newest checkpoint always stays, and so does every ancestor a kept checkpoint's
    delta channels still need (see the module docstring)."""

    keep_latest: int | None = None
    max_age: timedelta | None = None

    def __post_init__(self) -> None:
        if self.keep_latest is not None and (
            isinstance(self.keep_latest, bool) or not isinstance(self.keep_latest, int) or self.keep_latest < 1
        ):
            raise ValidationError(f"keep_latest must be a positive integer or None, not {self.keep_latest!r}.")
        if self.max_age is not None and (not isinstance(self.max_age, timedelta) or self.max_age <= timedelta(0)):
            raise ValidationError(f"max_age must be a positive timedelta or None, not {self.max_age!r}.")
        if self.keep_latest is None and self.max_age is None:
            raise ValidationError("CheckpointRetention needs keep_latest=, max_age= or both.")


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """A stored checkpoint with what reading it needs: its channel blobs (by channel, for the
    versions it names) and its pending writes (ordered by ``(task_path, task_id, idx)``)."""

    checkpoint: StoredCheckpoint
    blobs: Mapping[str, ChannelBlob]
    writes: Sequence[CheckpointWrite]


def _repository(store: MemoryStore, uow: UnitOfWork) -> CheckpointRepository:
    if not isinstance(store, CheckpointStorage):
        raise ConfigurationError(
            f"This store ({type(store).__name__}) does not offer CheckpointStorage: it cannot keep graph checkpoints."
        )
    return store.checkpoints(uow)


def delete_thread_checkpoints_in(store: MemoryStore, uow: UnitOfWork, thread_ids: Sequence[str]) -> int:
    """Delete these threads' checkpoints inside a caller's unit of work (a thread's deletion);
    a store without checkpoints has none to delete. Returns how many checkpoints went."""
    if not isinstance(store, CheckpointStorage) or not thread_ids:
        return 0
    return store.checkpoints(uow).delete_threads(list(thread_ids))


def _ids(values: object, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ArgumentTypeError(f"{what} must be a sequence of strings, not {type(values).__name__}.")
    return [check_id(value, what) for value in values]


def _namespace(value: object) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"checkpoint_ns must be a string, not {type(value).__name__}.")
    return value


def _valued(repository: CheckpointRepository, row: StoredCheckpoint, channels: Iterable[str]) -> set[str]:
    """Which of ``channels`` have a stored value at ``row``'s versions (not a "no value" blob)."""
    versions = {c: row.channel_versions[c] for c in channels if c in row.channel_versions}
    if not versions:
        return set()
    found = repository.blobs(row.thread_id, row.checkpoint_ns, versions)
    return {channel for channel, blob in found.items() if blob.value.type != NO_VALUE_TYPE}


class CheckpointService:
    """The checkpoint use cases over a store's :class:`CheckpointStorage`, on the client's
    clock. Reach it as ``memory.checkpoints``; every method of a store without the capability
    raises ``ConfigurationError`` naming it (:attr:`available` tells beforehand)."""

    def __init__(self, store: MemoryStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    @property
    def available(self) -> bool:
        """Whether the client's store keeps checkpoints."""
        return isinstance(self._store, CheckpointStorage)

    def require(self) -> None:
        """Raise ``ConfigurationError`` naming ``CheckpointStorage`` unless the store offers it."""
        with self._store.reading() as uow:
            _repository(self._store, uow)

    # -- writes -------------------------------------------------------------------------------

    def put(
        self,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        parent_checkpoint_id: str | None,
        checkpoint: TypedBytes,
        metadata: Mapping[str, Any],
        channel_versions: Mapping[str, str],
        blobs: Sequence[ChannelBlob],
        run_id: str | None = None,
        retention: CheckpointRetention | None = None,
    ) -> StoredCheckpoint:
        """Store a checkpoint (timestamped by the client's clock) and its new blobs, then apply
        ``retention`` to its thread and namespace, in one unit of work."""
        if not isinstance(checkpoint, TypedBytes) or not all(isinstance(b, ChannelBlob) for b in blobs):
            raise ArgumentTypeError("checkpoint must be TypedBytes and blobs ChannelBlobs.")
        if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
            raise ArgumentTypeError("metadata must be a mapping with string keys (a JSON object).")
        if not all(isinstance(c, str) and isinstance(v, str) for c, v in channel_versions.items()):
            raise ArgumentTypeError("channel_versions must map channel names to version strings.")
        if run_id is not None and not isinstance(run_id, str):
            raise ArgumentTypeError(f"run_id must be a string or None, not {type(run_id).__name__}.")
        if retention is not None and not isinstance(retention, CheckpointRetention):
            raise ArgumentTypeError(f"retention must be a CheckpointRetention, not {type(retention).__name__}.")
        stored = StoredCheckpoint(
            thread_id=check_id(thread_id, "thread_id"),
            checkpoint_ns=_namespace(checkpoint_ns),
            checkpoint_id=check_id(checkpoint_id, "checkpoint_id"),
            parent_checkpoint_id=None if parent_checkpoint_id is None else check_id(parent_checkpoint_id, "parent checkpoint_id"),
            checkpoint=checkpoint,
            metadata=metadata,
            channel_versions=channel_versions,
            run_id=run_id,
            created_at=self._clock.now(),
        )
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            repository.put(stored, blobs)
            if retention is not None:
                self._retain(repository, stored.thread_id, stored.checkpoint_ns, retention, stored.created_at)
            uow.commit()
        return stored

    def put_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, writes: Sequence[CheckpointWrite]) -> None:
        """Store a task's pending writes against a checkpoint (see the port for replacements)."""
        thread_id, checkpoint_id = check_id(thread_id, "thread_id"), check_id(checkpoint_id, "checkpoint_id")
        checkpoint_ns = _namespace(checkpoint_ns)
        with self._store.unit_of_work() as uow:
            _repository(self._store, uow).put_writes(thread_id, checkpoint_ns, checkpoint_id, writes)
            uow.commit()

    # -- reads --------------------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None = None) -> CheckpointState | None:
        """The checkpoint with that id (the newest of the thread and namespace when ``None``)
        with its blobs and writes, or ``None``."""
        thread_id, checkpoint_ns = check_id(thread_id, "thread_id"), _namespace(checkpoint_ns)
        with self._store.reading() as uow:
            repository = _repository(self._store, uow)
            found = repository.get(thread_id, checkpoint_ns, checkpoint_id)
            return None if found is None else self._state(repository, found)

    def list(
        self,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointState]:
        """Checkpoints newest first, each with its blobs and writes; every argument given narrows
        (see :meth:`CheckpointRepository.list`)."""
        with self._store.reading() as uow:
            repository = _repository(self._store, uow)
            rows = repository.list(
                thread_id=thread_id,
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=checkpoint_id,
                before=before,
                metadata=metadata,
                limit=limit,
            )
            return [self._state(repository, row) for row in rows]

    @staticmethod
    def _state(repository: CheckpointRepository, row: StoredCheckpoint) -> CheckpointState:
        return CheckpointState(
            checkpoint=row,
            blobs=repository.blobs(row.thread_id, row.checkpoint_ns, row.channel_versions),
            writes=repository.writes(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
        )

    # -- deletes, copies, pruning -------------------------------------------------------------

    def delete_threads(self, thread_ids: Sequence[str]) -> int:
        """Delete every checkpoint, blob and write of these threads; returns how many checkpoints."""
        ids = _ids(thread_ids, "thread_ids")
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            count = repository.delete_threads(ids) if ids else 0
            uow.commit()
        return count

    def delete_for_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints these runs wrote, their writes, and the blobs no remaining
        checkpoint names; returns how many checkpoints went."""
        runs = _ids(run_ids, "run_ids")
        if not runs:
            return 0
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            doomed: dict[tuple[str, str], list[StoredCheckpoint]] = defaultdict(list)
            for run in runs:
                for row in repository.list(metadata={"run_id": run}):
                    doomed[(row.thread_id, row.checkpoint_ns)].append(row)
            count = repository.delete_runs(runs)
            for (thread_id, checkpoint_ns), rows in doomed.items():
                remaining = repository.list(thread_id=thread_id, checkpoint_ns=checkpoint_ns)
                self._drop_blobs(repository, thread_id, checkpoint_ns, rows, remaining)
            uow.commit()
        return count

    def copy_thread(
        self,
        source_thread_id: str,
        target_thread_id: str,
        *,
        reseal: Callable[[CheckpointState, str], CheckpointState] | None = None,
    ) -> int:
        """Copy every checkpoint, blob and write of one thread to another (the whole parent
        chain of every namespace; rows the target has stay); returns how many checkpoints were
        copied. ``reseal(state, target)`` rewrites each checkpoint for its new thread (a driver
        whose rows are bound to their thread, as an authenticating saver's are)."""
        source, target = check_id(source_thread_id, "source_thread_id"), check_id(target_thread_id, "target_thread_id")
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            if reseal is None:
                count = repository.copy_thread(source, target)
            else:
                count = 0
                for row in reversed(repository.list(thread_id=source)):  # oldest first
                    if repository.get(target, row.checkpoint_ns, row.checkpoint_id) is not None:
                        continue
                    copied = reseal(self._state(repository, row), target)
                    repository.put(copied.checkpoint, list(copied.blobs.values()))
                    repository.put_writes(target, row.checkpoint_ns, row.checkpoint_id, copied.writes)
                    count += 1
            uow.commit()
        return count

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> int:
        """``"keep_latest"``: keep each namespace's newest checkpoint (and the ancestors its
        delta channels need); ``"delete"``: delete the threads' checkpoints. One unit of work;
        returns how many checkpoints went."""
        if strategy not in _STRATEGIES:
            raise ValidationError(f"strategy must be one of {', '.join(map(repr, _STRATEGIES))}, not {strategy!r}.")
        ids = _ids(thread_ids, "thread_ids")
        if strategy == "delete":
            return self.delete_threads(ids)
        count = 0
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            for thread_id in ids:
                namespaces = {row.checkpoint_ns for row in repository.list(thread_id=thread_id)}
                for checkpoint_ns in sorted(namespaces):
                    rows = repository.list(thread_id=thread_id, checkpoint_ns=checkpoint_ns)
                    count += self._keep(repository, thread_id, checkpoint_ns, rows, {rows[0].checkpoint_id})
            uow.commit()
        return count

    def retain(self, thread_ids: Sequence[str], retention: CheckpointRetention) -> int:
        """Apply ``retention`` now to every namespace of these threads, in one unit of work;
        returns how many checkpoints went."""
        if not isinstance(retention, CheckpointRetention):
            raise ArgumentTypeError(f"retention must be a CheckpointRetention, not {type(retention).__name__}.")
        ids = _ids(thread_ids, "thread_ids")
        now = self._clock.now()
        count = 0
        with self._store.unit_of_work() as uow:
            repository = _repository(self._store, uow)
            for thread_id in ids:
                for checkpoint_ns in sorted({row.checkpoint_ns for row in repository.list(thread_id=thread_id)}):
                    count += self._retain(repository, thread_id, checkpoint_ns, retention, now)
            uow.commit()
        return count

    # -- the shared mechanism: what a namespace keeps ------------------------------------------

    def _retain(
        self, repository: CheckpointRepository, thread_id: str, checkpoint_ns: str, retention: CheckpointRetention, now: datetime
    ) -> int:
        rows = repository.list(thread_id=thread_id, checkpoint_ns=checkpoint_ns)
        if not rows:
            return 0
        kept = rows if retention.keep_latest is None else rows[: retention.keep_latest]
        if retention.max_age is not None:
            oldest = now - retention.max_age
            kept = [row for row in kept if row.created_at >= oldest]
        return self._keep(repository, thread_id, checkpoint_ns, rows, {rows[0].checkpoint_id} | {r.checkpoint_id for r in kept})

    def _keep(
        self,
        repository: CheckpointRepository,
        thread_id: str,
        checkpoint_ns: str,
        rows: Sequence[StoredCheckpoint],
        keep: set[str],
    ) -> int:
        """Delete the rows of one thread and namespace outside ``keep`` and the ancestors the
        kept ones need, with the blobs no remaining row names; returns how many went."""
        by_id = {row.checkpoint_id: row for row in rows}
        needed = set(keep)
        walked: dict[str, set[str]] = {}
        for checkpoint_id in sorted(keep):  # oldest first: a newer one's walk stops at an older kept one
            needed |= self._delta_ancestors(repository, by_id, by_id[checkpoint_id], walked)
        doomed = [row for row in rows if row.checkpoint_id not in needed]
        if not doomed:
            return 0
        count = repository.delete_checkpoints(thread_id, checkpoint_ns, [row.checkpoint_id for row in doomed])
        remaining = [row for row in rows if row.checkpoint_id in needed]
        self._drop_blobs(repository, thread_id, checkpoint_ns, doomed, remaining)
        return count

    @staticmethod
    def _delta_ancestors(
        repository: CheckpointRepository,
        by_id: Mapping[str, StoredCheckpoint],
        row: StoredCheckpoint,
        walked: dict[str, set[str]],
    ) -> set[str]:
        """The ancestors of ``row`` its delta channels are rebuilt from: up to the nearest one
        storing a value for each channel written since its last snapshot (that one included).
        ``walked`` records, per kept checkpoint already walked, the channels its walk covers:
        a walk reaching one that covers all it still looks for stops there."""
        counters = row.metadata.get(DELTA_COUNTERS_KEY)
        pending: set[str] = set()
        if isinstance(counters, Mapping):
            pending = {str(channel) for channel in counters if channel in row.channel_versions}
            pending -= _valued(repository, row, pending)
        walked[row.checkpoint_id] = set(pending)
        chain: set[str] = set()
        parent = row.parent_checkpoint_id
        while pending and parent is not None and parent in by_id and parent not in chain:
            if parent in walked and pending <= walked[parent]:
                break
            ancestor = by_id[parent]
            chain.add(parent)
            pending -= _valued(repository, ancestor, pending)
            parent = ancestor.parent_checkpoint_id
        return chain

    @staticmethod
    def _drop_blobs(
        repository: CheckpointRepository,
        thread_id: str,
        checkpoint_ns: str,
        gone: Iterable[StoredCheckpoint],
        remaining: Iterable[StoredCheckpoint],
    ) -> None:
        named = {(channel, version) for row in remaining for channel, version in row.channel_versions.items()}
        orphans = {(channel, version) for row in gone for channel, version in row.channel_versions.items()} - named
        if orphans:
            repository.delete_blobs(thread_id, checkpoint_ns, sorted(orphans))
