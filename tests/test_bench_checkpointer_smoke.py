"""Smoke test of benchmarks/bench_checkpointer.py: a short run reports every saver it has, with
ratios to ``InMemorySaver`` and to each store's peer, names the ones it skips, and leaves no
schema behind on the PostgreSQL server. Nothing here asserts a timing."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from postgres_server import PostgresTarget

pytest.importorskip("langgraph.checkpoint.memory", reason="the benchmark needs the optional extra 'langgraph'")

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_checkpointer.py"
FIGURES = r"\s+[\d.]+" * 4 + r"\s+" + r"[\d.]+x " * 3 + r"[\d.]+x"
"""A row's four p50s and its four ratios to InMemorySaver."""
TO_PEER = r"\s+" + r"[\d.]+x " * 4 + r"\({peer}\)\n"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    spec = importlib.util.spec_from_file_location("bench_checkpointer", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(argv) == 0
    finally:
        sys.modules.pop(spec.name, None)
    return capsys.readouterr().out


def test_a_short_run_reports_each_saver_with_its_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["--puts", "5", "--runs", "1", "--steps", "5", "--no-postgres"], capsys)
    assert re.search(r"InMemorySaver" + FIGURES + r"\n", out)
    assert re.search(r"PalimpsestSaver \(memory\)" + FIGURES + TO_PEER.format(peer="InMemorySaver"), out)
    assert re.search(r"PalimpsestSaver \(memory, key=\)" + FIGURES + TO_PEER.format(peer="InMemorySaver"), out)
    assert re.search(r"PalimpsestSaver \(embedded, keep_latest=10\)" + FIGURES, out)
    if re.search(r"SqliteSaver: skipped: pip install langgraph-checkpoint-sqlite", out) is None:
        assert re.search(r"SqliteSaver" + FIGURES + r"\n", out)
        assert re.search(r"PalimpsestSaver \(embedded\)" + FIGURES + TO_PEER.format(peer="SqliteSaver"), out)
    assert "PalimpsestSaver (postgres" not in out and "PostgresSaver" not in out
    assert re.search(r"load average at the start: [\d.]+ [\d.]+ [\d.]+\n", out)
    assert re.search(r"load average at the end: [\d.]+ [\d.]+ [\d.]+\n", out)


@pytest.mark.postgres
def test_the_postgres_rows_run_on_the_given_server_and_leave_no_schema(
    postgres_target: PostgresTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres", reason="PostgresSaver: pip install langgraph-checkpoint-postgres")
    import psycopg

    out = _run(["--puts", "3", "--runs", "1", "--steps", "5", "--postgres-url", postgres_target.url], capsys)
    assert "PostgreSQL server: given URL" in out
    assert re.search(r"PostgresSaver" + FIGURES + r"\n", out)
    for suffix in ("", ", key=", ", keep_latest=10"):
        row = rf"PalimpsestSaver \(postgres{re.escape(suffix)}\)" + FIGURES + TO_PEER.format(peer="PostgresSaver")
        assert re.search(row, out), out
    with psycopg.connect(postgres_target.url) as conn:  # the benchmark's schemas are dropped
        left = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'langgraph_bench_%' OR nspname LIKE 'palimpsest_ckbench_%'"
        ).fetchall()
    assert left == []
