"""Application tests: ``memory.checkpoints`` (CheckpointService, ARCHITECTURE.md D41).

Graph checkpoints kept in the client's store: each use case one unit of work, timestamps from
the client's clock, retention and pruning that keep what a delta channel is rebuilt from and
drop the blobs nothing names any more, a typed error on a store without the capability, and a
thread's (or a user's) deletion that takes its checkpoints in the same unit of work.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters import open_memory
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.adapters.inmemory.store import InMemoryThreadRepository
from palimpsest.application import AgentMemory, CheckpointRetention, CheckpointService, MemoryExtractionConfig
from palimpsest.domain import ConfigurationError, ValidationError
from palimpsest.domain.checkpoints import NO_VALUE_TYPE, ChannelBlob, CheckpointWrite, TypedBytes

START = datetime(2031, 5, 1, tzinfo=UTC)
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START, tick=timedelta(0))


@pytest.fixture
def memory(clock: ManualClock) -> Iterator[AgentMemory]:
    client = open_memory(clock=clock, memory_extraction_config=NO_EXTRACTION)
    yield client
    client.close()


def _value(text: str) -> TypedBytes:
    return TypedBytes("msgpack", text.encode())


def _put(
    service: CheckpointService,
    thread_id: str,
    checkpoint_id: str,
    parent: str | None = None,
    *,
    ns: str = "",
    versions: dict[str, str] | None = None,
    blobs: dict[str, str | None] | None = None,
    metadata: dict[str, Any] | None = None,
    retention: CheckpointRetention | None = None,
) -> None:
    """A checkpoint naming ``versions``; ``blobs`` are the new ones (``None``: no value)."""
    versions = versions or {}
    new = [
        ChannelBlob(channel, versions[channel], TypedBytes(NO_VALUE_TYPE, b"") if text is None else _value(text))
        for channel, text in (blobs or {}).items()
    ]
    service.put(
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent,
        checkpoint=_value(f"body {checkpoint_id}"),
        metadata=metadata or {},
        channel_versions=versions,
        blobs=new,
        run_id=(metadata or {}).get("run_id"),
        retention=retention,
    )


def _ids(service: CheckpointService, thread_id: str, ns: str | None = None) -> list[str]:
    return [s.checkpoint.checkpoint_id for s in service.list(thread_id=thread_id, checkpoint_ns=ns)]


def test_put_and_get_return_the_checkpoint_with_its_blobs_writes_and_the_clients_time(memory: AgentMemory) -> None:
    service = memory.checkpoints
    assert service is memory.checkpoints and service.available
    _put(service, "t", "c1", versions={"a": "1", "b": "1"}, blobs={"a": "A1", "b": None})
    _put(service, "t", "c2", "c1", versions={"a": "2", "b": "1"}, blobs={"a": "A2"})
    service.put_writes("t", "", "c2", [CheckpointWrite("task", "p", 0, "a", _value("w"))])

    latest = service.get("t", "")
    assert latest is not None
    assert latest.checkpoint.checkpoint_id == "c2" and latest.checkpoint.parent_checkpoint_id == "c1"
    assert latest.checkpoint.created_at == START
    assert {c: (b.version, b.value) for c, b in latest.blobs.items()} == {
        "a": ("2", _value("A2")),
        "b": ("1", TypedBytes(NO_VALUE_TYPE, b"")),
    }
    assert [(w.task_id, w.channel, w.value) for w in latest.writes] == [("task", "a", _value("w"))]
    first = service.get("t", "", "c1")
    assert first is not None and first.blobs["a"].value == _value("A1") and first.writes == []
    assert service.get("t", "other-ns") is None


def test_a_store_without_checkpoint_storage_is_named_in_a_typed_error() -> None:
    class NoCheckpoints:
        """A store without the capability: the in-memory store's ports, but not ``checkpoints``."""

        def __init__(self) -> None:
            self._inner = InMemoryStore()

        def __getattr__(self, name: str) -> Any:
            if name == "checkpoints":
                raise AttributeError(name)
            return getattr(self._inner, name)

    client = build_client(NoCheckpoints(), memory_extraction_config=NO_EXTRACTION)  # type: ignore[arg-type]
    try:
        assert not client.checkpoints.available
        with pytest.raises(ConfigurationError, match="CheckpointStorage"):
            client.checkpoints.get("t", "")
        with pytest.raises(ConfigurationError, match="CheckpointStorage"):
            client.checkpoints.require()
        client.create_thread(thread_id="t")
        assert client.delete_thread("t") == 1  # a thread's deletion needs no checkpoints
    finally:
        client.close()


def test_retention_keeps_the_newest_n_after_each_put_and_drops_their_orphaned_blobs(memory: AgentMemory) -> None:
    service = memory.checkpoints
    keep_two = CheckpointRetention(keep_latest=2)
    parent = None
    for n in range(1, 5):
        _put(service, "t", f"c{n}", parent, versions={"a": str(n), "k": "1"}, blobs={"a": f"A{n}", **({"k": "K"} if n == 1 else {})}, retention=keep_two)
        parent = f"c{n}"
    _put(service, "other", "c1", versions={"a": "1"}, blobs={"a": "x"})

    assert _ids(service, "t") == ["c4", "c3"]
    assert _ids(service, "other") == ["c1"]
    oldest = service.get("t", "", "c3")
    assert oldest is not None and set(oldest.blobs) == {"a", "k"}  # "k" v1 is still named: kept
    with memory.store.reading() as uow:  # the blobs of c1 and c2 went with them
        stored = memory.store.checkpoints(uow).blobs("t", "", {"a": "1"}) | memory.store.checkpoints(uow).blobs(  # type: ignore[attr-defined]
            "t", "", {"a": "2"}
        )
    assert stored == {}


def test_retention_by_age_follows_the_clients_clock_and_never_drops_the_newest(memory: AgentMemory, clock: ManualClock) -> None:
    service = memory.checkpoints
    a_day = CheckpointRetention(max_age=timedelta(days=1))
    _put(service, "t", "c1", retention=a_day)
    clock.advance(timedelta(hours=12))
    _put(service, "t", "c2", "c1", retention=a_day)
    assert _ids(service, "t") == ["c2", "c1"]
    clock.advance(timedelta(hours=13))  # c1 is 25 hours old, c2 13
    _put(service, "t", "c3", "c2", retention=a_day)
    assert _ids(service, "t") == ["c3", "c2"]
    clock.advance(timedelta(days=30))
    assert service.retain(["t"], a_day) == 1
    assert _ids(service, "t") == ["c3"]  # older than a day, but the newest


def _delta_chain(service: CheckpointService, thread_id: str) -> None:
    """c1 snapshots delta channel "m"; c2..c4 only write it (no value at their versions)."""
    _put(service, thread_id, "c1", versions={"m": "1", "x": "1"}, blobs={"m": "snapshot", "x": "X"})
    parent = "c1"
    for n in range(2, 5):
        counters = {"m": [n - 1, n - 1]}
        _put(service, thread_id, f"c{n}", parent, versions={"m": str(n), "x": "1"}, blobs={"m": None}, metadata={"counters_since_delta_snapshot": counters})
        parent = f"c{n}"


def test_prune_keep_latest_keeps_a_delta_channels_ancestors_up_to_its_snapshot(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _delta_chain(service, "t")
    _put(service, "plain", "c1")
    _put(service, "plain", "c2", "c1")

    service.prune(["t", "plain"], strategy="keep_latest")

    assert _ids(service, "t") == ["c4", "c3", "c2", "c1"]  # c4's "m" is rebuilt from c1's snapshot
    assert _ids(service, "plain") == ["c2"]


def test_prune_keep_latest_drops_what_lies_beyond_the_nearest_snapshot(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _delta_chain(service, "t")
    _put(service, "t", "c5", "c4", versions={"m": "5", "x": "1"}, blobs={"m": "snapshot again"})  # counters reset
    _put(service, "t", "c6", "c5", versions={"m": "6", "x": "1"}, blobs={"m": None}, metadata={"counters_since_delta_snapshot": {"m": [1, 1]}})

    service.prune(["t"], strategy="keep_latest")

    assert _ids(service, "t") == ["c6", "c5"]
    kept = service.get("t", "", "c5")
    assert kept is not None and kept.blobs["x"].value == _value("X")  # x v1, written by c1, still named


def test_retention_of_several_keeps_what_each_kept_checkpoint_needs(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _delta_chain(service, "t")
    _put(service, "t", "c5", "c4", versions={"m": "5", "x": "1"}, blobs={"m": "snapshot again"})
    _put(service, "t", "c6", "c5", versions={"m": "6", "x": "1"}, blobs={"m": None}, metadata={"counters_since_delta_snapshot": {"m": [1, 1]}})

    service.retain(["t"], CheckpointRetention(keep_latest=2))
    assert _ids(service, "t") == ["c6", "c5"]

    _delta_chain(service, "u")
    _put(service, "u", "c5", "c4", versions={"m": "5", "x": "1"}, blobs={"m": "snapshot again"})
    service.retain(["u"], CheckpointRetention(keep_latest=2))  # c4 is kept: its chain back to c1 too
    assert _ids(service, "u") == ["c5", "c4", "c3", "c2", "c1"]


def test_retention_is_delta_safe_too(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _delta_chain(service, "t")
    service.retain(["t"], CheckpointRetention(keep_latest=1))
    assert _ids(service, "t") == ["c4", "c3", "c2", "c1"]


def test_prune_delete_and_bad_strategies(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _put(service, "t", "c1")
    with pytest.raises(ValidationError, match="strategy"):
        service.prune(["t"], strategy="keep_oldest")
    with pytest.raises(ValidationError):
        service.prune("t")  # a string is not a sequence of thread ids
    assert _ids(service, "t") == ["c1"]
    assert service.prune(["t"], strategy="delete") == 1
    assert _ids(service, "t") == []


def test_delete_for_runs_takes_the_blobs_only_its_checkpoints_named(memory: AgentMemory) -> None:
    service = memory.checkpoints
    _put(service, "t", "c1", versions={"a": "1"}, blobs={"a": "A1"}, metadata={"run_id": "r1"})
    _put(service, "t", "c2", "c1", versions={"a": "2"}, blobs={"a": "A2"}, metadata={"run_id": "r2"})
    assert service.delete_for_runs(["r2"]) == 1
    assert _ids(service, "t") == ["c1"]
    with memory.store.reading() as uow:
        assert memory.store.checkpoints(uow).blobs("t", "", {"a": "2"}) == {}  # type: ignore[attr-defined]


def test_a_bad_put_writes_nothing(memory: AgentMemory) -> None:
    service = memory.checkpoints
    good: dict[str, Any] = {
        "thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1", "parent_checkpoint_id": None,
        "checkpoint": _value("body"), "metadata": {}, "channel_versions": {"a": "1"},
        "blobs": [ChannelBlob("a", "1", _value("A"))],
    }
    for bad in (
        {"thread_id": ""}, {"checkpoint_ns": None}, {"checkpoint": b"raw"}, {"metadata": {1: "x"}},
        {"channel_versions": {"a": 1}}, {"blobs": [("a", "1", b"A")]}, {"run_id": 7}, {"retention": 3},
    ):
        with pytest.raises(ValidationError):
            service.put(**{**good, **bad})
    assert service.list() == []


def test_retention_needs_a_limit() -> None:
    with pytest.raises(ValidationError):
        CheckpointRetention()
    with pytest.raises(ValidationError):
        CheckpointRetention(keep_latest=0)
    with pytest.raises(ValidationError):
        CheckpointRetention(max_age=timedelta(0))


# -- a thread's deletion takes its checkpoints, in the same unit of work ------------------------


def test_deleting_a_thread_deletes_its_checkpoints_and_no_other(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", user_id="u")
    _put(memory.checkpoints, "t", "c1", ns="", versions={"a": "1"}, blobs={"a": "A"})
    _put(memory.checkpoints, "t", "s1", ns="sub:1")
    _put(memory.checkpoints, "kept", "c1")

    assert memory.delete_thread("t") == 1

    assert memory.checkpoints.list(thread_id="t") == []
    assert _ids(memory.checkpoints, "kept") == ["c1"]


def test_deleting_an_id_without_a_palimpsest_thread_still_deletes_its_checkpoints(memory: AgentMemory) -> None:
    _put(memory.checkpoints, "graph-only", "c1")
    assert memory.delete_thread("graph-only") == 0
    assert memory.checkpoints.list(thread_id="graph-only") == []


def test_deleting_a_user_deletes_the_checkpoints_of_the_users_threads(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t1", user_id="u")
    memory.create_thread(thread_id="t2", user_id="other")
    _put(memory.checkpoints, "t1", "c1")
    _put(memory.checkpoints, "t2", "c1")

    memory.delete_user("u")

    assert memory.checkpoints.list(thread_id="t1") == []
    assert _ids(memory.checkpoints, "t2") == ["c1"]


def test_a_failure_mid_delete_leaves_the_thread_and_its_checkpoints(memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.create_thread(thread_id="t", user_id="u")
    memory.get_thread("t").add_messages([{"role": "user", "content": "hello"}])
    _put(memory.checkpoints, "t", "c1")

    def fail(self: InMemoryThreadRepository, thread_id: str) -> bool:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(InMemoryThreadRepository, "delete", fail)
    with pytest.raises(RuntimeError, match="disk"):
        memory.delete_thread("t")
    with pytest.raises(RuntimeError, match="disk"):
        memory.delete_user("u")
    monkeypatch.undo()

    assert [m.content for m in memory.get_thread("t").get_messages(start=0, end=None)] == ["hello"]
    assert _ids(memory.checkpoints, "t") == ["c1"]
