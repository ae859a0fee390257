"""Smoke test of benchmarks/bench_open.py: a small store built, opened from its snapshot and by a
rebuild in fresh interpreters, then closed with a new snapshot and scanned. Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_open.py"


def test_bench_open_reports_every_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--records", "2000", "--repeats", "1", "--snapshot-min-rows", "1",
         "--dir", str(tmp_path), "--modes", "snapshot,rebuild,rewrite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("snapshot restored=True ") for line in lines), result.stdout
    assert any(line.startswith("rebuild  restored=False") for line in lines), result.stdout
    assert any(line.startswith("rewrite  restored=True ") and "(restored=True)" in line for line in lines)
    assert (tmp_path / "solo.db.index").is_file()  # put back after the rebuild run
