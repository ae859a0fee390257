"""Reliability helpers: an audit of a store after crashes or concurrent writers.

``audit(spec)`` opens the store as a client would (an embedded file: ``EmbeddedStore``, which
also recovers a WAL left by a killed process; a PostgreSQL store, spec as in
``reliability_stores``: ``PostgresStore``, which checks and migrates its schema), then checks
it twice over:

* database level, on a separate connection: for a file, ``PRAGMA integrity_check`` and
  ``PRAGMA foreign_key_check``; on PostgreSQL (which enforces its keys itself), the keyword
  statistics written with each commit: one keyword document per message and record and no
  other, totals and term document counts equal to what the documents and postings hold;
* palimpsest level, the same queries on both: every link's endpoints exist, every record's
  status, reason and ``invalidated_at`` agree with its incoming lifecycle links (D2), and each
  thread's message seqs are exactly ``1..n``.

It returns what the file holds (message ids per thread in seq order, record ids, links), so a
test can compare it with what its writers were told had been stored.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.links import LIFECYCLE_REASONS
from reliability_stores import is_postgres, split


@dataclass
class Snapshot:
    """The committed content of a store, as rows the tests can compare."""

    messages: dict[str, list[str]] = field(default_factory=dict)  # thread id -> message ids by seq
    records: dict[str, str] = field(default_factory=dict)  # record id -> status
    links: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # id -> (source, target, type)
    problems: list[str] = field(default_factory=list)

    @property
    def message_ids(self) -> set[str]:
        return {mid for ids in self.messages.values() for mid in ids}

    @property
    def rows(self) -> int:
        return len(self.message_ids) + len(self.records) + len(self.links)


def audit(spec: Path | str) -> Snapshot:
    """Open the store, check it, and return its content; ``problems`` lists every violation."""
    if is_postgres(str(spec)):
        return _audit_postgres(str(spec))
    path = os.fspath(spec)
    snapshot = Snapshot()
    store = EmbeddedStore(path)
    try:
        reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            integrity = [row[0] for row in reader.execute("PRAGMA integrity_check")]
            if integrity != ["ok"]:
                snapshot.problems.append(f"integrity_check: {integrity[:5]}")
            dangling = reader.execute("PRAGMA foreign_key_check").fetchall()
            if dangling:
                snapshot.problems.append(f"foreign_key_check: {dangling[:5]}")
            _check(reader, snapshot)
        finally:
            reader.close()
    finally:
        store.close()
    return snapshot


def _audit_postgres(spec: str) -> Snapshot:
    import psycopg
    from palimpsest.adapters.postgres.schema import schema_name
    from palimpsest.adapters.postgres.store import PostgresStore
    from psycopg import sql

    url, store_id = split(spec)
    snapshot = Snapshot()
    PostgresStore(url, memory_store_id=store_id, max_connections=1).close()  # opens: schema checked
    with psycopg.connect(url) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")  # one snapshot
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema_name(store_id))))
        _check(conn, snapshot)
        _check_keywords(conn, snapshot)
    return snapshot


def _check_keywords(conn: Any, snapshot: Snapshot) -> None:
    """The keyword statistics a PostgreSQL commit writes with its rows agree with the rows."""
    problems = snapshot.problems
    documents = {(bool(m), str(i)) for m, i in conn.execute("SELECT is_message, id FROM keyword_documents")}
    expected = {(True, mid) for mid in snapshot.message_ids} | {(False, rid) for rid in snapshot.records}
    if documents != expected:
        problems.append(
            f"keyword documents: {sorted(expected - documents)[:5]} missing, {sorted(documents - expected)[:5]} extra"
        )
    totals = conn.execute("SELECT documents, total_length FROM keyword_totals").fetchall()
    held = conn.execute("SELECT count(*), coalesce(sum(length), 0) FROM keyword_documents").fetchone()
    if [tuple(row) for row in totals] != [tuple(held)]:
        problems.append(f"keyword totals {totals} disagree with the documents {held}")
    drift = conn.execute(
        "SELECT coalesce(t.term, p.term), t.documents, p.n FROM keyword_terms t FULL JOIN "
        "(SELECT term, count(*) AS n FROM keyword_postings GROUP BY term) p ON p.term = t.term "
        "WHERE t.documents IS DISTINCT FROM p.n LIMIT 5"
    ).fetchall()
    if drift:
        problems.append(f"keyword term counts disagree with the postings: {drift}")


def _check(conn: Any, snapshot: Snapshot) -> None:
    """The palimpsest-level checks, in SQL both stores run (a DB-API connection's ``execute``)."""
    problems = snapshot.problems
    by_thread: dict[str, list[tuple[int, str]]] = {}
    for thread_id, seq, message_id in conn.execute("SELECT thread_id, seq, id FROM messages"):
        by_thread.setdefault(thread_id, []).append((seq, message_id))
    for thread_id in [row[0] for row in conn.execute("SELECT id FROM threads")]:
        rows = sorted(by_thread.get(thread_id, []))
        seqs = [seq for seq, _ in rows]
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append(f"thread {thread_id}: message seqs are not 1..{len(seqs)}: {seqs[:20]}")
        snapshot.messages[thread_id] = [mid for _, mid in rows]
    orphans = set(by_thread) - set(snapshot.messages)
    if orphans:
        problems.append(f"messages of missing threads: {sorted(orphans)[:5]}")

    records = {
        rid: (status, reason, invalidated_at)
        for rid, status, reason, invalidated_at in conn.execute(
            "SELECT id, status, invalidation_reason, invalidated_at FROM records"
        )
    }
    snapshot.records = {rid: status for rid, (status, _, _) in records.items()}
    incoming: dict[str, list[tuple[str, str, str]]] = {}
    for link_id, source, target, relation, created in conn.execute(
        "SELECT id, source_id, target_id, relation_type, created_at FROM links"
    ):
        snapshot.links[link_id] = (source, target, relation)
        for end in (source, target):
            if end not in records:
                problems.append(f"link {link_id}: endpoint {end} does not exist")
        if source == target:
            problems.append(f"link {link_id} is a self-link")
        if relation in LIFECYCLE_REASONS:
            incoming.setdefault(target, []).append((created, link_id, relation))
    pairs: dict[frozenset[str], set[tuple[str, str]]] = {}
    for source, target, _ in snapshot.links.values():
        pairs.setdefault(frozenset((source, target)), set()).add((source, target))
    for pair, orientations in pairs.items():
        if len(orientations) > 1:
            problems.append(f"records {sorted(pair)} are linked in both orientations")

    for rid, (status, reason, invalidated_at) in records.items():
        lifecycle = sorted(incoming.get(rid, []))
        if lifecycle:
            expected_reason = LIFECYCLE_REASONS[lifecycle[0][2]]
            if (status, reason) != ("invalid", expected_reason) or invalidated_at is None:
                problems.append(
                    f"record {rid}: {len(lifecycle)} incoming lifecycle link(s) but status={status!r}, "
                    f"reason={reason!r}, invalidated_at={invalidated_at!r}"
                )
        elif (status, reason, invalidated_at) != ("valid", None, None):
            problems.append(
                f"record {rid}: no incoming lifecycle link but status={status!r}, reason={reason!r}, "
                f"invalidated_at={invalidated_at!r}"
            )
