"""Smoke test of benchmarks/bench_api.py's chat mode (the card after each new message) with the
hashing embedder. Nothing here asserts a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_api.py"


def test_bench_api_chat_mode_reports_the_three_cards_and_the_search() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--mode", "chat", "--embedder", "hashing", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "card after a new message p50" in out, out
    assert "card on the unchanged thread p50" in out and "search p50" in out, out
    assert "first card of the thread in a new client" in out, out
