"""Whether ``SUCCESSOR_SHARE`` (``current_first``: the share of a retired hit's score its successor
must reach to take the hit's rank) can be told apart on the LoCoMo development half.

    python -m benchmarks.locomo.successors --data PATH [--share 0 --share 0.05 ...] [--json out.json]

The conversations are ingested once as :mod:`benchmarks.locomo.run` does it, with the default
configuration: the heuristic extractor in the background, the rule link resolver after each
extraction (``POST_EXTRACTION``), which is what writes the ``supersedes`` / ``refines`` /
``duplicates`` links that retire memories. The questions then search every record type
(``search(question, user_id=...)``, the default: messages and memories) and the memories alone
(``record_types`` the memory-like types), top 20, once per share; a hit stands for its message's
turn, or a memory's source turns. The share is set on the library's module for the searches (a
benchmark's knob, not a configuration).

Reported per share: R@k and All@10 overall and per conversation, the held-out-fold figure of
leave-one-conversation-out (each conversation scored with the share the other four pick, the
shipped value on a tie), and how many questions are touched at all: a retired memory in their
results under any share, a ranking that differs between shares.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.locomo`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.locomo"

from palimpsest.application import AgentMemory
from palimpsest.application import retrieval as retrieval_module
from palimpsest.domain.model import MemoryRecord, RecordType

from benchmarks.locomo.loader import DEV_CONVERSATIONS, DOWNLOAD_HINT, load
from benchmarks.locomo.run import (
    DEFAULT_CACHE,
    DEFAULT_DATA,
    KS,
    MAX_RESULTS,
    Ingested,
    aggregate,
    hit_dia_ids,
    ingest,
    question_row,
    store_client,
)
from benchmarks.quality.common import chosen_embedder, raw_store, table

SHIPPED = retrieval_module.SUCCESSOR_SHARE
SHARES: tuple[float, ...] = (0.0, 0.05, 0.2, 1.0)
"""0: the old rule (a successor always takes the rank); 1.0: only a successor scoring at least
as high (in effect never, as the retired hit's rank is kept)."""
MEMORY_TYPES = [t.value for t in (RecordType.MEMORY, RecordType.FACT, RecordType.GUIDELINE, RecordType.PREFERENCE)]
SCOPES: dict[str, list[str] | None] = {"all types": None, "memories": MEMORY_TYPES}
FIELDS = (*(f"recall@{k}" for k in KS), "all@10")
LIFECYCLE = ("supersedes", "refines", "duplicates")


@contextmanager
def successor_share(value: float) -> Iterator[None]:
    """The library's ``SUCCESSOR_SHARE`` set to ``value`` for the block (read at each search)."""
    namespace = vars(retrieval_module)
    before = namespace["SUCCESSOR_SHARE"]
    namespace["SUCCESSOR_SHARE"] = value
    try:
        yield
    finally:
        namespace["SUCCESSOR_SHARE"] = before


def link_counts(memory: AgentMemory, stored: Sequence[Ingested]) -> dict[str, Any]:
    """Per conversation: memories, retired (invalid) memories and lifecycle links among them."""
    store = raw_store(memory)
    out: dict[str, Any] = {}
    for item in stored:
        records = memory.list_memories(user_id=item.user_id)
        counts = dict.fromkeys(LIFECYCLE, 0)
        seen: set[str] = set()
        with store.reading() as uow:
            for record in records:
                for link in uow.links.touching(record.id):
                    if link.id not in seen and link.relation_type in counts:
                        seen.add(link.id)
                        counts[link.relation_type] += 1
        out[item.conversation.sample_id] = {
            "memories": len(records),
            "retired": sum(1 for r in records if not r.is_valid),
            **counts,
        }
    return out


def run_share(
    memory: AgentMemory, stored: Sequence[Ingested], record_types: list[str] | None, limit: int | None
) -> tuple[list[dict[str, Any]], list[list[str]], list[bool]]:
    """Rows (figures per question), each question's ranked hit ids, and whether its results
    hold a retired memory."""
    rows, rankings, retired = [], [], []
    for item in stored:
        for question in item.conversation.questions[:limit]:
            hits = memory.search(
                question.question, user_id=item.user_id, record_types=record_types, max_results=MAX_RESULTS
            )
            rows.append(question_row(question, [hit_dia_ids(h, item.dia_of_message) for h in hits], 0))
            rankings.append([h.id for h in hits])
            retired.append(any(isinstance(h.record, MemoryRecord) and not h.record.is_valid for h in hits))
    return rows, rankings, retired


def leave_one_out(by_share: Mapping[float, Mapping[str, Any]], field: str = "recall@10") -> dict[str, Any]:
    """Each conversation held out in turn: the share with the best mean ``field`` over the other
    conversations' questions (the shipped share on a tie, then the smaller), and its figure on the
    held-out one; the held-out figures' mean over all questions."""
    first = next(iter(by_share.values()))
    conversations = list(first["by_conversation"])
    folds: dict[str, Any] = {}
    total = weight = 0.0
    for held in conversations:
        def train(share: float, held: str = held) -> float:
            parts = [v for c, v in by_share[share]["by_conversation"].items() if c != held]
            n = sum(p["questions"] for p in parts)
            return sum(p[field] * p["questions"] for p in parts) / n if n else 0.0

        best = max(by_share, key=lambda s: (round(train(s), 6), s == SHIPPED, -s))
        figure = by_share[best]["by_conversation"][held]
        folds[held] = {"picked": best, field: figure[field], "questions": figure["questions"]}
        total += figure[field] * figure["questions"]
        weight += figure["questions"]
    return {"folds": folds, field: round(total / weight, 4) if weight else None}


def evaluate(
    conversations: Sequence[Any],
    embedder: Any,
    *,
    shares: Sequence[float] = SHARES,
    backend: str = "embedded",
    limit: int | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    out: dict[str, Any] = {"shares": list(shares), "scopes": {}}
    with store_client(embedder, backend) as memory:
        stored = []
        for conversation in conversations:
            log(f"  ingesting {conversation.sample_id} ({len(conversation.turns)} turns) ...")
            stored.append(ingest(memory, conversation))
        save = getattr(embedder, "save", None)
        if save:
            save()
        out["links"] = link_counts(memory, stored)
        for scope, record_types in SCOPES.items():
            figures: dict[float, Any] = {}
            rankings: dict[float, list[list[str]]] = {}
            retired = None
            for share in shares:
                log(f"  searching ({scope}), share {share} ...")
                with successor_share(share):
                    rows, rankings[share], holds = run_share(memory, stored, record_types, limit)
                retired = holds if retired is None else [a or b for a, b in zip(retired, holds)]
                figures[share] = {**aggregate(rows, FIELDS), "rows": rows}
            first = rankings[shares[0]]
            changed = [any(rankings[s][i] != first[i] for s in shares) for i in range(len(first))]
            out["scopes"][scope] = {
                "by_share": {str(s): v for s, v in figures.items()},
                "questions": len(first),
                "with_retired_hit": sum(retired or []),
                "ranking_changed": sum(changed),
                "leave_one_out": leave_one_out(figures),
            }
        if save:
            save()
    return out


def report(result: Mapping[str, Any]) -> str:
    lines = []
    link_rows = [[c, *v.values()] for c, v in result["links"].items()]
    lines.append(table(["conversation", "memories", "retired", *LIFECYCLE], link_rows))
    for scope, figures in result["scopes"].items():
        lines.append("")
        lines.append(
            f"{scope}: {figures['questions']} questions, {figures['with_retired_hit']} with a retired memory "
            f"in their results under some share, {figures['ranking_changed']} ranked differently between shares"
        )
        rows = []
        for share, v in figures["by_share"].items():
            overall = v["overall"]
            per = " ".join(f"{c[-2:]}:{x['recall@10']:.3f}" for c, x in v["by_conversation"].items())
            rows.append([share, *(f"{overall[f]:.4f}" for f in FIELDS), per])
        lines.append(table(["share", *("R@" + f.split("@")[1] for f in FIELDS[:-1]), "All@10", "R@10 by conversation"], rows))
        loo = figures["leave_one_out"]
        picks = ", ".join(f"{c}: {f['picked']}" for c, f in loo["folds"].items())
        lines.append(f"leave-one-conversation-out R@10 {loo['recall@10']:.4f} (picked: {picks})")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.locomo.successors", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default {DEFAULT_DATA})")
    parser.add_argument("--share", type=float, action="append", help="a share to compare (repeatable; default 0 0.05 0.2 1)")
    parser.add_argument("--conversation", action="append", choices=DEV_CONVERSATIONS, help="a development conversation (repeatable)")
    parser.add_argument("--limit", type=int, help="at most this many questions per conversation (smoke runs)")
    parser.add_argument("--json", metavar="PATH", help="write every figure as JSON to PATH")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache folder")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm", help="hashing: smoke runs only")
    parser.add_argument("--backend", choices=("embedded", "memory"), default="embedded", help="store (default embedded)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        conversations = load(args.data, tuple(args.conversation or DEV_CONVERSATIONS))
    except FileNotFoundError:
        print(f"LoCoMo data not found at {args.data}: {DOWNLOAD_HINT}", file=sys.stderr)
        return 2
    embedder = chosen_embedder(args.embedder, None if args.no_cache else args.cache)
    started = time.perf_counter()
    result = evaluate(
        conversations,
        embedder,
        shares=tuple(args.share or SHARES),
        backend=args.backend,
        limit=args.limit,
        log=lambda line: print(line, file=sys.stderr),
    )
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(report(result))
    print(f"({result['seconds']} s; shipped share {SHIPPED})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
