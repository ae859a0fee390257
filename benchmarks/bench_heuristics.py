"""Benchmark of the heuristic adapters: extraction and link precision/recall on the labelled set, and throughput.

Run: ``python benchmarks/bench_heuristics.py`` (options: ``--repeat N`` for the throughput loop).

Two sets are scored: ``tests/heuristic/labelled_utterances.json`` (the development set: written
before measuring, but the heuristics were then fixed on what it revealed, so its figures are
optimistic) and ``tests/heuristic/heldout_utterances.json`` (written afterwards and not tuned on:
the better estimate of how the heuristics generalise).

Definitions:

* **extraction, type level** — per utterance, predicted and expected memories are matched one
  to one by record type; precision = matched predictions / predictions, recall = matched
  expectations / expectations, summed over all utterances (so a prediction on a negative
  utterance is a false positive).
* **extraction, text level ("exact-ish")** — as above, but a match also needs the two texts to
  agree: lowercased word tokens (punctuation dropped) with a Jaccard similarity of at least
  0.8. "The user now prefers sourdough pizza." matches "the user now prefers sourdough pizza";
  a paraphrase does not.
* **links** — for each labelled pair the resolver predicts one link type or none; precision =
  correct predicted links / predicted links, recall = correct predicted links / expected links
  (pairs labelled ``null`` count only against precision when a link is predicted).
* **throughput** — user messages per second through ``HeuristicExtractor.extract``, offline,
  one message per request, over the labelled utterances repeated.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.adapters.heuristic import HeuristicExtractor, classify_link
from palimpsest.application.ports import ExtractionRequest
from palimpsest.domain.model import Message

LABELLED_PATH = Path(__file__).resolve().parents[1] / "tests" / "heuristic" / "labelled_utterances.json"
HELDOUT_PATH = LABELLED_PATH.with_name("heldout_utterances.json")
TEXT_MATCH_JACCARD = 0.8
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class Score:
    true_positives: int
    predicted: int
    expected: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected if self.expected else 1.0

    def __str__(self) -> str:
        return (
            f"precision {self.precision:.3f} ({self.true_positives}/{self.predicted})  "
            f"recall {self.recall:.3f} ({self.true_positives}/{self.expected})"
        )


def load_labelled(path: Path = LABELLED_PATH) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def text_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the lowercased word-token sets of two texts."""
    left, right = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _message(text: str, index: int) -> Message:
    return Message(
        id=f"m{index}", thread_id="bench", role="user", content=text, seq=index + 1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def predict(extractor: HeuristicExtractor, text: str, index: int = 0) -> list[tuple[str, str]]:
    request = ExtractionRequest(target_messages=[_message(text, index)])
    return [(m.record_type.value, m.text) for m in extractor.extract(request)]


def _match(predicted: list[tuple[str, str]], expected: list[tuple[str, str]], *, by_text: bool) -> int:
    remaining = list(expected)
    matched = 0
    for record_type, text in predicted:
        best, best_score = None, -1.0
        for candidate in remaining:
            if candidate[0] != record_type:
                continue
            similarity = text_similarity(text, candidate[1])
            if by_text and similarity < TEXT_MATCH_JACCARD:
                continue
            if similarity > best_score:
                best, best_score = candidate, similarity
        if best is not None:
            remaining.remove(best)
            matched += 1
    return matched


def score_extraction(data: dict[str, Any], extractor: HeuristicExtractor | None = None) -> tuple[Score, Score, list[str]]:
    """(type-level score, text-level score, one line per utterance that was not exactly right)."""
    extractor = extractor or HeuristicExtractor()
    tp_type = tp_text = n_predicted = n_expected = 0
    misses: list[str] = []
    for index, item in enumerate(data["utterances"]):
        expected = [(e["record_type"], e["text"]) for e in item["expected"]]
        predicted = predict(extractor, item["text"], index)
        type_hits = _match(predicted, expected, by_text=False)
        text_hits = _match(predicted, expected, by_text=True)
        tp_type += type_hits
        tp_text += text_hits
        n_predicted += len(predicted)
        n_expected += len(expected)
        if text_hits != len(predicted) or text_hits != len(expected):
            misses.append(f"{item['text']!r}: expected {expected}, got {predicted}")
    return Score(tp_type, n_predicted, n_expected), Score(tp_text, n_predicted, n_expected), misses


def score_links(data: dict[str, Any]) -> tuple[Score, list[str]]:
    tp = n_predicted = n_expected = 0
    misses: list[str] = []
    for pair in data["link_pairs"]:
        new, old, expected = pair["new"], pair["old"], pair["expected"]
        got = classify_link(new["text"], new["record_type"], old["text"], old["record_type"])
        n_predicted += got is not None
        n_expected += expected is not None
        tp += got is not None and got == expected
        if got != expected:
            misses.append(f"{new['text']!r} -> {old['text']!r}: expected {expected}, got {got}")
    return Score(tp, n_predicted, n_expected), misses


def throughput(data: dict[str, Any], repeat: int = 20) -> float:
    """User messages per second through ``HeuristicExtractor.extract`` (one message per call)."""
    extractor = HeuristicExtractor()
    messages = [_message(item["text"], i) for i, item in enumerate(data["utterances"])]
    for message in messages:  # warm the regular-expression caches
        extractor.extract(ExtractionRequest(target_messages=[message]))
    start = time.perf_counter()
    for _ in range(repeat):
        for message in messages:
            extractor.extract(ExtractionRequest(target_messages=[message]))
    elapsed = time.perf_counter() - start
    return repeat * len(messages) / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="passes over the utterances for throughput")
    parser.add_argument("--show-misses", action="store_true", help="list the items that were not exactly right")
    args = parser.parse_args(argv)
    data = load_labelled()
    for name, path in (("development set", LABELLED_PATH), ("held-out set", HELDOUT_PATH)):
        if not path.exists():
            continue
        current = load_labelled(path)
        type_score, text_score, extraction_misses = score_extraction(current)
        link_score, link_misses = score_links(current)
        print(f"{name} ({path.name}): {len(current['utterances'])} utterances, {len(current['link_pairs'])} link pairs")
        print(f"  extraction (type level):            {type_score}")
        print(f"  extraction (text, Jaccard >= {TEXT_MATCH_JACCARD}):  {text_score}")
        print(f"  links (type of link):               {link_score}")
        if args.show_misses:
            for line in extraction_misses + link_misses:
                print("    miss:", line)
    rate = throughput(data, args.repeat)
    print(f"extraction throughput: {rate:,.0f} messages/s (offline, one message per call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
