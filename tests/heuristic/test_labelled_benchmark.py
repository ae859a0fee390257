"""Tests of the heuristic adapters layer: regression floors on the labelled sets, via benchmarks/bench_heuristics.py.

The floors are the values measured when the set was written, minus a small margin; they can
fail, and lowering one needs a reason. Speed is measured by the benchmark, never asserted here.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_heuristics.py"

# Precision floors lowered from 0.95 to 0.93 with the statements of ARCHITECTURE.md D47: the sets
# label no "memory" record, and the statements write three of their sentences that the patterns
# miss ("Typescript is what I prefer...", "Jazz is my thing...", "We use Postgres 16...") as
# memories with the right content where the labels say preference or fact (51/54 = 0.944).
EXTRACTION_TYPE_PRECISION_FLOOR = 0.93
EXTRACTION_TYPE_RECALL_FLOOR = 0.88
EXTRACTION_TEXT_PRECISION_FLOOR = 0.93
EXTRACTION_TEXT_RECALL_FLOOR = 0.88
LINK_PRECISION_FLOOR = 0.95
LINK_RECALL_FLOOR = 0.90


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_heuristics", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def labelled(bench: ModuleType) -> dict[str, Any]:
    data: dict[str, Any] = bench.load_labelled()
    return data


def test_the_labelled_set_is_big_and_varied_enough(labelled: dict[str, Any]) -> None:
    utterances = labelled["utterances"]
    kinds = {e["record_type"] for u in utterances for e in u["expected"]}
    assert len(utterances) >= 60
    assert kinds == {"preference", "fact", "guideline"}
    assert sum(1 for u in utterances if not u["expected"]) >= 15
    assert len(labelled["link_pairs"]) >= 20
    assert {p["expected"] for p in labelled["link_pairs"]} == {"supersedes", "refines", "duplicates", None}


def test_extraction_precision_and_recall_stay_above_their_floors(bench: ModuleType, labelled: dict[str, Any]) -> None:
    by_type, by_text, misses = bench.score_extraction(labelled)
    detail = "\n".join(misses)
    assert by_type.precision >= EXTRACTION_TYPE_PRECISION_FLOOR, detail
    assert by_type.recall >= EXTRACTION_TYPE_RECALL_FLOOR, detail
    assert by_text.precision >= EXTRACTION_TEXT_PRECISION_FLOOR, detail
    assert by_text.recall >= EXTRACTION_TEXT_RECALL_FLOOR, detail


def test_link_precision_and_recall_stay_above_their_floors(bench: ModuleType, labelled: dict[str, Any]) -> None:
    score, misses = bench.score_links(labelled)
    assert score.precision >= LINK_PRECISION_FLOOR, "\n".join(misses)
    assert score.recall >= LINK_RECALL_FLOOR, "\n".join(misses)


def test_the_scoring_counts_a_prediction_on_a_negative_utterance_as_a_false_positive(bench: ModuleType) -> None:
    data = {"utterances": [{"text": "I love tacos.", "expected": []}], "link_pairs": []}
    by_type, by_text, _ = bench.score_extraction(data)
    assert (by_type.true_positives, by_type.predicted, by_type.expected) == (0, 1, 0)
    assert by_type.precision == 0.0 and by_text.recall == 1.0


def test_the_text_match_needs_nearly_the_same_words(bench: ModuleType) -> None:
    assert bench.text_similarity("The user now prefers sourdough pizza.", "the user now prefers sourdough pizza") == 1.0
    assert bench.text_similarity("The user likes tea.", "The user likes coffee.") < bench.TEXT_MATCH_JACCARD


def test_the_benchmark_runs_end_to_end(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "extraction (type level)" in out and "links" in out and "messages/s" in out


# Measured once on the held-out set (never tuned on it): type 0.969/0.886, text 0.938/0.857,
# links 1.000/1.000 (precision/recall). Floors: the measurement minus a small margin.
HELDOUT_FLOORS = {"type": (0.90, 0.82), "text": (0.88, 0.80), "links": (0.90, 0.90)}


def test_the_held_out_set_stays_above_its_floors(bench: ModuleType) -> None:
    heldout = bench.load_labelled(bench.HELDOUT_PATH)
    by_type, by_text, misses = bench.score_extraction(heldout)
    links, link_misses = bench.score_links(heldout)
    detail = "\n".join(misses + link_misses)
    for name, score in (("type", by_type), ("text", by_text), ("links", links)):
        precision_floor, recall_floor = HELDOUT_FLOORS[name]
        assert score.precision >= precision_floor, f"{name}: {score}\n{detail}"
        assert score.recall >= recall_floor, f"{name}: {score}\n{detail}"
