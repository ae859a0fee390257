"""Smoke test of benchmarks/bench_observability.py (``--quick``). Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_observability.py"


def test_bench_observability_reports_every_mode_for_the_search_and_the_wrapper() -> None:
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("search p50 / mean over 50 calls"), result.stdout
    assert [line.split()[0] for line in lines[1:5]] == ["unwrapped", "none", "unrelated", "all"], result.stdout
    assert lines[5].startswith("the wrapper alone"), result.stdout
    assert [line.split()[0] for line in lines[6:10]] == ["undecorated", "none", "unrelated", "all"], result.stdout
