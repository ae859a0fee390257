"""Embedded store: thread summaries, settings and expiry purges (schema version 2), and upgrades."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.schema import load_migrations
from palimpsest.domain.errors import ConflictError, DuplicateIdError, ThreadNotFoundError, ValidationError
from palimpsest.domain.model import RecordStatus, ThreadSummary

from .helpers import E1, NOW, at, ids, message, query, raw, record, seed, thread

Opener = Callable[..., EmbeddedStore]


def summary(
    summary_id: str, revision: int, *, covered: int = 0, thread_id: str = "t1", **kw: object
) -> ThreadSummary:
    return ThreadSummary(
        id=summary_id,
        thread_id=thread_id,
        revision=revision,
        text=f"summary {revision}",
        created_at=at(revision),
        covered_through_seq=covered,
        **kw,  # type: ignore[arg-type]
    )


def test_summary_revisions_are_a_compare_and_set_per_thread(store: EmbeddedStore) -> None:
    seed(store, threads=[thread("t1"), thread("t2")])
    first = summary("s1", 1, covered=3, topics=("tea", "ünïcode"), metadata={"model": "x"})
    with store.unit_of_work() as uow:
        uow.summaries.add(first)
        uow.summaries.add(summary("s-other", 1, thread_id="t2"))  # revisions are per thread
        with pytest.raises(ConflictError):
            uow.summaries.add(summary("s1-again", 1))
        with pytest.raises(DuplicateIdError):
            uow.summaries.add(summary("s1", 2))
        with pytest.raises(ThreadNotFoundError):
            uow.summaries.add(summary("s-ghost", 1, thread_id="ghost"))
        uow.summaries.add(summary("s2", 2, covered=6))
        uow.commit()
    with store.unit_of_work() as uow:
        assert uow.summaries.list_for_thread("t1") == [first, summary("s2", 2, covered=6)]
        assert uow.summaries.latest("t1") == summary("s2", 2, covered=6)
        assert uow.summaries.latest("nope") is None


def test_invalidating_and_pruning_summaries(store: EmbeddedStore) -> None:
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        for revision, covered in ((1, 2), (2, 4), (3, 6)):
            uow.summaries.add(summary(f"s{revision}", revision, covered=covered))
        assert uow.summaries.invalidate_covering("t1", 4) == 2
        assert uow.summaries.invalidate_covering("t1", 4) == 0
        latest = uow.summaries.latest("t1")
        assert latest is not None and latest.status is RecordStatus.INVALID
        assert uow.summaries.latest("t1", valid_only=True) == summary("s1", 1, covered=2)
        with pytest.raises(ValidationError):
            uow.summaries.prune("t1", keep=-1)
        assert uow.summaries.prune("t1", keep=2) == 1
        assert [s.revision for s in uow.summaries.list_for_thread("t1")] == [2, 3]
        assert uow.summaries.prune("t1", keep=0) == 2
        uow.commit()


def test_summaries_are_deleted_with_their_thread(store: EmbeddedStore) -> None:
    seed(store, threads=[thread("t1")])
    with store.unit_of_work() as uow:
        uow.summaries.add(summary("s1", 1))
        uow.threads.delete("t1")
        assert uow.summaries.list_for_thread("t1") == []


def test_settings_hold_json_values_shared_by_every_instance(open_store: Opener) -> None:
    first, second = open_store(), open_store()
    with first.unit_of_work() as uow:
        uow.settings.set("retention", {"days": 30, "kinds": ["message"], "ratio": 0.5})
        uow.settings.set("model", "text-embedding-3-small")
        with pytest.raises(ValidationError):
            uow.settings.set("", 1)
        with pytest.raises(ValidationError):
            uow.settings.set("bad", float("nan"))
        uow.commit()
    with second.unit_of_work() as uow:
        assert uow.settings.get("retention") == {"days": 30, "kinds": ["message"], "ratio": 0.5}
        assert uow.settings.get("missing") is None
        uow.settings.set("model", None)
        assert uow.settings.get("model") is None


def test_purging_expired_rows_removes_them_from_reads_and_search(open_store: Opener) -> None:
    store, other = open_store(), open_store()
    seed(
        store,
        threads=[thread("t1")],
        messages=[
            (message("m-old", "t1", 1, expires_at=at(-1)), E1),
            (message("m-now", "t1", 2, expires_at=NOW), E1),
            (message("m-later", "t1", 3, expires_at=at(5)), E1),
            (message("m-never", "t1", 4), E1),
        ],
        records=[
            (record("r-b", expires_at=at(-1)), E1),
            (record("r-a", expires_at=at(-1)), E1),
            (record("r-c", expires_at=at(-2)), E1),
            (record("r-never"), E1),
        ],
    )
    with store.unit_of_work() as uow:
        assert uow.records.expired_ids(NOW) == ["r-c", "r-a", "r-b"]  # by expiry, then id
        assert uow.records.expired_ids(NOW, limit=1) == ["r-c"]
        assert uow.messages.purge_expired(NOW) == [("t1", 1), ("t1", 2)]
        assert uow.messages.purge_expired(NOW) == []
        uow.commit()
    earlier = query(vector=E1, now=at(-10))  # a "now" at which nothing had expired yet
    assert set(ids(other.search(earlier))) == {"m-later", "m-never", "r-a", "r-b", "r-c", "r-never"}


def test_opening_a_version_1_file_upgrades_it_in_place_keeping_its_data(
    open_store: Opener, path: Path
) -> None:
    store = open_store()
    seed(store, threads=[thread("t1")], records=[(record("r1", "kept across the upgrade"), E1)])
    store.close()
    with raw(path) as conn:  # turn the file back into what version 1 wrote
        conn.execute("BEGIN")
        for statement in (
            "DROP TABLE summaries",
            "DROP TABLE settings",
            "DROP INDEX messages_expiry",
            "DROP INDEX records_expiry",
            "DROP TABLE extraction_jobs",
            "DROP TABLE images",
            "DROP TABLE checkpoints",
            "DROP TABLE checkpoint_blobs",
            "DROP TABLE checkpoint_writes",
            "DELETE FROM schema_migrations WHERE version > 1",
            "UPDATE meta SET value = '1' WHERE key = 'schema_version'",
        ):
            conn.execute(statement)
        conn.execute("COMMIT")
    upgraded = open_store()
    with raw(path) as conn:
        latest = load_migrations()[-1].version
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(latest),)
        assert [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == list(
            range(1, latest + 1)
        )
    assert ids(upgraded.search(query(text="upgrade"))) == ["r1"]
    with upgraded.unit_of_work() as uow:
        uow.summaries.add(summary("s1", 1))
        uow.commit()
