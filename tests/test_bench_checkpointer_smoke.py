"""Smoke test of benchmarks/bench_checkpointer.py: ``--quick`` reports every saver it has, with
ratios, and names the ones it skips. Nothing here asserts a timing."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.memory", reason="the benchmark needs the optional extra 'langgraph'")

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_checkpointer.py"


def test_the_quick_run_reports_each_saver_with_its_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_checkpointer", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(["--quick"]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    out = capsys.readouterr().out
    numbers = r"\s+[\d.]+" * 4 + r"\s+" + r"[\d.]+x " * 3 + r"[\d.]+x"
    assert re.search(r"InMemorySaver" + numbers + r"\n", out)
    assert re.search(r"PalimpsestSaver \(memory\)" + numbers, out)
    assert re.search(r"PalimpsestSaver \(memory, key=\)" + numbers, out)
    assert re.search(r"SqliteSaver(" + numbers + r"|: skipped: pip install langgraph-checkpoint-sqlite)", out)
