"""Smoke test of benchmarks/bench_http_load.py: a 3 s run of 2 server processes and 8 clients on
an embedded file; every request answered, no acknowledged write lost, the server stopped with
exit code 0. Nothing here asserts a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

pytestmark = pytest.mark.slow  # about 15 to 25 s (server start-up, seeding, the run, the check)

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_http_load.py"


def test_bench_http_load_reports_every_operation_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--store", "embedded", "--workers", "2", "--clients", "8", "--seconds", "3",
         "--seed", "5", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [figures] = json.loads(out.read_text(encoding="utf-8"))
    assert figures["errors"] == {} and figures["lost_writes"] == 0 and figures["server_exit_code"] == 0
    assert figures["acknowledged_writes"] > 0
    assert all(figures["operations"][op]["n"] > 0 for op in ("add_memory", "add_messages", "search", "card"))
    assert result.stdout.startswith("store=embedded workers=2 clients=8 ")
