"""Smoke test of benchmarks/bench_ingest.py: ``--quick`` with the hashing embedder, one run of
each setting. Nothing here asserts a timing; the embed counts are the library's behaviour."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ingest.py"


def test_the_quick_run_reports_each_text_embedded_once(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_ingest", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    try:
        spec.loader.exec_module(module)
        out = tmp_path / "report.json"
        assert module.main(["--quick", "--embedder", "hashing", "--repeat", "1", "--json", str(out)]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    report = json.loads(out.read_text())
    messages = report["messages"]
    assert messages == 54 and report["sessions"] == 6
    off, on = report["off"], report["on"]
    assert off["embed"] == {"calls": messages, "document_texts": messages, "query_texts": 0}
    assert off["memories"] == 0 and len(off["messages_per_s"]) == 1
    assert on["memories"] > 0 and on["links"] > 0
    # One-message passes: every message and every memory embedded once, no query embedded.
    assert on["embed"]["document_texts"] == messages + on["memories"]
    assert on["embed"]["query_texts"] == 0
