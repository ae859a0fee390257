"""Benchmark (outside the package): appends while the embedding server is down, and after.

An OpenAI-compatible embedding server on 127.0.0.1 (the project's loopback server, vectors of
32 floats made from the words), an embedded store file, extraction off:

(a) the first append of a client just opened on a store of ``--messages`` messages that all have
    their vectors (what a healthy client pays for looking for rows that wait: one scan per
    client), then the median of the next 20 appends;
(b) with the server answering 503 (the adapter's retries spent without sleeping): the median
    append, and whether it stored its message (on a version without D43 it raises);
(c) the server back: how long ``embed_waiting()`` takes for ``--waiting`` messages stored during
    the outage (skipped on a version without it), and a vector search that finds them.

Run: ``python benchmarks/bench_degraded.py`` (about a minute), ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai
import palimpsest.adapters.openai as openai_adapters
from palimpsest.adapters import open_memory
from palimpsest.adapters.openai import OpenAIEmbedder
from palimpsest.adapters.openai.testing import LoopbackExtractionServer
from palimpsest.application import MemoryExtractionConfig

DIMENSION = 32


def _client(path: Path, base_url: str) -> Any:
    sdk = openai.OpenAI(base_url=base_url, api_key="bench")
    embedder = OpenAIEmbedder(sdk, "loopback", dimension=DIMENSION, max_retries=2, sleep=lambda _s: None)
    return open_memory(path, embedder=embedder, memory_extraction_config=MemoryExtractionConfig(extract_memories=False))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--waiting", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.waiting = 500, 20
    allowed = openai_adapters.ALLOW_MODEL_REQUESTS
    openai_adapters.ALLOW_MODEL_REQUESTS = True  # the server is on 127.0.0.1
    try:
        _run(args)
    finally:
        openai_adapters.ALLOW_MODEL_REQUESTS = allowed
    return 0


def _run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder, LoopbackExtractionServer(dimension=DIMENSION) as server:
        path = Path(folder) / "bench.db"
        memory = _client(path, server.base_url)
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        batch = 1_000
        for start in range(0, args.messages, batch):
            count = min(batch, args.messages - start)
            thread.add_messages([{"role": "user", "content": f"note {start + i} about item {i % 97}"} for i in range(count)])
        memory.close()

        memory = _client(path, server.base_url)
        thread = memory.get_thread("t1")
        began = time.perf_counter()
        thread.add_messages([{"role": "user", "content": "the first append after opening"}])
        first = time.perf_counter() - began
        times = []
        for i in range(20):
            began = time.perf_counter()
            thread.add_messages([{"role": "user", "content": f"a healthy append {i}"}])
            times.append(time.perf_counter() - began)
        print(f"(a) store of {args.messages} messages: first append {_ms(first)}, "
              f"next 20 median {_ms(statistics.median(times))}")

        server.embedding_status = 503
        down, stored = [], 0
        for i in range(args.waiting):
            began = time.perf_counter()
            try:
                thread.add_messages([{"role": "user", "content": f"written during the outage {i}"}])
                stored += 1
            except Exception as exc:  # noqa: BLE001 - the old behaviour: the append fails
                if i == 0:
                    print(f"(b) append with the server down raised {type(exc).__name__}")
            down.append(time.perf_counter() - began)
        print(f"(b) server down: median append {_ms(statistics.median(down))}, {stored}/{args.waiting} stored")

        server.embedding_status = 200
        embed_waiting = getattr(memory, "embed_waiting", None)
        if embed_waiting is None or not stored:
            print("(c) skipped: nothing waits on this version")
        else:
            began = time.perf_counter()
            done = embed_waiting()
            took = time.perf_counter() - began
            found = memory.search("written during the outage 7", user_id="u1", search_strategy="vector", max_results=5)
            print(f"(c) server back: embed_waiting() embedded {done} rows in {_ms(took)} "
                  f"({done / took:.0f} rows/s); vector search finds them: "
                  f"{any(r.content == 'written during the outage 7' for r in found)}")
        memory.close()


if __name__ == "__main__":
    sys.exit(main())
