"""The offline extractor's statement selector, learnt and checked by leave-one-conversation-out.

Run from the repository root (the data file is not in the repository: see the README):

    python -m benchmarks.extraction.selector --data benchmarks/locomo/data/locomo10.json

For every session of the development half (conv-26, -30, -41, -42, -43), every turn's pattern
memories (always kept) and candidate statements (``adapters/heuristic/statements.py``: the
first-person sentences that pass its rules, rewritten about the speaker) are scored against the
session's gold observations by the benchmark's matcher (MiniLM cosine >= 0.70). A candidate's
label is whether it matches some gold fact. For each conversation in turn, a logistic
regression over the candidates' :data:`~palimpsest.adapters.heuristic.statements.FEATURES` is
fitted on the four others, and its threshold chosen on those four (the one with the best F1 of
recall and precision, memories of the patterns included); the fold's figures are the fifth
conversation's. The shipped weights and threshold are the same procedure on all five; the
command prints them in the form ``statements.py`` holds them.

This is the candidates' figure, computed without the library's store: ``python -m
benchmarks.extraction`` is the end-to-end check of the shipped defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.extraction`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.extraction"

import numpy as np
from palimpsest.adapters.heuristic._text import sentences
from palimpsest.adapters.heuristic.extractor import pattern_hits, unasserted_sentences
from palimpsest.adapters.heuristic.statements import FEATURES, candidates, features, looks_english
from palimpsest.domain.text import normalise_apostrophes

from benchmarks.locomo.loader import DEV_CONVERSATIONS, DOWNLOAD_HINT, load
from benchmarks.quality.common import chosen_embedder

from .run import COSINE_THRESHOLD, DEFAULT_CACHE, DEFAULT_DATA, cosine_matrix

L2 = 1.0
STEPS = 400
THRESHOLDS = tuple(round(0.025 * i, 3) for i in range(36))


@dataclass
class Session:
    gold: list[str]
    patterns: int  # the first ``patterns`` columns of ``cosines`` are the pattern memories
    features: np.ndarray  # one row per candidate
    cosines: np.ndarray  # gold x (patterns + candidates)


def sessions_of(conversation: Any, embedder: Any) -> list[Session]:
    by_session: dict[int, list[Any]] = {}
    for turn in conversation.turns:
        by_session.setdefault(turn.session, []).append(turn)
    observed: dict[int, list[str]] = {}
    for fact in conversation.observations:
        observed.setdefault(fact.session, []).append(fact.text)
    out: list[Session] = []
    for number in sorted(by_session):
        patterns: list[str] = []
        rewritten: list[str] = []
        rows: list[list[float]] = []
        for turn in by_session[number]:
            if not looks_english(turn.text):
                continue
            hits = pattern_hits(turn.text, turn.speaker)
            patterns += [hit[1] for _, hit in hits]
            count = len(sentences(normalise_apostrophes(turn.text)))
            for said, text in candidates(turn.text, turn.speaker, skip={i for i, _ in hits} | unasserted_sentences(turn.text)):
                rewritten.append(text)
                rows.append(features(said, count))
        gold = observed.get(number, [])
        texts = patterns + rewritten
        vectors = embedder.embed([*gold, *texts]) if gold and texts else []
        cosines = cosine_matrix(vectors[: len(gold)], vectors[len(gold) :])
        out.append(Session(gold, len(patterns), np.asarray(rows, dtype=np.float64).reshape(-1, len(FEATURES)), cosines))
    return out


def fit(sessions: Sequence[Session]) -> np.ndarray:
    """Logistic regression (L2, gradient descent on standardised features); the weights on the
    raw features (the standardisation folded into them), bias first."""
    x = np.concatenate([s.features for s in sessions])
    y = np.concatenate(
        [(s.cosines[:, s.patterns :].max(axis=0) >= COSINE_THRESHOLD) if s.gold else np.zeros(len(s.features))
         for s in sessions]
    ).astype(np.float64)
    if not len(y):
        return np.zeros(len(FEATURES))
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-6
    mean[0], spread[0] = 0.0, 1.0
    z = (x - mean) / spread
    w = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) / len(y) + L2 * w / len(y)
        gradient[0] -= L2 * w[0] / len(y)
        w -= gradient
    raw = w / spread
    raw[0] = w[0] - float((w[1:] * mean[1:] / spread[1:]).sum())
    return raw


def figures(sessions: Sequence[Session], weights: np.ndarray, threshold: float) -> dict[str, Any]:
    gold = recalled = memories = precise = 0
    for s in sessions:
        scores = 1.0 / (1.0 + np.exp(-(s.features @ weights))) if len(s.features) else np.zeros(0)
        keep = list(range(s.patterns)) + [s.patterns + j for j in np.flatnonzero(scores >= threshold)]
        gold += len(s.gold)
        memories += len(keep)
        if s.gold and keep:
            chosen = s.cosines[:, keep]
            recalled += int((chosen.max(axis=1) >= COSINE_THRESHOLD).sum())
            precise += int((chosen.max(axis=0) >= COSINE_THRESHOLD).sum())
    recall = recalled / gold if gold else 0.0
    precision = precise / memories if memories else 0.0
    return {
        "gold": gold, "recalled": recalled, "memories": memories, "precise": precise,
        "recall": round(recall, 4), "precision": round(precision, 4),
        "memories_per_session": round(memories / len(sessions), 2) if sessions else 0.0,
        "f1": round(2 * recall * precision / (recall + precision), 4) if recall + precision else 0.0,
    }


def choose(sessions: Sequence[Session]) -> tuple[np.ndarray, float]:
    """The weights fitted on ``sessions`` and the threshold with the best F1 on them."""
    weights = fit(sessions)
    best = max(THRESHOLDS, key=lambda t: (figures(sessions, weights, t)["f1"], -t))
    return weights, best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.extraction.selector", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversation", action="append", choices=DEV_CONVERSATIONS,
                        help="a development conversation (repeatable, two at least; default all five)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache folder (shared with benchmarks.locomo)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm",
                        help="hashing: fast smoke runs, no quality figures")
    parser.add_argument("--json", metavar="PATH", help="write the folds' figures and the weights as JSON")
    args = parser.parse_args(argv)
    chosen = tuple(dict.fromkeys(args.conversation or DEV_CONVERSATIONS))
    if len(chosen) < 2:
        parser.error("leave-one-conversation-out needs two conversations at least")
    try:
        conversations = load(args.data, chosen)
    except FileNotFoundError:
        print(f"LoCoMo data not found at {args.data}: {DOWNLOAD_HINT}", file=sys.stderr)
        return 2
    embedder = chosen_embedder(args.embedder, None if args.no_cache else args.cache)
    data = {c.sample_id: sessions_of(c, embedder) for c in conversations}
    embedder.save()
    folds: dict[str, Any] = {}
    pooled = {"gold": 0, "recalled": 0, "memories": 0, "precise": 0}
    for held_out in data:
        training = [s for name, rows in data.items() if name != held_out for s in rows]
        weights, threshold = choose(training)
        scored = figures(data[held_out], weights, threshold)
        folds[held_out] = {"threshold": threshold, "train": figures(training, weights, threshold), "test": scored}
        for key in pooled:
            pooled[key] += scored[key]
    recall = pooled["recalled"] / pooled["gold"] if pooled["gold"] else 0.0
    precision = pooled["precise"] / pooled["memories"] if pooled["memories"] else 0.0
    everything = [s for rows in data.values() for s in rows]
    weights, threshold = choose(everything)
    print("| held out | threshold (chosen on the other four) | train recall | train precision "
          "| recall | precision | memories/session |")
    print("|---|---|---|---|---|---|---|")
    for name, fold in folds.items():
        print(f"| {name} | {fold['threshold']} | {fold['train']['recall']:.3f} | {fold['train']['precision']:.3f} "
              f"| {fold['test']['recall']:.3f} | {fold['test']['precision']:.3f} | {fold['test']['memories_per_session']} |")
    print(f"| pooled | | | | {recall:.3f} | {precision:.3f} | "
          f"{pooled['memories'] / sum(len(r) for r in data.values()):.2f} |")
    print(f"\nAll five: threshold {threshold}, {figures(everything, weights, threshold)}")
    print("SELECTOR_WEIGHTS: Final = (" + ", ".join(f"{w:.4f}" for w in weights) + ")")
    print(f"SELECTOR_THRESHOLD: Final = {threshold}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "folds": folds, "pooled": {"recall": round(recall, 4), "precision": round(precision, 4), **pooled},
            "weights": dict(zip(FEATURES, (round(float(w), 4) for w in weights))), "threshold": threshold,
        }, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
