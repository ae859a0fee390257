"""Benchmarks (outside the package): the public API's hot paths on the embedded store.

(e) ``get_context_card`` on a thread with 10,000 messages and 10,000 memories in the user's
    scope, the durable summary (about 220 tokens, scripted) already fresh: p50 over repeated
    cards on the unchanged thread, with the default MiniLM embedder (target ≤ 10 ms) and, as a
    labelled second row, the cheap hashing embedder;
(f) ``add_messages`` in batches of 100, extraction disabled: with MiniLM (the default path),
    with the hashing embedder, and with a near-free embedder (a CRC32 of the text picks one of
    64 fixed unit vectors), the library's own cost (target ≥ 5,000 messages/s); then with
    MiniLM and the hashing embedder and the heuristic extraction on, inline;
(g) ``search(q, user_id=...)`` p50 on that store with MiniLM, the query embedding included;
(h) ``--mode chat``: the chat loop's card. A thread of 300 turns and 1,000 memories, summaries
    refreshed after every append; 40 times: append one user message, then time the card (target
    ≤ 10 ms with MiniLM), the card again on the unchanged thread, and a search; also the first
    card of the thread in a new client. Rows: a rolling extractive summary (the newest 875
    characters: it changes with every message), TextRank with ``context_card_token_limit=250``,
    TextRank with the default limit (a summary of about 20,000 characters).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_api.py`` (a few minutes: MiniLM embeds
20,000 texts), ``--quick`` for a smoke run, ``--embedder hashing`` for the toy rows only;
``--strategy vector|keyword|hybrid`` times the cards with that search strategy instead of the
client's default one (printed in the report); ``--minilm-threads N`` gives the MiniLM embedder N
intra-op threads (default: one under ``OPENBLAS_NUM_THREADS=1``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.bootstrap import build_container, open_client
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryExtractionMode, SummaryText
from palimpsest.application.searching import SearchStrategy
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain import Message

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


def add_rate(folder: Path, embedder: object, messages: int, *, extract: bool = False) -> float:
    """messages/s of add_messages in batches of 100, summaries off; extraction off, or on
    (``extract``: inline, with the offline defaults of ``open_memory``: the heuristic extractor
    and the rule link resolver)."""
    name = f"rate-{type(embedder).__name__}-{'extract' if extract else 'plain'}.db"
    if extract:
        config = MemoryExtractionConfig(
            extract_memories=True, enable_context_summary=False, extraction_mode=MemoryExtractionMode.INLINE
        )
        client = open_memory(folder / name, embedder=embedder, memory_extraction_config=config)
    else:
        client = _client(folder / name, embedder=embedder)
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


SUMMARY = " ".join(
    [
        "The user plans a trip to Rome on a budget and loves pizza, especially sourdough with fresh basil.",
        "They compared train and flight prices, settled on an overnight train, and asked for hostels near",
        "Termini. They hike on weekends, drink their coffee black, read crime novels, cook pasta at home,",
        "and worry about the weather in late October. Budget: about 900 euros for eight days, food included.",
        "They asked for museum passes, a day trip to Tivoli, quiet places to work remotely for two mornings,",
        "vegetarian options for a friend who joins on day three, and how to get from the airport at night.",
        "Earlier they planned a Lisbon trip but cancelled it; they prefer small restaurants over chains and",
        "want to hear live music once. They keep a list of books to bring and a playlist for the train.",
    ]
)
"""A durable summary of about 220 tokens, what a real thread's rolling summary looks like."""


def build(
    folder: Path, messages: int, memories: int, strategy: SearchStrategy | None = None, embedder: object = None
) -> tuple[AgentMemory, str, float]:
    summariser = ScriptedSummariser(lambda previous, new: SummaryText(SUMMARY, ("rome", "pizza", "budget")))
    client = _client(
        folder / f"api-{type(embedder).__name__}.db",
        embedder=embedder if embedder is not None else HashingEmbedder(),
        summariser=summariser,
        search_strategy=strategy,
    )
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


def card_and_search_p50(
    folder: Path, messages: int, memories: int, cards: int, strategy: SearchStrategy | None, embedder: object
) -> tuple[str, float, float, float, int]:
    """(strategy, card p50, card p95, search p50, card characters) on a built store."""
    client, thread_id, _ = build(folder, messages, memories, strategy, embedder)
    try:
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
        queries = [f"what does the user think about {TOPICS[i % len(TOPICS)]} number {i}?" for i in range(cards)]
        searches = []
        for query in queries:  # distinct queries: each one embedded inside the timed call
            started = time.perf_counter()
            client.search(query, user_id="u1")
            searches.append(time.perf_counter() - started)
        return (
            client.search_strategy,
            statistics.median(samples) * 1000,
            sorted(samples)[int(0.95 * (len(samples) - 1))] * 1000,
            statistics.median(searches) * 1000,
            len(card.content),
        )
    finally:
        client.close()


PLACES = ["Rome", "Lisbon", "Kyoto", "Oslo", "Lima", "Cairo", "Hanoi", "Quito", "Porto", "Tunis"]
THINGS = ["train tickets", "a hostel", "museum passes", "a rain jacket", "hiking boots", "a phrase book"]


def _turn(i: int) -> str:
    """Chat turn ``i``: one to three sentences, each new to the thread (user and assistant alternate)."""
    place, thing, topic = PLACES[i % len(PLACES)], THINGS[(i * 5) % len(THINGS)], TOPICS[(i * 3) % len(TOPICS)]
    if i % 2:
        return (
            f"I am thinking about {place} for trip number {i}. Do I need {thing} for {i % 9 + 2} days? "
            f"Also, my friend {i} keeps talking about {topic} there."
        )
    return f"For {place} you will want {thing} in week {i}. The {topic} scene number {i} is lively near the centre."


ROLLING_CHARS = 875
"""The rolling summary's size: about 250 tokens, what MiniLM reads of a text."""


def _rolling(previous: SummaryText | None, messages: Sequence[Message]) -> SummaryText:
    """An extractive summary that changes with every message: the newest whole sentences of the
    conversation, about 250 tokens."""
    text = " ".join(([previous.text] if previous is not None else []) + [m.content for m in messages])
    while len(text) > ROLLING_CHARS and ". " in text:
        text = text.split(". ", 1)[1]
    return SummaryText(text, ())


def chat_loop(
    folder: Path, embedder: object, history: int, turns: int, memories: int, token_limit: int | None, rolling: bool = False
) -> dict[str, float]:
    """(h) The chat loop's card: a thread of ``history`` turns with the default summariser
    (TextRank, refreshed after every append, as ``open_memory`` configures it; extraction off),
    ``memories`` memories in the user's scope; then ``turns`` times: append one user message,
    get the card (timed: the card right after a new message), get it again (timed: the
    unchanged thread), and search for a new question (timed, its query embedding included).
    Also the first card of the thread in a new client on the same store. ``token_limit``: the
    thread's ``context_card_token_limit`` (``None``: the default), which bounds the summary. p50s in ms."""
    config = MemoryExtractionConfig(extract_memories=False)
    path = folder / f"chat-{type(embedder).__name__}-{token_limit}-{rolling}.db"
    summariser = {"summariser": ScriptedSummariser(_rolling)} if rolling else {}
    client = open_memory(path, embedder=embedder, memory_extraction_config=config, **summariser)
    try:
        limit = {} if token_limit is None else {"context_card_token_limit": token_limit}
        thread = client.create_thread(thread_id="chat", user_id="u1", agent_id="a1", **limit)
        for first in range(0, history, 50):
            thread.add_messages(
                [
                    {"role": "user" if i % 2 else "assistant", "content": _turn(i)}
                    for i in range(first, min(first + 50, history))
                ]
            )
        for i in range(memories):
            client.add_memory(
                f"Memory {i}: the user likes {TOPICS[i % len(TOPICS)]} in {PLACES[i % len(PLACES)]}.",
                memory_type=("memory", "fact", "preference", "guideline")[i % 4],
                user_id="u1",
                agent_id="a1",
            )
        thread.get_context_card()
        gc.collect()
        after_new: list[float] = []
        unchanged: list[float] = []
        searches: list[float] = []
        for turn in range(turns):
            i = history + turn
            thread.add_messages([{"role": "user", "content": _turn(2 * i + 1)}])
            started = time.perf_counter()
            thread.get_context_card()
            after_new.append(time.perf_counter() - started)
            started = time.perf_counter()
            card = thread.get_context_card()
            unchanged.append(time.perf_counter() - started)
            started = time.perf_counter()
            question = f"what did the user say about {PLACES[turn % len(PLACES)]} on turn {turn} ({path.stem})?"
            client.search(question, user_id="u1")  # a new text each time, in every row: embedded
            searches.append(time.perf_counter() - started)
    finally:
        client.close()
    firsts: list[float] = []
    for _ in range(3):  # a new process's first card: a new client, nothing cached
        fresh = open_memory(path, embedder=type(embedder)(), memory_extraction_config=config, **summariser)
        try:
            started = time.perf_counter()
            fresh.get_thread("chat").get_context_card()
            firsts.append(time.perf_counter() - started)
        finally:
            fresh.close()
    return {
        "summary_chars": float(len(card.summary)),
        "after_new": statistics.median(after_new) * 1000,
        "after_new_p95": sorted(after_new)[int(0.95 * (len(after_new) - 1))] * 1000,
        "unchanged": statistics.median(unchanged) * 1000,
        "search": statistics.median(searches) * 1000,
        "first": statistics.median(firsts) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--strategy",
        choices=("vector", "keyword", "hybrid"),
        default=None,
        help="search strategy of the timed context cards (default: the client's default)",
    )
    parser.add_argument(
        "--embedder", choices=("both", "minilm", "hashing"), default="both", help="which rows to run (default both)"
    )
    parser.add_argument(
        "--mode",
        choices=("all", "chat"),
        default="all",
        help="chat: only (h), the chat loop's card after each new message (default: every row)",
    )
    parser.add_argument(
        "--minilm-threads",
        type=int,
        default=None,
        help="MiniLMEmbedder(threads=...): onnxruntime's intra-op threads (default: BLAS's count, "
        "one under OPENBLAS_NUM_THREADS=1)",
    )
    parser.add_argument("--history", type=int, default=300, help="(h): turns in the thread before the loop")
    parser.add_argument("--turns", type=int, default=40, help="(h): loop iterations timed")
    parser.add_argument(
        "--card-token-limits",
        default="rolling,250,default",
        help="(h): the thread's context_card_token_limit of each row, comma-separated ('default': 100,000; "
        "'rolling': the default limit and a summariser keeping the newest 875 characters, so that the "
        "summary changes with every message)",
    )
    args = parser.parse_args(argv)
    messages, memories, cards = (300, 300, 20) if args.quick else (10_000, 10_000, 200)
    rows: list[tuple[str, object]] = []
    if args.embedder in ("both", "minilm"):
        from palimpsest.adapters.minilm import MiniLMEmbedder

        threads = args.minilm_threads
        name = "MiniLM (default)" if threads is None else f"MiniLM ({threads} threads)"
        rows.append((name, MiniLMEmbedder(threads=threads)))
    if args.embedder in ("both", "hashing"):
        rows.append(("hashing (toy)", HashingEmbedder()))
    if args.mode == "chat":
        history, turns = (60, 5) if args.quick else (args.history, args.turns)
        print(f"(h) chat loop: a thread of {history} turns (default TextRank summary, extraction off), ")
        print(f"    {min(memories, 1_000):,} memories in scope; {turns} turns: append a message, card, card, search")
        with tempfile.TemporaryDirectory(prefix="palimpsest-api-bench-") as folder:
            for name, embedder in rows:
                for text in args.card_token_limits.split(","):
                    limit = None if text in ("default", "rolling") else int(text)
                    f = chat_loop(
                        Path(folder), embedder, history, turns, min(memories, 1_000), limit, rolling=text == "rolling"
                    )
                    ok = "PASS" if f["after_new"] <= 10 else "FAIL"
                    print(
                        f"(h) {name}, {'rolling summary' if text == 'rolling' else f'context_card_token_limit {text}'} "
                        f"(summary {f['summary_chars']:,.0f} characters): "
                        f"card after a new message p50 {f['after_new']:.3f} ms (p95 {f['after_new_p95']:.3f})  "
                        f"target <= 10 ms  {ok}"
                    )
                    print(
                        f"    card on the unchanged thread p50 {f['unchanged']:.3f} ms; search p50 {f['search']:.3f} ms"
                    )
                    print(f"    first card of the thread in a new client (median of 3): {f['first']:.3f} ms")
        return 0
    with tempfile.TemporaryDirectory(prefix="palimpsest-api-bench-") as folder:
        rate = add_rate(Path(folder), Crc32Embedder(), messages)
        rates = [(name, add_rate(Path(folder), embedder, min(messages, 2_000))) for name, embedder in rows]
        extracting = [
            (name, add_rate(Path(folder), embedder, min(messages, 2_000), extract=True)) for name, embedder in rows
        ]
        results = [
            (name, *card_and_search_p50(Path(folder), messages, memories, cards, args.strategy, embedder))
            for name, embedder in rows
        ]
    print("palimpsest API benchmark (EmbeddedStore, scripted summariser of about 220 tokens)")
    print(f"thread: {messages:,} messages; user scope: {memories:,} memories; {cards} cards and searches measured")
    for name, strategy, p50, p95, search, size in results:
        ok = "PASS" if p50 <= 10 else "FAIL"
        print(f"(e) get_context_card, {name}, {strategy}: p50 {p50:.3f} ms (p95 {p95:.3f} ms)  target <= 10 ms  {ok}")
        print(f"(g) search(q, user_id=...), {name}: p50 {search:.3f} ms (query embedding included)")
        print(f"    card size: {size:,} characters")
    add_ok = "PASS" if rate >= 5000 else "FAIL"
    print(f"(f) add_messages, batches of 100, near-free embedder: {rate:,.0f} messages/s  target >= 5,000/s  {add_ok}")
    for name, embedder_rate in rates:
        print(f"    with {name}: {embedder_rate:,.0f} messages/s (embedding included)")
    for name, embedder_rate in extracting:
        print(f"    with {name}, heuristic extraction on (inline): {embedder_rate:,.0f} messages/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
