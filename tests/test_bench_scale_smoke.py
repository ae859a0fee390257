"""Smoke test of benchmarks/bench_scale.py on tiny data, so the benchmark cannot silently rot.

Nothing here asserts a timing or a recall target: those are measured by the benchmark.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_scale.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.mark.parametrize("data", ["mixture", "random"])
def test_the_benchmark_runs_on_tiny_data_and_reports_every_figure(bench: ModuleType, data: str) -> None:
    config = replace(
        bench.Config(),
        n=3_000,
        dim=32,
        queries=5,
        warmup=1,
        data=data,
        centroids=30,
        batch=1_000,
        candidates_min=200,
    )
    assert config.threshold == 0  # below the library's threshold the two-pass path is forced
    result = bench.run(config, log=lambda _line: None)
    assert set(result.latency_ms) == {"exact, all", "two-pass, all", "exact, one type", "two-pass, one type"}
    assert all(math.isfinite(v) for pair in result.latency_ms.values() for v in pair)
    assert set(result.cpu_ms) == set(result.latency_ms)
    assert set(result.recall) == {"all", "one type"}
    assert all(0.0 <= r <= 1.0 for r in result.recall.values())
    assert result.peak_rss_mb > 0
    text = bench.report(result)
    assert "recall@10" in text and "peak RSS" in text and "load average" in text


def test_recall_counts_an_equally_good_row_as_a_hit(bench: ModuleType) -> None:
    exact = [[(0.9, 2, "a"), (0.5, 2, "b")]]
    assert bench.recall(exact, [[(0.9, 2, "a"), (0.5, 2, "c")]], 2) == (1.0, 1.0, 0.5)
    assert bench.recall(exact, [[(0.9, 2, "a"), (0.4, 2, "d")]], 2)[0] == 0.5


def test_the_sentence_generator_gives_distinct_sentences(bench: ModuleType) -> None:
    texts = bench.sentences(500)
    assert len(texts) == len(set(texts)) == 500
    assert bench.sentences(500) == texts
