"""Contract: CheckpointStorage / CheckpointRepository (ARCHITECTURE.md D41), on every store.

The port's docstrings in ``domain/ports.py`` are the specification: checkpoints keyed by
``(thread_id, checkpoint_ns, checkpoint_id)``, channel blobs kept once per version, pending
writes (negative indexes replaced, others kept), listings newest first with exact filters and
the limit after them, deletes that say how many checkpoints went, a copy that keeps ids and
the target's rows, all inside one unit of work.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from palimpsest.domain.checkpoints import ChannelBlob, CheckpointWrite, StoredCheckpoint, TypedBytes
from palimpsest.domain.errors import ReadOnlyError, StorageError, ValidationError
from palimpsest.domain.ports import CheckpointRepository, CheckpointStorage, MemoryStore, UnitOfWork

from .builders import at
from .conftest import StoreFactory


def checkpoint(
    checkpoint_id: str,
    *,
    thread_id: str = "t1",
    checkpoint_ns: str = "",
    parent: str | None = None,
    run_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    versions: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> StoredCheckpoint:
    return StoredCheckpoint(
        thread_id=thread_id,
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent,
        checkpoint=TypedBytes("msgpack", data if data is not None else f"cp:{checkpoint_id}".encode()),
        metadata=dict(metadata or {}),
        channel_versions=dict(versions or {}),
        run_id=run_id,
        created_at=at(int(checkpoint_id, 16)),
    )


def blob(channel: str, version: str, data: bytes = b"") -> ChannelBlob:
    return ChannelBlob(channel, version, TypedBytes("msgpack", data or f"{channel}@{version}".encode()))


def write(task_id: str, idx: int, channel: str = "c", data: bytes = b"v", task_path: str = "") -> CheckpointWrite:
    return CheckpointWrite(task_id=task_id, task_path=task_path, idx=idx, channel=channel, value=TypedBytes("json", data))


def repo(store: MemoryStore, uow: UnitOfWork) -> CheckpointRepository:
    assert isinstance(store, CheckpointStorage)
    return store.checkpoints(uow)


@contextmanager
def writing(store: MemoryStore) -> Iterator[CheckpointRepository]:
    """A checkpoint repository in a unit of work that commits when the block ends."""
    with store.unit_of_work() as uow:
        yield repo(store, uow)
        uow.commit()


@contextmanager
def reading(store: MemoryStore) -> Iterator[CheckpointRepository]:
    with store.reading() as uow:
        yield repo(store, uow)


def ids(rows: Sequence[StoredCheckpoint]) -> list[str]:
    return [row.checkpoint_id for row in rows]


# --- capability ------------------------------------------------------------------------------------


def test_every_store_offers_checkpoints_in_its_own_units_of_work_only(stores: StoreFactory) -> None:
    store, other = stores.new(), stores.new()
    assert isinstance(store, CheckpointStorage)
    with store.unit_of_work() as mine, other.unit_of_work() as theirs:
        store.checkpoints(mine)  # its own: fine
        with pytest.raises(StorageError):
            store.checkpoints(theirs)


# --- put / get -------------------------------------------------------------------------------------


def test_put_then_get_by_id_and_latest_round_trips_every_field(store: MemoryStore) -> None:
    first = checkpoint(
        "0001", metadata={"source": "input", "step": -1, "parents": {}, "score": 1.5, "none": None},
        versions={"messages": "00001.5", "__start__": "00001.1"}, run_id="run-1",
    )
    second = checkpoint("0002", parent="0001", metadata={"source": "loop", "step": 0, "writes": {"n": [1, "a"]}})
    with writing(store) as cps:
        cps.put(first, [blob("messages", "00001.5", b"\x00\xffbytes")])
        cps.put(second, [])
    with reading(store) as cps:
        assert cps.get("t1", "", "0001") == first
        assert cps.get("t1", "", "0002") == second
        assert cps.get("t1", "") == second  # the newest of the thread and namespace
        assert cps.get("t1", "", "0003") is None
        assert cps.get("t1", "other-ns") is None
        assert cps.get("t2", "") is None
        assert cps.blobs("t1", "", {"messages": "00001.5"}) == {"messages": blob("messages", "00001.5", b"\x00\xffbytes")}


def test_latest_is_per_thread_and_namespace(store: MemoryStore) -> None:
    with writing(store) as cps:
        cps.put(checkpoint("0001"), [])
        cps.put(checkpoint("0003", checkpoint_ns="child:1"), [])
        cps.put(checkpoint("0005", thread_id="t2"), [])
        cps.put(checkpoint("0002"), [])
    with reading(store) as cps:
        assert cps.get("t1", "").checkpoint_id == "0002"  # type: ignore[union-attr]
        assert cps.get("t1", "child:1").checkpoint_id == "0003"  # type: ignore[union-attr]
        assert cps.get("t2", "").checkpoint_id == "0005"  # type: ignore[union-attr]


def test_put_replaces_a_checkpoint_with_the_same_key_and_keeps_a_stored_blob(store: MemoryStore) -> None:
    with writing(store) as cps:
        cps.put(checkpoint("0001", metadata={"v": 1}, data=b"old"), [blob("a", "1", b"first")])
    replacement = checkpoint("0001", metadata={"v": 2}, data=b"new", run_id="r2", versions={"a": "1", "b": "1"})
    with writing(store) as cps:
        cps.put(replacement, [blob("a", "1", b"second"), blob("b", "1", b"bee")])
    with reading(store) as cps:
        assert cps.get("t1", "", "0001") == replacement
        assert ids(cps.list(thread_id="t1")) == ["0001"]
        stored = cps.blobs("t1", "", {"a": "1", "b": "1", "c": "1"})
        assert stored == {"a": blob("a", "1", b"first"), "b": blob("b", "1", b"bee")}  # "c" is absent


def test_blobs_are_per_thread_namespace_channel_and_version(store: MemoryStore) -> None:
    with writing(store) as cps:
        cps.put(checkpoint("0001"), [blob("a", "1", b"t1"), blob("a", "2", b"t1v2")])
        cps.put(checkpoint("0001", checkpoint_ns="sub"), [blob("a", "1", b"sub")])
        cps.put(checkpoint("0001", thread_id="t2"), [blob("a", "1", b"t2")])
    with reading(store) as cps:
        assert cps.blobs("t1", "", {"a": "2"})["a"].value.data == b"t1v2"
        assert cps.blobs("t1", "sub", {"a": "1"})["a"].value.data == b"sub"
        assert cps.blobs("t2", "", {"a": "1"})["a"].value.data == b"t2"
        assert cps.blobs("t2", "", {"a": "2"}) == {}
        assert cps.blobs("t1", "", {}) == {}


# --- pending writes --------------------------------------------------------------------------------


def test_put_writes_replaces_a_negative_index_and_ignores_a_repeated_one(store: MemoryStore) -> None:
    with writing(store) as cps:
        cps.put(checkpoint("0001"), [])
        cps.put_writes("t1", "", "0001", [write("task", 0, data=b"a0"), write("task", 1, data=b"a1"), write("task", -1, data=b"e1")])
    with writing(store) as cps:
        cps.put_writes("t1", "", "0001", [write("task", 0, data=b"b0"), write("task", -1, data=b"e2"), write("task", 2, data=b"b2")])
    with reading(store) as cps:
        got = {(w.task_id, w.idx): w.value.data for w in cps.writes("t1", "", "0001")}
    assert got == {("task", -1): b"e2", ("task", 0): b"a0", ("task", 1): b"a1", ("task", 2): b"b2"}


def test_writes_are_ordered_by_task_path_task_id_and_index_and_kept_per_checkpoint(store: MemoryStore) -> None:
    writes = [
        write("t-b", 1, task_path="~0"), write("t-a", 0, task_path="~1"), write("t-b", -2, task_path="~0"),
        write("t-a", 0, task_path="~0", channel="x"), write("t-c", 3, task_path="~0"), write("t-b", 0, task_path="~0"),
    ]
    with writing(store) as cps:
        cps.put(checkpoint("0001"), [])
        cps.put(checkpoint("0002"), [])
        cps.put_writes("t1", "", "0001", writes[:3])
        cps.put_writes("t1", "", "0001", writes[3:])
        cps.put_writes("t1", "", "0002", [write("other", 0, channel="o")])
    with reading(store) as cps:
        got = cps.writes("t1", "", "0001")
        # ("t-a", 0) came twice: the second (path "~0", channel "x") was ignored
        assert [(w.task_path, w.task_id, w.idx, w.channel) for w in got] == [
            ("~0", "t-b", -2, "c"), ("~0", "t-b", 0, "c"), ("~0", "t-b", 1, "c"), ("~0", "t-c", 3, "c"), ("~1", "t-a", 0, "c"),
        ]
        assert [w.channel for w in cps.writes("t1", "", "0002")] == ["o"]
        assert cps.writes("t1", "", "0003") == []
        assert cps.writes("t1", "sub", "0001") == []


# --- list ------------------------------------------------------------------------------------------


def _fill(store: MemoryStore) -> None:
    with writing(store) as cps:
        cps.put(checkpoint("0001", metadata={"source": "input", "step": -1}), [])
        cps.put(checkpoint("0002", parent="0001", metadata={"source": "loop", "step": 0, "nested": {"a": [1, 2]}}), [])
        cps.put(checkpoint("0003", parent="0002", metadata={"source": "loop", "step": 1, "flag": True, "none": None}), [])
        cps.put(checkpoint("0004", checkpoint_ns="sub", metadata={"source": "loop", "step": 1, "flag": 1}), [])
        cps.put(checkpoint("0005", thread_id="t2", metadata={"source": "update", "step": 1.0, "nested": {"a": [1, 2], "b": 0}}), [])
        cps.put(checkpoint("0003", thread_id="t2", metadata={"source": "loop", "step": 2}), [])


def test_list_orders_newest_first_across_threads_and_namespaces(store: MemoryStore) -> None:
    _fill(store)
    with reading(store) as cps:
        rows = cps.list()
    assert [(r.checkpoint_id, r.thread_id, r.checkpoint_ns) for r in rows] == [
        ("0005", "t2", ""), ("0004", "t1", "sub"), ("0003", "t2", ""), ("0003", "t1", ""), ("0002", "t1", ""), ("0001", "t1", ""),
    ]


def test_list_filters_by_thread_namespace_id_and_before(store: MemoryStore) -> None:
    _fill(store)
    with reading(store) as cps:
        assert ids(cps.list(thread_id="t1")) == ["0004", "0003", "0002", "0001"]
        assert ids(cps.list(thread_id="t1", checkpoint_ns="")) == ["0003", "0002", "0001"]
        assert ids(cps.list(checkpoint_ns="sub")) == ["0004"]
        assert [r.thread_id for r in cps.list(checkpoint_id="0003")] == ["t2", "t1"]
        assert ids(cps.list(thread_id="t1", before="0003")) == ["0002", "0001"]
        assert ids(cps.list(before="0001")) == []
        assert ids(cps.list(thread_id="nobody")) == []


def test_list_metadata_filter_is_equality_of_json_values(store: MemoryStore) -> None:
    _fill(store)
    with reading(store) as cps:
        assert ids(cps.list(metadata={"source": "loop"})) == ["0004", "0003", "0003", "0002"]
        assert ids(cps.list(metadata={"source": "loop", "step": 1})) == ["0004", "0003"]
        assert ids(cps.list(metadata={"step": 1})) == ["0005", "0004", "0003"]  # 1 equals 1.0
        assert ids(cps.list(metadata={"flag": True})) == ["0003"]  # True is not 1
        assert ids(cps.list(metadata={"flag": 1})) == ["0004"]
        assert ids(cps.list(metadata={"nested": {"a": [1, 2]}})) == ["0002"]  # a whole value, not containment
        assert ids(cps.list(metadata={"nested": {"a": [1]}})) == []
        assert ids(cps.list(metadata={"nested": {"a": [2, 1]}})) == []
        assert ids(cps.list(metadata={"none": None})) == ["0003"]  # a missing key is not null
        assert ids(cps.list(metadata={"source": "nothing"})) == []
        assert ids(cps.list(metadata={"missing": "x"})) == []
        assert ids(cps.list(metadata={})) == ids(cps.list())


def test_list_limit_applies_after_every_filter(store: MemoryStore) -> None:
    _fill(store)
    with reading(store) as cps:
        assert ids(cps.list(metadata={"source": "loop"}, limit=2)) == ["0004", "0003"]
        assert [(r.thread_id, r.checkpoint_id) for r in cps.list(metadata={"source": "loop", "step": 0}, limit=1)] == [("t1", "0002")]
        assert ids(cps.list(thread_id="t1", checkpoint_ns="", before="0003", limit=1)) == ["0002"]
        assert ids(cps.list(thread_id="t1", metadata={"source": "input"}, limit=5)) == ["0001"]
        assert ids(cps.list(limit=0)) == []
        assert len(cps.list(limit=sys.maxsize)) == 6  # no bind holds it: every row
        with pytest.raises(ValidationError):
            cps.list(limit=-1)


_IDS = [f"{n:04x}" for n in range(1, 9)]
_VALUES = st.sampled_from([None, True, False, 0, 1, 1.0, 2, "a", "b", "", [1, 2], [2, 1], {"k": 1}, {"k": [1]}, {}])
_META = st.dictionaries(st.sampled_from(["source", "step", "x"]), _VALUES, max_size=3)
_ROWS = st.lists(
    st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["", "ns"]), st.sampled_from(_IDS), _META),
    max_size=12,
    unique_by=lambda row: row[:3],
)


def _model_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_model_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_model_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    thread_id=st.none() | st.sampled_from(["t1", "t2"]),
    checkpoint_ns=st.none() | st.sampled_from(["", "ns"]),
    before=st.none() | st.sampled_from(_IDS),
    metadata=st.none() | _META,
    limit=st.none() | st.integers(0, 4),
)
def test_list_agrees_with_a_model_of_its_filters(
    store: MemoryStore,
    rows: list[tuple[str, str, str, dict[str, Any]]],
    thread_id: str | None,
    checkpoint_ns: str | None,
    before: str | None,
    metadata: dict[str, Any] | None,
    limit: int | None,
) -> None:
    expected = sorted(
        (
            (cid, tid, ns)
            for tid, ns, cid, meta in rows
            if (thread_id is None or tid == thread_id)
            and (checkpoint_ns is None or ns == checkpoint_ns)
            and (before is None or cid < before)
            and all(k in meta and _model_equal(meta[k], v) for k, v in (metadata or {}).items())
        ),
        reverse=True,
    )
    with store.unit_of_work() as uow:  # rolled back: every example starts from an empty store
        cps = repo(store, uow)
        for tid, ns, cid, meta in rows:
            cps.put(checkpoint(cid, thread_id=tid, checkpoint_ns=ns, metadata=meta), [])
        got = cps.list(thread_id=thread_id, checkpoint_ns=checkpoint_ns, before=before, metadata=metadata, limit=limit)
    assert [(r.checkpoint_id, r.thread_id, r.checkpoint_ns) for r in got] == expected[:limit]


# --- deletes ---------------------------------------------------------------------------------------


def _chain(store: MemoryStore, thread_id: str, *, run_id: str | None = None, ns: str = "") -> None:
    with writing(store) as cps:
        for n, parent in (("0001", None), ("0002", "0001"), ("0003", "0002")):
            cps.put(checkpoint(n, thread_id=thread_id, checkpoint_ns=ns, parent=parent, run_id=run_id, versions={"c": n}), [blob("c", n)])
            cps.put_writes(thread_id, ns, n, [write("task", 0), write("task", -1)])


def test_delete_threads_removes_checkpoints_blobs_and_writes_of_every_namespace(store: MemoryStore) -> None:
    _chain(store, "t1")
    _chain(store, "t1", ns="sub")
    _chain(store, "t2")
    _chain(store, "t3")
    with writing(store) as cps:
        assert cps.delete_threads(["t1", "t3", "nobody"]) == 9
        assert cps.delete_threads([]) == 0
    with reading(store) as cps:
        assert {r.thread_id for r in cps.list()} == {"t2"}
        for thread_id, ns in (("t1", ""), ("t1", "sub"), ("t3", "")):
            assert cps.blobs(thread_id, ns, {"c": "0001"}) == {}
            assert cps.writes(thread_id, ns, "0002") == []
        assert len(cps.writes("t2", "", "0002")) == 2
        assert cps.blobs("t2", "", {"c": "0003"}) != {}


def test_delete_runs_removes_their_checkpoints_and_writes(store: MemoryStore) -> None:
    _chain(store, "t1", run_id="r1")
    _chain(store, "t2", run_id="r2")
    _chain(store, "t3")  # no run id
    with writing(store) as cps:
        assert cps.delete_runs(["r1", "nobody"]) == 3
        assert cps.delete_runs([]) == 0
    with reading(store) as cps:
        assert {r.thread_id for r in cps.list()} == {"t2", "t3"}
        assert cps.writes("t1", "", "0001") == []
        assert len(cps.writes("t2", "", "0001")) == 2


def test_delete_checkpoints_counts_those_that_existed_and_takes_their_writes(store: MemoryStore) -> None:
    _chain(store, "t1")
    _chain(store, "t1", ns="sub")
    with writing(store) as cps:
        assert cps.delete_checkpoints("t1", "", ["0001", "0003", "0009"]) == 2
        assert cps.delete_checkpoints("t1", "", ["0001"]) == 0
    with reading(store) as cps:
        assert ids(cps.list(thread_id="t1", checkpoint_ns="")) == ["0002"]
        assert ids(cps.list(thread_id="t1", checkpoint_ns="sub")) == ["0003", "0002", "0001"]
        assert cps.writes("t1", "", "0001") == [] and cps.writes("t1", "", "0003") == []
        assert len(cps.writes("t1", "", "0002")) == 2
        assert len(cps.writes("t1", "sub", "0001")) == 2
        assert cps.blobs("t1", "", {"c": "0001"}) != {}  # blobs stay until asked for


def test_delete_blobs_counts_the_blobs_deleted(store: MemoryStore) -> None:
    _chain(store, "t1")
    _chain(store, "t2")
    with writing(store) as cps:
        assert cps.delete_blobs("t1", "", [("c", "0001"), ("c", "0002"), ("c", "0009"), ("x", "0001")]) == 2
        assert cps.delete_blobs("t1", "", []) == 0
    with reading(store) as cps:
        assert cps.blobs("t1", "", {"c": "0001"}) == {}
        assert cps.blobs("t1", "", {"c": "0003"}) != {}
        assert cps.blobs("t2", "", {"c": "0001"}) != {}


# --- copy ------------------------------------------------------------------------------------------


def test_copy_thread_keeps_ids_and_the_parent_chain_and_the_target_rows(store: MemoryStore) -> None:
    _chain(store, "src", run_id="r")
    _chain(store, "src", ns="sub")
    with writing(store) as cps:
        cps.put(checkpoint("0002", thread_id="dst", data=b"target's own", metadata={"mine": True}), [blob("c", "0002", b"target blob")])
        cps.put_writes("dst", "", "0002", [write("task", 0, data=b"target write")])
    with writing(store) as cps:
        assert cps.copy_thread("src", "dst") == 5  # 6 in the source, one the target had
    with reading(store) as cps:
        source = {(r.checkpoint_ns, r.checkpoint_id): r for r in cps.list(thread_id="src")}
        copied = {(r.checkpoint_ns, r.checkpoint_id): r for r in cps.list(thread_id="dst")}
        assert copied.keys() == source.keys()
        for key, row in copied.items():
            if key == ("", "0002"):
                assert row.checkpoint.data == b"target's own" and row.metadata == {"mine": True}
                continue
            original = source[key]
            assert (row.parent_checkpoint_id, row.checkpoint, row.metadata, row.channel_versions, row.run_id) == (
                original.parent_checkpoint_id, original.checkpoint, original.metadata, original.channel_versions, original.run_id,
            )
        # the chain is whole: every parent named in the copy is there
        assert all(r.parent_checkpoint_id is None or (ns, r.parent_checkpoint_id) in copied for (ns, _), r in copied.items())
        assert cps.blobs("dst", "", {"c": "0002"})["c"].value.data == b"target blob"
        assert cps.blobs("dst", "sub", {"c": "0003"})["c"] == blob("c", "0003")
        assert {(w.task_id, w.idx, w.value.data) for w in cps.writes("dst", "", "0002")} == {("task", 0, b"target write"), ("task", -1, b"v")}
        assert len(cps.writes("dst", "sub", "0001")) == 2
        assert len(cps.list(thread_id="src")) == 6  # the source is untouched
    with writing(store) as cps:
        assert cps.copy_thread("nobody", "dst") == 0


# --- units of work ---------------------------------------------------------------------------------


def test_a_read_only_unit_of_work_reads_and_refuses_every_write(store: MemoryStore) -> None:
    _chain(store, "t1", run_id="r")
    with reading(store) as cps:
        assert ids(cps.list(thread_id="t1")) == ["0003", "0002", "0001"]
        assert cps.get("t1", "") is not None
        assert len(cps.writes("t1", "", "0001")) == 2
        assert cps.blobs("t1", "", {"c": "0001"}) != {}
        refused = {
            "put": lambda: cps.put(checkpoint("0009"), []),
            "put_writes": lambda: cps.put_writes("t1", "", "0001", [write("x", 0)]),
            "delete_threads": lambda: cps.delete_threads(["t1"]),
            "delete_runs": lambda: cps.delete_runs(["r"]),
            "delete_checkpoints": lambda: cps.delete_checkpoints("t1", "", ["0001"]),
            "delete_blobs": lambda: cps.delete_blobs("t1", "", [("c", "0001")]),
            "copy_thread": lambda: cps.copy_thread("t1", "t2"),
        }
        port = {m for m in vars(CheckpointRepository) if not m.startswith("_") and callable(getattr(CheckpointRepository, m))}
        assert refused.keys() == port - {"get", "list", "blobs", "writes"}  # every write of the port
        for call in refused.values():
            with pytest.raises(ReadOnlyError):
                call()
    with reading(store) as cps:
        assert len(cps.list()) == 3 and len(cps.writes("t1", "", "0001")) == 2


def test_rollback_leaves_nothing(store: MemoryStore) -> None:
    _chain(store, "keep")
    with store.unit_of_work() as uow:
        cps = repo(store, uow)
        cps.put(checkpoint("0001"), [blob("a", "1")])
        cps.put_writes("t1", "", "0001", [write("task", 0)])
        cps.delete_threads(["keep"])
        uow.rollback()
    with store.unit_of_work() as uow:  # left without commit: rolled back too
        repo(store, uow).put(checkpoint("0002"), [])
    with reading(store) as cps:
        assert [r.thread_id for r in cps.list()] == ["keep"] * 3
        assert cps.blobs("t1", "", {"a": "1"}) == {}
        assert cps.writes("t1", "", "0001") == []


def test_a_write_is_visible_in_its_unit_of_work_before_commit_and_to_others_after(store: MemoryStore) -> None:
    with store.unit_of_work() as uow:
        cps = repo(store, uow)
        cps.put(checkpoint("0001"), [blob("a", "1")])
        cps.put_writes("t1", "", "0001", [write("task", 0)])
        assert cps.get("t1", "") is not None
        assert ids(cps.list(thread_id="t1")) == ["0001"]
        assert cps.blobs("t1", "", {"a": "1"}) != {}
        assert len(cps.writes("t1", "", "0001")) == 1
        assert cps.delete_checkpoints("t1", "", ["0001"]) == 1
        assert cps.get("t1", "") is None
        cps.put(checkpoint("0002"), [])
        uow.commit()
    with reading(store) as cps:
        assert ids(cps.list()) == ["0002"]


def test_checkpoints_persist_across_reopening(stores: StoreFactory) -> None:
    store = stores.new()
    _chain(store, "t1")
    again = stores.reopen(store)
    with reading(again) as cps:
        assert ids(cps.list(thread_id="t1")) == ["0003", "0002", "0001"]
        assert len(cps.writes("t1", "", "0003")) == 2


def test_many_ids_in_one_delete(store: MemoryStore) -> None:
    """Deletes take long id lists (a store that binds one placeholder an id must still cope)."""
    many = [f"{n:04x}" for n in range(1, 1201)]
    with writing(store) as cps:
        for cid in many[:50]:
            cps.put(checkpoint(cid, run_id=f"r{cid}"), [])
    with writing(store) as cps:
        assert cps.delete_checkpoints("t1", "", many) == 50
        assert cps.delete_runs([f"r{c}" for c in many]) == 0
        assert cps.delete_threads([f"x{c}" for c in itertools.islice(many, 1200)]) == 0
