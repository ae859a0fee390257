"""Smoke test of benchmarks/bench_search.py on tiny data, so the benchmark cannot silently rot.

Nothing here asserts a timing: speed is measured by the benchmark, not by the test suite.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_search.py"


def _load_benchmark() -> ModuleType:
    embedded = pytest.importorskip("palimpsest.adapters.embedded")
    if not hasattr(embedded, "EmbeddedStore"):
        pytest.skip("the embedded adapter is not written yet")
    spec = importlib.util.spec_from_file_location("bench_search", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return module


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    module = _load_benchmark()
    yield module
    sys.modules.pop("bench_search", None)


def test_the_benchmark_runs_end_to_end_on_tiny_data_and_reports_four_figures(
    bench: ModuleType, tmp_path: Path
) -> None:
    config = bench.Config(
        records=2_000, users=10, links=2_000, dim=16, queries=5, warmup=1, batch=500, open_repeats=1
    )
    result = bench.run(config, tmp_path, log=lambda _line: None)

    assert [f.key for f in result.figures] == ["a", "b", "c", "d"]
    assert all(math.isfinite(f.value_ms) for f in result.figures)
    # Each scoped search found a full page, and the two-hop searches really expanded the graph.
    assert result.hits_per_query == {"a": 10, "b": 10}
    assert result.mean_linked_at_two_hops > 0
    report = bench.report(result, elapsed=1.0, quick=True)
    assert report.count("target <=") == 4


def test_random_pairs_contain_no_self_links_duplicates_or_reversed_duplicates(bench: ModuleType) -> None:
    ids = [f"r{i}" for i in range(50)]
    pairs = bench.random_pairs(np.random.default_rng(1), ids, 1_000)
    assert len(pairs) == 1_000
    assert all(a != b for a, b in pairs)
    assert len({frozenset(p) for p in pairs}) == len(pairs)


def test_the_command_line_quick_flag_selects_a_small_configuration(bench: ModuleType) -> None:
    quick = bench.Config.quick()
    assert quick.records < bench.Config().records
    assert bench.Config().queries >= 200
