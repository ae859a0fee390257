"""LoCoMo retrieval benchmark on the development half (conv-26, -30, -41, -42, -43; 760 questions).

Run from the repository root (the data file is not in the repository: see the README):

    python -m benchmarks.locomo --data benchmarks/locomo/data/locomo10.json
    python -m benchmarks.locomo --data PATH --json out.json    # every figure, per question too
    python -m benchmarks.locomo --data PATH --variant keyword  # some variants (repeatable)
    python -m benchmarks.locomo --data PATH --no-cards         # searches only

Everything goes through the public API with the default configuration: ``open_memory`` on a
temporary embedded store, one thread and one ``user_id`` per conversation, every turn a "user"
message carrying its speaker as ``name`` and its ``dia_id`` as metadata, its session's date as timestamp;
then ``search(question, user_id=..., record_types=["message"], max_results=20)`` per question.
Vectors come from the offline MiniLM model, cached in ``benchmarks/locomo/.cache``.
Latencies are steadier with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.locomo`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.locomo"

from palimpsest.adapters import open_memory
from palimpsest.application import AgentMemory, MemoryExtractionConfig, SearchResult, SummaryText
from palimpsest.application.budgets import estimate_tokens
from palimpsest.domain.model import MemoryRecord, Message

from benchmarks.locomo.loader import (
    CATEGORIES,
    DEV_CONVERSATIONS,
    DOWNLOAD_HINT,
    Conversation,
    Question,
    load,
)
from benchmarks.quality.common import VARIANTS, Latency, chosen_embedder, raw_store, table

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data" / "locomo10.json"
DEFAULT_CACHE = HERE / ".cache"
KS = (1, 5, 10, 20)
MAX_RESULTS = 20
TOKENS_AT = 10
LOCOMO_VARIANTS: tuple[str, ...] = ("default", "keyword", "dense", "score")
"""The shipped default (hybrid, absolute fusion), BM25 alone, MiniLM alone, and min-max score
fusion of the same two signals; the registry entries of ``benchmarks.quality``."""
ABLATION_VARIANTS: tuple[str, ...] = (
    "absolute-no-context",
    "absolute-no-speaker",
    "absolute-no-conversation",
    "absolute+radius3",
    "absolute+context0.9-r1",
)
"""The default less one conversation piece each (``benchmarks.quality`` registry)."""
CARD_SLOTS = 5
"""The card's default number of relevant results."""
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
QUESTION_THREAD_SETTINGS = MemoryExtractionConfig(extract_memories=False, enable_context_summary=False)
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
"""The handle a question is appended through: no extraction of it, no summary upkeep."""


# -- ingestion ----------------------------------------------------------------------------------


@dataclass
class Ingested:
    """One conversation in the store: its thread, user and the message ids of its turns."""

    conversation: Conversation
    user_id: str
    thread_id: str
    dia_of_message: dict[str, str] = field(default_factory=dict)


def ingest(memory: AgentMemory, conversation: Conversation, *, content: str = "text") -> Ingested:
    """One thread, one ``user_id``; each session appended in one call, every turn a "user"
    message with its speaker and dia_id as metadata and the session date as timestamp. The
    client's extraction runs as configured (the default: background, heuristic extractor);
    this waits for it. ``content="speaker"`` stores ``"<speaker>: <text>"`` instead of the
    text (a diagnostic: LoCoMo's questions name the speakers); ``"unnamed"`` gives no name."""
    user_id = f"locomo-{conversation.sample_id}"
    thread = memory.create_thread(user_id=user_id, agent_id="locomo")
    done = Ingested(conversation, user_id, thread.thread_id)
    sessions: dict[int, list[Any]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session, []).append(turn)
    for number in sorted(sessions):
        turns = sessions[number]
        ids = thread.add_messages(
            [
                {
                    "role": "user",
                    "content": f"{t.speaker}: {t.text}" if content == "speaker" else t.text,
                    "timestamp": t.session_date,
                    "name": None if content == "unnamed" else t.speaker,  # kept as metadata["speaker"]
                    "metadata": {"dia_id": t.dia_id, "session": t.session},
                }
                for t in turns
            ]
        )
        done.dia_of_message.update(zip(ids, (t.dia_id for t in turns)))
    thread.wait_for_memory_extraction(timeout=None)
    return done


def hit_dia_ids(result: SearchResult, dia_of_message: Mapping[str, str]) -> frozenset[str]:
    """The turns a hit stands for: a message's own dia_id (from its metadata); a memory's
    source messages."""
    record = result.record
    if isinstance(record, Message):
        dia_id = (record.metadata or {}).get("dia_id")
        return frozenset({dia_id}) if dia_id else frozenset()
    assert isinstance(record, MemoryRecord)
    managed = (record.metadata or {}).get("$agent_memory") or {}
    return frozenset(
        dia_of_message[m] for m in managed.get("source_message_ids") or () if m in dia_of_message
    )


# -- metrics ------------------------------------------------------------------------------------


def question_row(question: Question, ranked: Sequence[frozenset[str]], tokens: int) -> dict[str, Any]:
    """Per-question figures: recall at each k, all@10, tokens of the top 10, the ranks found."""
    evidence = set(question.evidence)
    row: dict[str, Any] = {
        "sample_id": question.sample_id,
        "index": question.index,
        "category": question.category,
        "evidence": list(question.evidence),
    }
    for k in KS:
        found = set().union(*ranked[:k]) & evidence if ranked[:k] else set()
        row[f"recall@{k}"] = len(found) / len(evidence)
    top = set().union(*ranked[:TOKENS_AT]) if ranked else set()
    row["all@10"] = 1.0 if evidence <= top else 0.0
    row["tokens@10"] = tokens
    row["ranks"] = {
        e: next((i + 1 for i, ids in enumerate(ranked) if e in ids), None) for e in question.evidence
    }
    return row


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def aggregate(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    """Means of ``fields`` overall, per category and per conversation (for leave-one-out use)."""

    def means(subset: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {
            "questions": len(subset),
            **{f: _mean([r[f] for r in subset if r.get(f) is not None]) for f in fields},
        }

    return {
        "overall": means(rows),
        "by_category": {
            str(c): means([r for r in rows if r["category"] == c])
            for c in CATEGORIES
            if any(r["category"] == c for r in rows)
        },
        "by_conversation": {
            s: means([r for r in rows if r["sample_id"] == s])
            for s in dict.fromkeys(r["sample_id"] for r in rows)
        },
    }


SEARCH_FIELDS = (*(f"recall@{k}" for k in KS), "all@10", "tokens@10")
CARD_FIELDS = ("card_share", "card_share_sources", "card_memories", "card_tokens")


# -- searches and cards -------------------------------------------------------------------------


def run_searches(
    memory: AgentMemory, stored: Sequence[Ingested], latency: Latency, limit: int | None
) -> list[dict[str, Any]]:
    rows = []
    for item in stored:
        for question in item.conversation.questions[:limit]:
            with latency.time("search"):
                hits = memory.search(
                    question.question, user_id=item.user_id, record_types=["message"], max_results=MAX_RESULTS
                )
            ranked = [hit_dia_ids(h, item.dia_of_message) for h in hits]
            tokens = sum(estimate_tokens(h.content) for h in hits[:TOKENS_AT])
            rows.append(question_row(question, ranked, tokens))
    return rows


class QuestionSummariser:
    """A summariser whose summary is the newest message's text, no topics: a context card's
    query is its thread's summary and topics, so on a thread whose newest message is the
    question, the card built by a client with this summariser searches for the question."""

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        return SummaryText(messages[-1].content if messages else (previous.text if previous else ""))


CARD_KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "question": ("question", {}),
    "question, message slots": ("question", {"min_relevant_results_by_type": {"message": CARD_SLOTS + 1}}),
    "summary": ("summary", {}),
}
"""The cards measured: (whose summary is the card's query, extra ``get_context_card`` arguments).
"question": the question is the query (:class:`QuestionSummariser`), default slots (memories
and messages ranked by type: the memories' search comes first); "question, message slots": the
same with every slot a message (``min_relevant_results_by_type``); "summary": the default
client's own card, whose query is the thread's summary (heuristic TextRank) with the question
folded in."""


def run_cards(
    memory: AgentMemory,
    stored: Sequence[Ingested],
    latency: Latency,
    limit: int | None,
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """For each question: append it to its conversation's thread (a handle with extraction and
    summary upkeep off), build ``get_context_card(**options)`` on that thread, remove the
    question again.

    The card is asked for one more relevant result than its default 5 and the question's own
    message is taken out of it (it would otherwise be its own best match), leaving 5. An
    evidence turn is present when its message is in the card (``card_share``);
    ``card_share_sources`` also counts a memory's source messages, which for the heuristic
    extractor are its whole extraction window (a session), so it overstates presence."""
    rows = []
    for item in stored:
        thread = memory.get_thread(item.thread_id, memory_extraction_config=QUESTION_THREAD_SETTINGS)
        after = max(t.session_date for t in item.conversation.turns) + timedelta(days=1)
        for question in item.conversation.questions[:limit]:
            (qid,) = thread.add_messages([{"role": "user", "content": question.question, "timestamp": after}])
            try:
                with latency.time("card"):
                    card = thread.get_context_card(max_relevant_results=CARD_SLOTS + 1, **options)
            finally:
                thread.delete_message(qid)
            results = [r for r in card.relevant_results if r.id != qid][:CARD_SLOTS]
            direct: set[str] = set()
            sources: set[str] = set()
            for result in results:
                ids = hit_dia_ids(result, item.dia_of_message)
                sources |= ids
                if isinstance(result.record, Message):
                    direct |= ids
            evidence = set(question.evidence)
            rows.append(
                {
                    "sample_id": question.sample_id,
                    "index": question.index,
                    "category": question.category,
                    "card_share": len(direct & evidence) / len(evidence),
                    "card_share_sources": len(sources & evidence) / len(evidence),
                    "card_memories": sum(1 for r in results if not isinstance(r.record, Message)),
                    "card_tokens": estimate_tokens(card.content) if card.content else 0,
                }
            )
    return rows


# -- the run ------------------------------------------------------------------------------------


@contextmanager
def store_client(embedder: Any, backend: str, *, extraction: bool = True) -> Iterator[AgentMemory]:
    """The default client (``open_memory`` with only the embedder given, for its cache) on a
    fresh store: the embedded one in a temporary folder, or the in-process one. ``extraction``
    False turns memory extraction off (a diagnostic; the default configuration extracts)."""
    with tempfile.TemporaryDirectory(prefix="palimpsest-locomo-") as folder:
        path = Path(folder) / "memory.db" if backend == "embedded" else None
        options: dict[str, Any] = {} if extraction else {"memory_extraction_config": NO_EXTRACTION}
        with open_memory(path, backend=backend, embedder=embedder, **options) as memory:
            yield memory


def evaluate(
    conversations: Sequence[Conversation],
    embedder: Any,
    *,
    variants: Sequence[str] = LOCOMO_VARIANTS,
    cards: bool = True,
    backend: str = "embedded",
    extraction: bool = True,
    content: str = "text",
    limit: int | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Ingests every conversation once, runs each variant's searches (a client per variant on
    the same store), then the cards of the default configuration."""
    out: dict[str, Any] = {"variants": {}, "cards": {}}
    with store_client(embedder, backend, extraction=extraction) as memory, ExitStack() as stack:
        started = time.perf_counter()
        stored = []
        for conversation in conversations:
            log(f"  ingesting {conversation.sample_id} ({len(conversation.turns)} turns) ...")
            stored.append(ingest(memory, conversation, content=content))
        out["ingest_seconds"] = round(time.perf_counter() - started, 1)
        save = getattr(embedder, "save", None)
        if save:
            save()
        for name in variants:
            log(f"  searching: {name} ...")
            client = memory
            if VARIANTS[name].options:
                client = open_memory(store=raw_store(memory), embedder=embedder, **VARIANTS[name].options)
                stack.callback(client.close)
            latency = Latency(embedder)
            rows = run_searches(client, stored, latency, limit)
            out["variants"][name] = {
                "description": VARIANTS[name].description,
                **aggregate(rows, SEARCH_FIELDS),
                "latency": latency.to_json(),
                "rows": rows,
            }
        if cards:
            question_client = open_memory(
                store=raw_store(memory), embedder=embedder, summariser=QuestionSummariser()
            )
            stack.callback(question_client.close)
            clients = {"question": question_client, "summary": memory}
            for name, (query, options) in CARD_KINDS.items():
                log(f"  cards: {name} ...")
                latency = Latency(embedder)
                rows = run_cards(clients[query], stored, latency, limit, options)
                out["cards"][name] = {
                    **aggregate(rows, CARD_FIELDS),
                    "latency": latency.to_json(),
                    "rows": rows,
                }
        if save:
            save()
    return out


# -- reporting ----------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ms(latency: Mapping[str, Any], name: str) -> str:
    figures = latency.get(name) or {}
    rest = latency.get(f"{name}_excl_embedding") or {}
    if not figures.get("n"):
        return "n/a"
    text = f"{figures['p50']:.0f}"
    return f"{text} [{rest['p50']:.0f}]" if rest.get("n") else text


def report(result: Mapping[str, Any]) -> str:
    lines = []
    headers = [
        "variant",
        "scope",
        "n",
        "R@1",
        "R@5",
        "R@10",
        "R@20",
        "All@10",
        "tokens@10",
        "search p50 ms [excl. emb.]",
    ]
    rows = []
    for name, figures in result["variants"].items():
        scopes = [("overall", figures["overall"])] + [
            (f"{c} {CATEGORIES[int(c)]}", v) for c, v in figures["by_category"].items()
        ]
        for i, (scope, v) in enumerate(scopes):
            rows.append(
                [name if i == 0 else "", scope, v["questions"]]
                + [_f(v[f"recall@{k}"]) for k in KS]
                + [
                    _f(v["all@10"]),
                    _f(v["tokens@10"], 0),
                    _ms(figures["latency"], "search") if i == 0 else "",
                ]
            )
    lines.append(table(headers, rows))
    if result["cards"]:
        lines.append("")
        headers = [
            "card",
            "scope",
            "n",
            "evidence share",
            "memories in card",
            "card tokens",
            "card p50 ms [excl. emb.]",
        ]
        rows = []
        for name, figures in result["cards"].items():
            scopes = [("overall", figures["overall"])] + [
                (f"{c} {CATEGORIES[int(c)]}", v) for c, v in figures["by_category"].items()
            ]
            for i, (scope, v) in enumerate(scopes):
                rows.append(
                    [
                        name if i == 0 else "",
                        scope,
                        v["questions"],
                        _f(v["card_share"]),
                        _f(v["card_memories"], 1),
                        _f(v["card_tokens"], 0),
                        _ms(figures["latency"], "card") if i == 0 else "",
                    ]
                )
        lines.append(table(headers, rows))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default {DEFAULT_DATA})"
    )
    parser.add_argument(
        "--variant",
        action="append",
        choices=LOCOMO_VARIANTS + ABLATION_VARIANTS,
        help="retrieval variant (repeatable; default: " + ", ".join(LOCOMO_VARIANTS) + "; ablation: "
        + ", ".join(ABLATION_VARIANTS) + ")",
    )
    parser.add_argument(
        "--conversation",
        action="append",
        choices=DEV_CONVERSATIONS,
        help="a development conversation (repeatable; default all five)",
    )
    parser.add_argument("--limit", type=int, help="at most this many questions per conversation (smoke runs)")
    parser.add_argument("--no-cards", action="store_true", help="skip the context cards")
    parser.add_argument(
        "--json", metavar="PATH", help="write every figure as JSON to PATH ('-' for standard output)"
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache folder")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        default="minilm",
        help="hashing: fast smoke runs, no quality figures",
    )
    parser.add_argument(
        "--extraction",
        choices=("default", "off"),
        default="default",
        help="memory extraction as the default configuration does it, or off (a diagnostic)",
    )
    parser.add_argument(
        "--content",
        choices=("text", "speaker", "unnamed"),
        default="text",
        help="message content: the turn's text with its speaker as the message's name (default), "
        "'<speaker>: <text>' (a diagnostic), or the text without a name (the ablation)",
    )
    parser.add_argument(
        "--backend", choices=("embedded", "memory"), default="embedded", help="store (default embedded)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        conversations = load(args.data, tuple(args.conversation or DEV_CONVERSATIONS))
    except FileNotFoundError:
        print(f"LoCoMo data not found at {args.data}: {DOWNLOAD_HINT}", file=sys.stderr)
        return 2
    embedder = chosen_embedder(args.embedder, None if args.no_cache else args.cache)
    total = sum(len(c.questions[: args.limit]) for c in conversations)
    print(f"LoCoMo dev half: {', '.join(c.sample_id for c in conversations)}; {total} questions")
    started = time.perf_counter()
    result = evaluate(
        conversations,
        embedder,
        variants=tuple(args.variant or LOCOMO_VARIANTS),
        cards=not args.no_cards,
        backend=args.backend,
        extraction=args.extraction == "default",
        content=args.content,
        limit=args.limit,
        log=lambda line: print(line, file=sys.stderr),
    )
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["embedder"] = embedder.model_id
    result["blas_threads"] = {v: os.environ.get(v) for v in BLAS_THREAD_VARIABLES}
    result["data"] = {
        c.sample_id: {
            "turns": len(c.turns),
            "sessions": c.sessions,
            "questions": len(c.questions),
            "dropped_questions": c.dropped_questions,
            "dropped_evidence_ids": c.dropped_evidence,
        }
        for c in conversations
    }
    print(report(result))
    print(f"({result['seconds']} s; ingest {result['ingest_seconds']} s; embedder {result['embedder']})")
    if args.json:
        text = json.dumps(result, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text, encoding="utf-8")
    return 0


__all__ = [
    "LOCOMO_VARIANTS",
    "QuestionSummariser",
    "evaluate",
    "hit_dia_ids",
    "ingest",
    "main",
    "question_row",
]
