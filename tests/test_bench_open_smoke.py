"""Smoke test of benchmarks/bench_open.py: a small store built, opened from its snapshot and by a
rebuild in fresh interpreters. Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_open.py"


def test_bench_open_reports_both_modes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--records", "2000", "--repeats", "1", "--snapshot-min-rows", "1",
         "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("snapshot restored=True ") for line in lines), result.stdout
    assert any(line.startswith("rebuild  restored=False") for line in lines), result.stdout
    assert (tmp_path / "solo.db.index").is_file()  # put back after the rebuild run
