"""Smoke test of benchmarks/bench_workers.py: a small backlog served by 1 and by 2 worker
processes, each job once. Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the workers' model is the OpenAI-compatible extractor ('openai' extra)")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_workers.py"


def test_bench_workers_reports_each_worker_count(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--conversations", "4", "--appends", "2", "--delay", "0", "--workers", "1,2"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("workers=1 ") and "jobs=8 " in line and "(each job once)" in line for line in lines)
    assert any(line.startswith("workers=2 ") and "(each job once)" in line for line in lines), result.stdout
    assert any(line.startswith("2 workers / 1: ") for line in lines), result.stdout
