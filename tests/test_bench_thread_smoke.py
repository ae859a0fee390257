"""Smoke test of benchmarks/bench_thread.py: ``--quick`` with the hashing embedder, every part.
Nothing here asserts a timing; the summary's size and repeats are the library's behaviour."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_thread.py"


def test_the_quick_run_reports_every_part(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_thread", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(["--quick", "--embedder", "hashing"]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    out = capsys.readouterr().out
    assert re.search(r"\(a\) .*100 messages [\d.]+ ms, 300 messages [\d.]+ ms", out)
    sizes = re.search(r"\(b\) 100 near-identical notes: summary ([\d,]+) characters.*repeated sentences (\d+)", out)
    assert sizes is not None
    assert 0 < int(sizes.group(1).replace(",", "")) <= 3500 and sizes.group(2) == "0"
    assert re.search(r"\(c\) add_messages.*ratio [\d.]+", out)
