"""Benchmark (outside the package): a long thread built turn by turn, and the summary it keeps.

With the offline defaults of ``open_memory`` (the heuristic TextRank summary, refreshed as the
thread's settings say) and extraction off:

(a) per-append time of one thread built one message at a time to 3,000 messages, with the hashing
    embedder (the library's own cost): the median of the 20 appends ending at 100, 1,000 and
    3,000 messages (target: flat); ``--grow batch`` appends the untimed messages in batches of
    100 (the same state at each mark, minutes faster on a version whose appends grow);
(b) 600 short, near-identical notes appended one at a time: the summary's and the default
    card's size in characters and how many of the summary's sentences repeat another one
    word for word once numbers are set aside (target: bounded, none);
(c) ``add_messages`` in batches of 100 (2,000 chat turns) against the bare embedder's own
    throughput on the same texts in the same batches, the two alternating batch by batch
    (MiniLM, or ``--embedder hashing``; target: at least 0.8 of it).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_thread.py`` (a few minutes), ``--quick``
for a smoke run, ``--only a|b|c`` for one part.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import MemoryExtractionConfig

WORDS = [
    "budget", "trip", "rome", "train", "hostel", "museum", "pasta", "coffee", "hiking", "weekend",
    "sister", "garden", "invoice", "ledger", "deadline", "meeting", "report", "doctor", "piano",
    "concert", "novel", "recipe", "bakery", "bicycle", "office", "project", "client", "weather",
    "river", "mountain", "holiday", "flight", "airport", "ticket", "dinner", "friend", "school",
    "teacher", "course", "language", "kitchen", "painting", "photo", "camera", "market", "salary",
    "apartment", "landlord", "neighbour", "puppy", "vet", "gym", "marathon", "swimming", "lake",
]
VERBS = ["wants", "booked", "moved", "asked about", "cancelled", "loves", "planned", "forgot", "found", "paid for"]
PEOPLE = ["Maya", "Tom", "the user", "her brother", "the team", "Priya", "Jonas", "our landlord"]


def chat_turn(rng: random.Random, i: int) -> str:
    """A short chat turn of one or two sentences on a few of the words above."""
    parts = []
    for _ in range(rng.choice((1, 1, 2))):
        a, b, c = rng.sample(WORDS, 3)
        parts.append(f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {a} {b} near the {c}.")
    return " ".join(parts)


def _client(path: Path, embedder: Any) -> Any:
    return open_memory(path, embedder=embedder, memory_extraction_config=MemoryExtractionConfig(extract_memories=False))


def per_append(folder: Path, marks: list[int], *, grow: str) -> dict[int, float]:
    """(a): median milliseconds of the 20 single appends ending at each mark. ``grow="single"``
    appends every message alone; ``"batch"`` appends the messages between the timed ones in
    batches of 100 (the same thread state at each mark, in far less time on a slow version)."""
    rng = random.Random(7)
    client = _client(folder / f"long-{grow}.db", HashingEmbedder())
    figures: dict[int, float] = {}
    try:
        thread = client.create_thread(user_id="u1", agent_id="a1")
        count = 0

        def message() -> dict[str, str]:
            nonlocal count
            count += 1
            return {"role": "user" if count % 2 else "assistant", "content": chat_turn(rng, count)}

        for mark in marks:
            while count < mark - 20:
                size = 1 if grow == "single" else min(100, mark - 20 - count)
                thread.add_messages([message() for _ in range(size)])
            times = []
            while count < mark:
                item = message()
                started = time.perf_counter()
                thread.add_messages([item])
                times.append(time.perf_counter() - started)
            figures[mark] = statistics.median(times) * 1000
    finally:
        client.close()
    return figures


def _repeats(text: str) -> int:
    """Sentences of ``text`` that repeat an earlier one once digits are set aside."""
    keys = [re.sub(r"\d+", "#", s.strip().lower()) for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    return sum(count - 1 for count in Counter(keys).values())


def near_identical_notes(folder: Path, notes: int) -> dict[str, int]:
    """(b): the summary and the card after ``notes`` near-identical notes, one per append."""
    client = _client(folder / "notes.db", HashingEmbedder())
    try:
        thread = client.create_thread(user_id="u1", agent_id="a1")
        for i in range(notes):
            thread.add_messages([{"role": "user", "content": f"Note {i}: remember to water the plants."}])
        summary = thread.get_summary(token_budget=None).content
        card = thread.get_context_card().content
    finally:
        client.close()
    return {"summary_chars": len(summary), "card_chars": len(card), "repeated_sentences": _repeats(summary)}


def add_rate(folder: Path, embedder: Any, messages: int) -> tuple[float, float]:
    """(c): (add_messages msg/s, the bare embedder's texts/s) on the same texts and batches, the
    two timed batch by batch in alternating order, so that a change of load on a shared machine
    weighs on both alike."""
    rng = random.Random(11)
    texts = [chat_turn(rng, i) for i in range(messages)]
    batches = [texts[first : first + 100] for first in range(0, messages, 100)]
    embedder.embed(["warm-up"])
    client = _client(folder / f"rate-{type(embedder).__name__}.db", embedder)
    bare = added = 0.0
    try:
        thread = client.create_thread(user_id="u1", agent_id="a1")
        for number, batch in enumerate(batches):
            for step in ("bare", "add") if number % 2 == 0 else ("add", "bare"):
                started = time.perf_counter()
                if step == "bare":
                    embedder.embed(batch, is_query=False)
                    bare += time.perf_counter() - started
                else:
                    thread.add_messages([{"role": "user", "content": text} for text in batch])
                    added += time.perf_counter() - started
    finally:
        client.close()
    return messages / added, messages / bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("a", "b", "c"))
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm", help="for (c)")
    parser.add_argument(
        "--grow", choices=("single", "batch"), default="single", help="(a): between the timed appends"
    )
    args = parser.parse_args(argv)
    marks, notes, messages = ([100, 300], 100, 200) if args.quick else ([100, 1000, 3000], 600, 2000)
    with tempfile.TemporaryDirectory(prefix="palimpsest-thread-bench-") as name:
        folder = Path(name)
        if args.only in (None, "a"):
            figures = per_append(folder, marks, grow=args.grow)
            row = ", ".join(f"{mark:,} messages {ms:.2f} ms" for mark, ms in figures.items())
            print(f"(a) one append to a thread of (median of 20, grown {args.grow}): {row}", flush=True)
        if args.only in (None, "b"):
            sizes = near_identical_notes(folder, notes)
            print(
                f"(b) {notes} near-identical notes: summary {sizes['summary_chars']:,} characters, "
                f"card {sizes['card_chars']:,} characters, repeated sentences {sizes['repeated_sentences']}",
                flush=True,
            )
        if args.only in (None, "c"):
            if args.embedder == "minilm":
                from palimpsest.adapters.minilm import MiniLMEmbedder

                embedder: Any = MiniLMEmbedder()
            else:
                embedder = HashingEmbedder()
            rate, bare = add_rate(folder, embedder, messages)
            print(
                f"(c) add_messages, batches of 100, extraction off, {args.embedder}: {rate:,.0f} msg/s; "
                f"the bare embedder {bare:,.0f} texts/s; ratio {rate / bare:.2f} (target >= 0.8)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
