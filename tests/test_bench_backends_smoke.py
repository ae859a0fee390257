"""Smoke test of benchmarks/bench_backends.py: a tiny run of the side-by-side table (toy
hashing vectors) against the session's PostgreSQL server. Nothing here asserts a timing."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from postgres_server import PostgresTarget

from benchmarks import bench_backends


@pytest.mark.postgres
def test_bench_backends_reports_every_figure_for_both_backends(
    postgres_target: PostgresTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--records", "600", "--users", "3", "--queries", "6", "--warmup", "2", "--messages", "40",
            "--message-batch", "20", "--open-repeats", "1", "--embedder", "hashing",
            "--postgres-url", postgres_target.url, "--dir", str(tmp_path), "--store-id", "bench_smoke"]
    assert bench_backends.main(argv) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| ") and not line.startswith("| figure")}
    for name in ("build: records + links through the ports",
                 "scoped search (200 rows of one user), p50 / p95",
                 "unscoped search (600 rows), p50 / p95",
                 "scoped search, num_hops=2, p50 / p95",
                 "add_messages, 40 messages in batches of 20",
                 "open_memory + first search, fresh process (best / median of 1)",
                 "public AgentMemory.search with hashing (query embedded), p50 / p95"):
        embedded, postgres = rows[name][0], rows[name][1]
        assert embedded != "-" and postgres != "-", (name, out)
    # Both backends hold the same data and search it exactly at this size: the same answers.
    assert rows["scoped search (200 rows of one user), p50 / p95"][3] == "1.000 / 1.000"
    assert rows["unscoped search (600 rows), p50 / p95"][3] == "1.000 / 1.000"
    assert "linked records per num_hops=2 search (mean): embedded " in out
    with psycopg.connect(postgres_target.url) as conn:  # the benchmark's schema is dropped
        left = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'palimpsest_bench_smoke'").fetchone()
    assert left is None
