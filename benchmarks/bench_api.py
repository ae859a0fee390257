"""Benchmarks (outside the package): the public API's hot paths on the embedded store.

(e) ``get_context_card`` on a thread with 10,000 messages and 10,000 memories in the user's
    scope, the durable summary already fresh, a scripted summariser and a cheap (hashing)
    embedder: p50 over repeated cards (target ≤ 10 ms);
(f) ``add_messages`` in batches of 100 with extraction disabled and a near-free embedder (a
    CRC32 of the text picks one of 64 fixed unit vectors), so the figure is the library's own
    cost: messages per second (target ≥ 5,000); the same with the shipped hashing embedder
    (about 45 µs of pure Python per message) is printed beside it.

Run: ``python benchmarks/bench_api.py`` (about a minute), ``--quick`` for a smoke run;
``--strategy vector|keyword|hybrid`` times the cards with that search strategy instead of the
client's default one (printed in the report).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.application import AgentMemory, MemoryExtractionConfig, SummaryText
from palimpsest.application.searching import SearchStrategy
from palimpsest.application.testing import ScriptedSummariser

TOPICS = ["pizza", "travel", "rome", "budget", "hiking", "coffee", "music", "books", "cooking", "weather"]


def _sentence(i: int) -> str:
    a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
    return f"Message {i}: the user talks about {a} and {b}, detail number {i % 97}."


class Crc32Embedder:
    """A near-free deterministic embedder for throughput runs (not for retrieval quality)."""

    dimension = 64
    model_id = "crc32-basis-64"

    def __init__(self) -> None:
        self._basis = [[1.0 if j == i else 0.0 for j in range(self.dimension)] for i in range(self.dimension)]

    def embed(self, texts: list[str], *, is_query: bool = False) -> list[list[float]]:
        return [self._basis[zlib.crc32(text.encode("utf-8")) % self.dimension] for text in texts]


def _client(path: Path, *, embedder: object, summariser: object = None, **options: object) -> AgentMemory:
    """A client from the composition root on the embedded store at ``path`` (closed with it):
    only the given models, extraction and summaries off."""
    ports = {
        "embedder": embedder,
        "summariser": summariser,
        "extractor": None,
        "link_resolver": None,
        "memory_extraction_config": MemoryExtractionConfig(extract_memories=False, enable_context_summary=False),
    }
    return open_client(build_container(path, overrides=ports), **options)


def add_rate(folder: Path, embedder: object, messages: int) -> float:
    """messages/s of add_messages in batches of 100 (extraction and summaries off)."""
    client = _client(folder / f"rate-{type(embedder).__name__}.db", embedder=embedder)
    try:
        thread = client.create_thread(user_id="u1", agent_id="a1")
        batches = [
            [
                {"role": "user" if i % 2 else "assistant", "content": _sentence(i)}
                for i in range(first, min(first + 100, messages))
            ]
            for first in range(0, messages, 100)
        ]
        started = time.perf_counter()
        for batch in batches:
            thread.add_messages(batch)
        return messages / (time.perf_counter() - started)
    finally:
        client.close()


def build(
    folder: Path, messages: int, memories: int, strategy: SearchStrategy | None = None
) -> tuple[AgentMemory, str, float]:
    summariser = ScriptedSummariser(
        lambda previous, new: SummaryText("The user plans a trip to Rome on a budget and loves pizza.", ("rome", "pizza"))
    )
    client = _client(folder / "api.db", embedder=HashingEmbedder(), summariser=summariser, search_strategy=strategy)
    thread = client.create_thread(thread_id="bench", user_id="u1", agent_id="a1")
    started = time.perf_counter()
    for first in range(0, messages, 100):
        thread.add_messages(
            [
                {"role": "user" if i % 2 else "assistant", "content": _sentence(i)}
                for i in range(first, min(first + 100, messages))
            ]
        )
    rate = messages / (time.perf_counter() - started)
    for i in range(memories):
        client.add_memory(
            f"Memory {i}: the user likes {TOPICS[i % len(TOPICS)]} ({i % 89}).",
            memory_type=("memory", "fact", "preference", "guideline")[i % 4],
            user_id="u1",
            agent_id="a1",
        )
    return client, "bench", rate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--strategy",
        choices=("vector", "keyword", "hybrid"),
        default=None,
        help="search strategy of the timed context cards (default: the client's default)",
    )
    args = parser.parse_args(argv)
    messages, memories, cards = (1_000, 1_000, 30) if args.quick else (10_000, 10_000, 200)
    with tempfile.TemporaryDirectory(prefix="palimpsest-api-bench-") as folder:
        rate = add_rate(Path(folder), Crc32Embedder(), messages)
        hashing_rate = add_rate(Path(folder), HashingEmbedder(), messages)
        client, thread_id, _ = build(Path(folder), messages, memories, args.strategy)
        try:
            strategy = client.search_strategy
            thread = client.get_thread(thread_id)
            thread.get_summary()  # make the durable summary fresh before timing cards
            gc.collect()
            for _ in range(10):
                thread.get_context_card()
            samples = []
            for _ in range(cards):
                started = time.perf_counter()
                card = thread.get_context_card()
                samples.append(time.perf_counter() - started)
            p50 = statistics.median(samples) * 1000
            p95 = sorted(samples)[int(0.95 * (len(samples) - 1))] * 1000
        finally:
            client.close()
    print(f"palimpsest API benchmark (EmbeddedStore, hashing embedder, scripted summariser, {strategy})")
    print(f"thread: {messages:,} messages; user scope: {memories:,} memories; {cards} cards measured")
    card_ok = "PASS" if p50 <= 10 else "FAIL"
    add_ok = "PASS" if rate >= 5000 else "FAIL"
    print(f"(e) get_context_card p50 {p50:.3f} ms (p95 {p95:.3f} ms)  target <= 10 ms  {card_ok}")
    print(f"(f) add_messages, batches of 100: {rate:,.0f} messages/s  target >= 5,000/s  {add_ok}")
    print(f"    with the hashing embedder: {hashing_rate:,.0f} messages/s (embedding included)")
    print(f"card size: {len(card.content):,} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
