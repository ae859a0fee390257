"""Smoke test of benchmarks/bench_peers.py: ``--quick`` with whatever peers are installed.

palimpsest and numpy always run; sqlite-vec, LangGraph, Chroma and LanceDB run when installed
(the ``bench`` extra) and are otherwise reported as skipped with a reason. Nothing here asserts a
timing.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_peers.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_peers", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def report(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("peers") / "report.json"
    assert bench.main(["--quick", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_every_system_has_a_scoped_and_an_unscoped_row_per_size(bench: ModuleType, report: dict) -> None:
    sizes = report["config"]["sizes"]
    cells = {(r["size"], r["scope"], r["system"]) for r in report["search"]}
    assert cells == {
        (n, s, system) for n in sizes for s in ("scoped", "unscoped") for system in bench.SYSTEMS
    }


def test_palimpsest_and_numpy_always_run_and_find_the_exact_neighbours(bench: ModuleType, report: dict) -> None:
    for row in report["search"]:
        if row["system"] in ("palimpsest", "numpy"):
            assert row["status"] == "ok", row
    for row in report["search"]:
        if row["status"] == "ok":
            assert math.isfinite(row["p50_ms"]) and row["p95_ms"] >= row["p50_ms"] * 0.999
            assert row["cpu_p50_ms"] >= 0
            assert row["queries"] >= report["config"]["min_queries"]
            if row["system"] in bench.APPROXIMATE:
                assert 0 <= row["recall_at_10"] <= 1, row
            else:  # an exact system: recall against the numpy ranking is 1 up to float ties
                assert row["recall_at_10"] >= 0.95, row
            assert row["ratio_to_palimpsest"] is not None
        if row["system"] == "palimpsest" and row["status"] == "ok":
            assert row["ratio_to_palimpsest"] == pytest.approx(1.0)


def test_a_peer_that_cannot_run_is_skipped_with_a_reason(bench: ModuleType, report: dict) -> None:
    for system in bench.SYSTEMS:
        reason = bench.unavailable(system)
        rows = [r for r in report["search"] if r["system"] == system]
        if reason is None:
            for r in rows:
                size_reason = bench.size_skip(system, r["size"])
                assert r["status"] == ("ok" if size_reason is None else "skipped"), r
                assert r.get("reason") == size_reason, r
        else:
            assert "pip install" in reason, reason
            assert all(r["status"] == "skipped" and r["reason"] for r in rows), rows
            assert any(s["system"] == system for s in report["skipped"])


def test_every_system_says_what_its_timed_region_holds(bench: ModuleType, report: dict) -> None:
    assert set(bench.TIMED) == set(bench.SYSTEMS)
    assert set(report["timed"]) == set(report["config"]["systems"])
    assert "SearchQuery(" in bench.TIMED["palimpsest"]


def test_each_persisted_system_is_opened_by_a_fresh_process(bench: ModuleType, report: dict) -> None:
    ran = {(r["system"], r["size"]) for r in report["search"] if r["status"] == "ok"}
    opened = {(o["system"], o["size"]): o for o in report["open"]}
    assert set(opened) == ran
    for (system, _), row in opened.items():
        if system in bench.PERSISTED:
            assert row["status"] == "ok", row
            assert row["open_ms"] > 0 and row["import_s"] >= 0
            assert row["open_ms"] == pytest.approx(row["connect_ms"] + row["first_search_ms"])
            if system not in bench.APPROXIMATE:
                assert row["first_recall_at_10"] >= 0.95, row
        else:
            assert row["status"] == "n/a" and row["reason"], row
    assert opened[("palimpsest", report["config"]["sizes"][0])]["status"] == "ok"


def test_memory_graph_and_api_figures_are_reported(report: dict) -> None:
    ran = {r["system"] for r in report["search"] if r["status"] == "ok"}
    assert {m["system"] for m in report["memory"]} == ran
    assert all(math.isfinite(m["peak_mib"]) for m in report["memory"])
    hops = report["graph_hops"]["rows"]
    assert [h["hops"] for h in hops] == [0, 1, 2, 3, 4, 5]
    assert hops[0]["linked_per_search"] == 0 and hops[2]["linked_per_search"] > 0
    api = report["api"]
    assert api["card_p50_ms"] > 0 and api["add_messages_per_s"] > 0
    assert report["load_average"]["start"] and report["load_average"]["end"]


def test_the_rendered_report_has_the_tables(bench: ModuleType, report: dict) -> None:
    text = bench.render(report)
    assert "ratio" in text and "recall@10" in text and "num_hops=5" in text and "add_messages" in text
    assert "open ms" in text and "timed region" in text


def test_a_larger_size_is_skipped_when_the_projection_from_a_smaller_one_exceeds_the_limits(
    bench: ModuleType,
) -> None:
    config = bench.Config(max_build_s=100.0)
    done = [
        {
            "system": "langgraph",
            "size": 100_000,
            "status": "ok",
            "build_s": 20.0,
            "memory": {"peak_over_baseline_mib": 1.0},
        },
    ]
    reason = bench.projected_skip("langgraph", 1_000_000, config, done)
    assert reason is not None and "projected build time" in reason
    assert bench.projected_skip("numpy", 1_000_000, config, done) is None
