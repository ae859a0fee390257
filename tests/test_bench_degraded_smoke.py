"""Smoke test of benchmarks/bench_degraded.py: ``--quick``, every part, on a loopback server.
Nothing here asserts a timing; that appends during the outage are stored and embedded later is
the library's behaviour (ARCHITECTURE.md D43)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the benchmark's embedder is the OpenAI-compatible adapter")

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_degraded.py"


def test_the_quick_run_reports_every_part(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_degraded", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(["--quick"]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    out = capsys.readouterr().out
    assert re.search(r"\(a\) store of 500 messages: first append [\d.]+ ms, next 20 median [\d.]+ ms", out)
    assert re.search(r"\(b\) server down: median append [\d.]+ ms, 20/20 stored", out)
    assert re.search(r"\(c\) server back: embed_waiting\(\) embedded 20 rows .*vector search finds them: True", out)
