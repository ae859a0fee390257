"""Embedded store: what survives closing the file, schema migrations, dimension and storage format."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from palimpsest.adapters.embedded import EmbeddedStore, schema
from palimpsest.adapters.embedded.schema import latest_version, load_migrations
from palimpsest.domain.checkpoints import ChannelBlob, StoredCheckpoint, TypedBytes
from palimpsest.domain.errors import (
    ConfigurationError,
    SchemaVersionError,
    StorageError,
    StoreClosedError,
    VectorDimensionError,
)

from .helpers import E1, E2, NOW, ids, link, linked_ids, message, query, raw, record, seed, thread

Opener = Callable[..., EmbeddedStore]


def test_reopening_a_store_preserves_records_links_vectors_and_dimension(open_store: Opener) -> None:
    first = open_store(dimension=None)
    seed(
        first,
        threads=[thread("t1", user_id="u1")],
        messages=[(message("m1", "t1", 1, "green tea please", user_id="u1"), E2)],
        records=[(record("a", "Ann drinks green tea", user_id="u1"), E1), (record("b", user_id="u1"), None)],
        links=[link("l1", "a", "b")],
    )
    first.close()

    again = open_store(dimension=None)
    assert again.dimension == 4
    assert ids(again.search(query(vector=E1, k=1))) == ["a"]
    assert ids(again.search(query(vector=E2, k=1))) == ["m1"]
    assert set(ids(again.search(query(text="green")))) == {"a", "m1"}
    assert linked_ids(again.search(query(vector=E1, k=1, num_hops=1))) == {"b"}
    with again.unit_of_work() as uow:
        assert uow.links.get("l1") == link("l1", "a", "b")
        assert uow.messages.get("m1", now=NOW) == message("m1", "t1", 1, "green tea please", user_id="u1")


def test_the_first_vector_fixes_the_dimension_for_later_opens(open_store: Opener) -> None:
    first = open_store(dimension=None)
    assert first.dimension is None
    seed(first, records=[(record("r1"), (1.0, 2.0, 3.0))])
    assert first.dimension == 3
    first.close()
    again = open_store(dimension=None)
    assert again.dimension == 3
    with again.unit_of_work() as uow, pytest.raises(VectorDimensionError):
        uow.records.add(record("r2"), embedding=E1)


def test_a_rolled_back_first_vector_does_not_fix_the_dimension(open_store: Opener) -> None:
    store = open_store(dimension=None)
    with store.unit_of_work() as uow:
        uow.records.add(record("r1"), embedding=(1.0, 2.0, 3.0))
    assert store.dimension is None
    seed(store, records=[(record("r2"), E1)])
    assert store.dimension == 4


def test_opening_with_a_dimension_other_than_the_stored_one_raises_configuration_error(
    open_store: Opener,
) -> None:
    open_store(dimension=4).close()
    with pytest.raises(ConfigurationError):
        open_store(dimension=8)
    assert open_store(dimension=None).dimension == 4


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_a_malformed_dimension_raises_configuration_error(path: Path, bad: object) -> None:
    with pytest.raises(ConfigurationError):
        EmbeddedStore(path, dimension=bad)  # type: ignore[arg-type]


def test_an_in_memory_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        EmbeddedStore(":memory:")


def test_a_missing_folder_is_created_and_the_store_opens_and_reopens_there(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "folder" / "memory.db"
    with EmbeddedStore(path) as store:
        seed(store, records=[(record("r1", "kept in a new folder"), E1)])
    assert path.is_file()
    with EmbeddedStore(path) as again:
        assert ids(again.search(query(vector=E1, k=1))) == ["r1"]


def _unusable_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """A name for each way a path cannot hold a store, with the path and the part the error names."""
    in_the_way = tmp_path / "notes.txt"
    in_the_way.write_text("a file, not a folder")
    (tmp_path / "a-folder").mkdir()
    too_long = tmp_path / ("x" * 300 + ".db")
    return {
        "file in place of the folder": (in_the_way / "memory.db", str(in_the_way)),
        "file in place of a parent folder": (in_the_way / "sub" / "memory.db", str(in_the_way / "sub")),
        "the path is a folder": (tmp_path / "a-folder", str(tmp_path / "a-folder")),
        "SQLite cannot open the file": (too_long, str(too_long)),
    }


@pytest.mark.parametrize(
    "case",
    [
        "file in place of the folder",
        "file in place of a parent folder",
        "the path is a folder",
        "SQLite cannot open the file",
    ],
)
def test_a_path_that_cannot_hold_a_store_is_a_configuration_error_naming_it(
    tmp_path: Path, case: str
) -> None:
    path, named = _unusable_paths(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigurationError) as caught:
        EmbeddedStore(path)
    assert named in str(caught.value)
    assert not isinstance(caught.value, StorageError)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "nothing is written"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_folder_without_write_permission_is_a_configuration_error_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(ConfigurationError) as caught:
            EmbeddedStore(folder / "memory.db")
        assert str(folder / "memory.db") in str(caught.value)
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_migrations_are_applied_once_and_the_schema_version_is_recorded(
    open_store: Opener, path: Path
) -> None:
    open_store().close()
    open_store().close()
    latest = load_migrations()[-1].version
    with raw(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(latest),
        )
        applied = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        assert applied == [(m.version, m.name) for m in load_migrations()]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_version_5_file_with_fts5_tables_upgrades_dropping_them_and_keeps_its_data(
    open_store: Opener, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 6 drops the FTS5 keyword tables and their triggers (keyword search has its own
    index since); a file written at version 5 opens, keeps every row, and searches by keyword."""
    monkeypatch.setattr(schema, "load_migrations", lambda: load_migrations()[:5])
    old = open_store()
    seed(
        old,
        threads=[thread("t1", user_id="u1")],
        messages=[(message("m1", "t1", 1, "green tea please", user_id="u1"), E2)],
        records=[
            (record("a", "Ann drinks green tea", user_id="u1"), E1),
            (record("b", "Bob prefers coffee", user_id="u1"), None),
        ],
        links=[link("l1", "a", "b")],
    )
    old.close()
    with raw(path) as conn:  # index the rows as version 5 did (this code no longer writes FTS5)
        for table in ("records_fts", "messages_fts"):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("5",)
        indexed = conn.execute("SELECT count(*) FROM records_fts WHERE records_fts MATCH 'tea'").fetchone()
        assert indexed == (1,)
    monkeypatch.undo()

    upgraded = open_store()
    with raw(path) as conn:
        latest = latest_version()  # 7 when FTS5 was dropped; later versions apply on the way
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(latest),)
        applied = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert applied == list(range(1, latest + 1))
        leftovers = conn.execute("SELECT type, name FROM sqlite_master WHERE name LIKE '%fts%'").fetchall()
        assert leftovers == []
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert set(ids(upgraded.search(query(text="green tea")))) == {"a", "m1"}
    assert ids(upgraded.search(query(text="coffee"))) == ["b"]
    assert ids(upgraded.search(query(vector=E1, k=1, num_hops=1))) == ["a"]
    assert linked_ids(upgraded.search(query(vector=E1, k=1, num_hops=1))) == {"b"}
    # Writes that the dropped triggers fired on (content updates, deletes, cascades) still work.
    with upgraded.unit_of_work() as uow:
        uow.messages.add_many([message("m2", "t1", 2, "more tea later", user_id="u1")])
        uow.records.update(record("b", "Bob prefers cocoa", user_id="u1"))
        assert uow.records.delete("a")
        uow.commit()
    assert set(ids(upgraded.search(query(text="tea")))) == {"m1", "m2"}
    assert ids(upgraded.search(query(text="cocoa"))) == ["b"] and upgraded.search(query(text="coffee")) == []
    with upgraded.unit_of_work() as uow:
        assert uow.threads.delete("t1")
        uow.commit()
    assert upgraded.search(query(text="tea")) == []
    upgraded.close()
    again = open_store()  # and the rebuilt caches agree
    assert ids(again.search(query(text="cocoa"))) == ["b"] and again.search(query(text="tea")) == []


def test_a_version_8_file_upgrades_to_checkpoint_tables_and_keeps_its_data(
    open_store: Opener, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 9 adds the checkpoint tables (D41): a file written at version 8 opens, keeps its
    rows, and takes checkpoints in the same transactions as its memory."""
    monkeypatch.setattr(schema, "load_migrations", lambda: load_migrations()[:8])
    old = open_store()
    seed(old, threads=[thread("t1", user_id="u1")], records=[(record("a", "Ann drinks green tea", user_id="u1"), E1)])
    old.close()
    with raw(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("8",)
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'checkpoints'").fetchone() is None
    monkeypatch.undo()

    upgraded = open_store()
    with raw(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(latest_version()),)
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"checkpoints", "checkpoint_blobs", "checkpoint_writes"} <= tables
        plan = " ".join(
            str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN DELETE FROM checkpoints WHERE run_id = 'r'")
        )
        assert "checkpoints_run" in plan  # deletes by run are indexed
    stored = StoredCheckpoint(
        thread_id="t1", checkpoint_ns="", checkpoint_id="0001", parent_checkpoint_id=None,
        checkpoint=TypedBytes("msgpack", b"cp"), metadata={"step": 0}, channel_versions={"c": "1"},
        run_id="r", created_at=NOW,
    )
    with upgraded.unit_of_work() as uow:
        assert uow.threads.get("t1") is not None
        upgraded.checkpoints(uow).put(stored, [ChannelBlob("c", "1", TypedBytes("json", b"1"))])
        uow.commit()
    upgraded.close()
    again = open_store()
    with again.reading() as uow:
        assert again.checkpoints(uow).get("t1", "") == stored
        assert uow.records.get("a") is not None


def test_checkpoint_deletes_and_reads_search_an_index_never_scan_a_table(open_store: Opener, path: Path) -> None:
    """Deleting a thread's or a run's checkpoints and reading the newest one use the keys and the
    run index (D41): their cost follows the rows they touch, not the table."""
    from palimpsest.adapters.embedded.unit_of_work import _STATEMENTS as sql

    open_store().close()
    statements = [
        *(sql.checkpoint_delete_threads(table, ["t1", "t2"]) for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints")),
        sql.checkpoint_delete_runs(["r1"], writes=True),
        sql.checkpoint_delete_runs(["r1"], writes=False),
        sql.checkpoint_delete("checkpoint_writes", "t1", "", ["c1"]),
        sql.checkpoint_delete("checkpoints", "t1", "", ["c1"]),
        sql.checkpoint_get("t1", "", None),
        sql.checkpoint_blobs("t1", "", [("a", "1"), ("b", "2")]),
        sql.checkpoint_writes("t1", "", "c1"),
    ]
    with raw(path) as conn:
        for statement in statements:
            plan = [str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {statement.sql}", statement.params)]
            scans = [step for step in plan if step.startswith("SCAN checkpoint")]
            assert scans == [] and any(step.startswith("SEARCH checkpoint") for step in plan), (statement.name, plan)


def test_a_file_written_by_a_newer_schema_raises_schema_version_error(open_store: Opener, path: Path) -> None:
    open_store().close()
    with raw(path) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="999"):
        open_store()


def test_datetimes_are_stored_as_fixed_width_utc_text_and_read_back_as_aware_utc(
    store: EmbeddedStore, path: Path
) -> None:
    plus_two = timezone(timedelta(hours=2))
    created = datetime(2025, 3, 14, 14, 0, 0, tzinfo=plus_two)  # 12:00 UTC
    seed(
        store, records=[(record("r1", created_at=created, expires_at=datetime(2030, 1, 1, tzinfo=UTC)), None)]
    )
    with raw(path) as conn:
        stored = conn.execute("SELECT created_at, expires_at FROM records WHERE id = 'r1'").fetchone()
    assert stored == ("2025-03-14T12:00:00.000000Z", "2030-01-01T00:00:00.000000Z")
    with store.unit_of_work() as uow:
        got = uow.records.get("r1")
    assert got is not None and got.created_at == created
    assert got.created_at.utcoffset() == timedelta(0)


def test_embeddings_are_stored_l2_normalised_as_float32_little_endian(
    store: EmbeddedStore, path: Path
) -> None:
    seed(store, records=[(record("r1"), (3.0, 4.0, 0.0, 0.0))])
    with raw(path) as conn:
        (blob,) = conn.execute("SELECT embedding FROM records WHERE id = 'r1'").fetchone()
    assert np.frombuffer(blob, dtype="<f4").tolist() == pytest.approx([0.6, 0.8, 0.0, 0.0])


def test_close_is_idempotent_and_later_use_raises_store_closed(store: EmbeddedStore) -> None:
    uow = store.unit_of_work()
    store.close()
    store.close()
    with pytest.raises(StoreClosedError):
        store.search(query(vector=E1))
    with pytest.raises(StoreClosedError):
        store.unit_of_work()
    with pytest.raises(StoreClosedError), uow:
        pass


def test_the_store_is_a_context_manager_that_closes(path: Path) -> None:
    with EmbeddedStore(path, dimension=4) as store:
        seed(store, records=[(record("r1"), E1)])
    with pytest.raises(StoreClosedError):
        store.search(query(vector=E1))
