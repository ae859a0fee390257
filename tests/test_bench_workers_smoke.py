"""Smoke test of benchmarks/bench_workers.py: a small backlog served by 1 and by 2 worker
processes, each job once, on an embedded file, and by 2 on the session's PostgreSQL server.
Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import PostgresTarget

pytest.importorskip("openai", reason="the workers' model is the OpenAI-compatible extractor ('openai' extra)")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_workers.py"


def run_bench(cwd: Path, *options: str, workers: str = "1,2") -> list[str]:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--conversations", "4", "--appends", "2", "--delay", "0", "--workers", workers,
         *options],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for count in workers.split(","):
        assert any(
            line.startswith(f"workers={count} ") and "jobs=8 " in line and "(each job once)" in line for line in lines
        ), result.stdout
    if workers == "1,2":
        assert any(line.startswith("2 workers / 1: ") for line in lines), result.stdout
    return lines


def test_bench_workers_reports_each_worker_count(tmp_path: Path) -> None:
    assert run_bench(tmp_path)[0] == "store: embedded"


@pytest.mark.postgres
def test_bench_workers_runs_on_a_postgresql_server(tmp_path: Path, postgres_target: PostgresTarget) -> None:
    import psycopg

    # Two workers on one backlog: the comparison with one worker is the embedded run's (above).
    assert run_bench(tmp_path, "--store", postgres_target.url, workers="2")[0] == "store: postgres"
    with psycopg.connect(postgres_target.url) as conn:  # each run's backlog dropped at the end
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'palimpsest_bench_workers_%'")
        assert left.fetchone() == (0,)
