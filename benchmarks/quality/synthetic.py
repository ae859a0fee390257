"""A seeded generator of long conversations with planted facts, changes and distractors, and its evaluation.

Each simulated user talks over several sessions (one thread each). Into their user turns the
generator plants:

* **changing slots** — a single-valued attribute stated, then changed once or twice in later
  sessions ("I live in Lisbon." … "I now live in Porto."; "My favourite cuisine is Thai
  food." … "My favourite cuisine is now Ethiopian food."). After extraction with the offline
  adapters (heuristic extractor + rule link resolver) each change must end as a ``supersedes``
  chain: newest → previous → oldest, the older memories kept as invalid history;
* **stable slots** — a fact stated once ("I speak Portuguese.");
* **distractors** — chit-chat questions and assistant answers, third-party statements about
  the same slots with other values ("My sister lives in Oslo.", "My brother's favourite
  programming language is Java."), hedged plans ("Maybe I will move to Quito someday.") and
  unrelated preferences; and other users with the same slots and other values (their records
  must never be returned).

Every question has its ground truth: the message that planted the current value (evidence),
the current value, and the superseded values. The same ``seed`` and sizes always generate the
same conversations.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from palimpsest.application import AgentMemory, SearchResult
from palimpsest.domain.model import MemoryRecord, RecordStatus

from .common import (
    QUIET_THREAD,
    STRATEGIES,
    STRATEGY_LABELS,
    Recall,
    card_tokens,
    client,
    fmt,
    hit_sources,
    table,
)

__all__ = ["QUICK", "Config", "Conversation", "evaluate", "generate", "report"]

MEMORY_TYPES = ["fact", "guideline", "memory", "preference"]


@dataclass(frozen=True)
class Slot:
    name: str
    plant: str
    change: str | None
    question: str
    values: tuple[str, ...]
    distractor: str | None = None
    """A statement with the same slot words about someone else (or hedged), with another value."""


CITIES = (
    "Lisbon",
    "Porto",
    "Berlin",
    "Munich",
    "Oslo",
    "Bergen",
    "Quito",
    "Lima",
    "Osaka",
    "Kyoto",
    "Dublin",
    "Cork",
)
COMPANIES = (
    "Acme Robotics",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Vandelay Industries",
    "Stark Logistics",
    "Wayne Foods",
)
JOBS = (
    "nurse",
    "data analyst",
    "carpenter",
    "pharmacist",
    "teacher",
    "civil engineer",
    "translator",
    "pilot",
)
MANAGERS = (
    "Alice Chen",
    "Bruno Costa",
    "Chiara Rossi",
    "Deepak Rao",
    "Elena Petrova",
    "Farid Haddad",
    "Greta Lind",
)
LANGUAGES = ("Python", "Rust", "Haskell", "Kotlin", "Elixir", "Ruby", "Scala", "Julia")
CUISINES = (
    "Thai food",
    "Ethiopian food",
    "Georgian food",
    "Peruvian food",
    "Lebanese food",
    "Korean food",
    "Basque food",
)
SPORTS = ("badminton", "rowing", "fencing", "climbing", "volleyball", "handball", "cricket")
SPOKEN = ("Portuguese", "Finnish", "Swahili", "Tagalog", "Hungarian", "Icelandic")
DOGS = ("Rex", "Biscuit", "Nala", "Pepper", "Milo", "Juniper")
CARS = ("Toyota Corolla", "Volvo V60", "Skoda Octavia", "Honda Jazz", "Fiat Panda", "Mazda CX-5")
BIRTHDAYS = ("March 3", "July 19", "October 28", "January 11", "May 23", "December 6")

CHANGING: tuple[Slot, ...] = (
    Slot(
        "city",
        "I live in {v}.",
        "I now live in {v}.",
        "Which city do I live in?",
        CITIES,
        "My sister lives in {v}.",
    ),
    Slot(
        "employer",
        "I work at {v}.",
        "I now work at {v}.",
        "Which company do I work at?",
        COMPANIES,
        "My friend works at {v}.",
    ),
    Slot(
        "job",
        "I work as a {v}.",
        "I now work as a {v}.",
        "What is my job?",
        JOBS,
        "My cousin works as a {v}.",
    ),
    Slot(
        "manager",
        "My manager is {v}.",
        "My manager is now {v}.",
        "Who is my manager?",
        MANAGERS,
        "My wife's manager is {v}.",
    ),
    Slot(
        "language",
        "My favourite programming language is {v}.",
        "My favourite programming language is now {v}.",
        "What is my favourite programming language?",
        LANGUAGES,
        "My brother's favourite programming language is {v}.",
    ),
    Slot(
        "cuisine",
        "My favourite cuisine is {v}.",
        "My favourite cuisine is now {v}.",
        "What kind of food is my favourite cuisine?",
        CUISINES,
        "Maybe I should try {v} someday.",
    ),
    Slot(
        "sport",
        "My favourite sport is {v}.",
        "My favourite sport is now {v}.",
        "Which sport is my favourite?",
        SPORTS,
        "My son's favourite sport is {v}.",
    ),
)
STABLE: tuple[Slot, ...] = (
    Slot("spoken", "I speak {v}.", None, "Which language do I speak?", SPOKEN, "My neighbour speaks {v}."),
    Slot(
        "dog", "I have a dog named {v}.", None, "What is my dog called?", DOGS, "My aunt has a dog named {v}."
    ),
    Slot("car", "I drive a {v}.", None, "What car do I drive?", CARS, "My dad drives a {v}."),
    Slot(
        "birthday",
        "My birthday is on {v}.",
        None,
        "When is my birthday?",
        BIRTHDAYS,
        "My mother's birthday is on {v}.",
    ),
)

FILLER_QUESTIONS = (
    "Can you recommend a good book about the history of science?",
    "What is a quick recipe for a weeknight dinner?",
    "How do I keep basil alive on a windowsill?",
    "Could you explain how compound interest works?",
    "What are some good stretches after a long day at a desk?",
    "How should I prepare for a job interview next week?",
    "Can you suggest a board game for four players?",
    "What is the difference between a latte and a flat white?",
    "How can I make my emails shorter and clearer?",
    "Any tips for sleeping better on long flights?",
    "What should I pack for a weekend hiking trip?",
    "How do I remove a coffee stain from a white shirt?",
    "Can you summarise the rules of chess castling?",
    "What is a good way to learn touch typing?",
    "How often should I water a cactus?",
    "Can you help me plan a birthday party for a friend?",
    "What are some podcasts about economics?",
    "How do I fix a squeaky door hinge?",
    "What is the best way to store fresh herbs?",
    "Could you suggest a short poem to read at a wedding?",
)
FOLLOW_UPS = (
    "Can you help me plan my week?",
    "Any tips for staying organised?",
    "What should I read next?",
    "Could you suggest something fun for the weekend?",
    "How do I stay motivated?",
)
ASSISTANT_REPLIES = (
    "Sure, here are a few ideas you could try, starting with the simplest one.",
    "Good question. The short answer is that it depends on your goals, but here is a plan.",
    "Happy to help. A common approach is to break it into small steps and review weekly.",
    "Here is a short list of options, with the pros and cons of each.",
    "That makes sense. Many people find it easiest to begin with a routine and adjust it.",
    "Noted. Let me know if you want more detail on any of these suggestions.",
)
OTHER_PREFERENCES = (
    "I enjoy baking sourdough bread.",
    "I love long walks by the sea.",
    "I like jazz on rainy evenings.",
    "I enjoy crossword puzzles.",
    "I like watching documentaries about space.",
)


@dataclass(frozen=True)
class Config:
    users: int = 4
    sessions: int = 12
    turns: int = 8
    """Chit-chat exchanges (a user turn and an assistant turn) per session, planted turns aside."""
    changing: int = 5
    stable: int = 3
    max_versions: int = 3
    distractors: int = 3
    """Distractor user turns per session."""


QUICK = Config(users=2, sessions=3, turns=1, changing=3, stable=1, max_versions=3, distractors=1)


@dataclass(frozen=True)
class Message:
    id: str
    role: str
    content: str
    timestamp: datetime


@dataclass(frozen=True)
class Session:
    id: str
    user_id: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Version:
    value: str
    message_id: str
    session_id: str


@dataclass(frozen=True)
class Question:
    id: str
    user_id: str
    slot: str
    text: str
    kind: str
    """``current`` (a changed slot) or ``stable``."""
    versions: tuple[Version, ...]
    """Oldest first; the last is the current value."""

    @property
    def current(self) -> Version:
        return self.versions[-1]

    @property
    def superseded(self) -> tuple[Version, ...]:
        return self.versions[:-1]


@dataclass(frozen=True)
class Conversation:
    seed: int
    config: Config
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def facts(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "config": self.config.__dict__,
            "users": self.config.users,
            "sessions": len(self.sessions),
            "messages": sum(len(s.messages) for s in self.sessions),
            "questions": len(self.questions),
            "changed_slots": sum(1 for q in self.questions if q.kind == "current"),
            "supersedes_expected": sum(len(q.versions) - 1 for q in self.questions),
        }


def generate(seed: int, config: Config = Config()) -> Conversation:
    """Seeded conversations with ground truth (same seed and config, same output)."""
    rng = random.Random(seed)
    if config.changing > len(CHANGING) or config.stable > len(STABLE):
        raise ValueError("more slots asked for than the generator knows")
    if config.sessions < config.max_versions:
        raise ValueError("sessions must be at least max_versions")
    start = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)
    sessions: list[Session] = []
    questions: list[Question] = []
    for u in range(config.users):
        user = f"user-{u + 1}"
        slots = rng.sample(CHANGING, config.changing) + rng.sample(STABLE, config.stable)
        # Plants per session: (slot, version index, value); values chosen per user and slot.
        plan: dict[int, list[tuple[Slot, int, str]]] = {}
        own_values: dict[str, set[str]] = {}
        for slot in slots:
            count = rng.randint(2, config.max_versions) if slot.change else 1
            values = rng.sample(slot.values, count)
            own_values[slot.name] = set(values)
            at = sorted(rng.sample(range(config.sessions), count))
            for version, (index, value) in enumerate(zip(at, values)):
                plan.setdefault(index, []).append((slot, version, value))
        versions: dict[str, list[Version]] = {}
        for s in range(config.sessions):
            sid = f"{user}-s{s + 1:02d}"
            when = start + timedelta(days=3 * s + u, hours=rng.randint(0, 10))
            turns: list[tuple[str, str, tuple[str, int, str] | None]] = []
            for _ in range(config.turns):
                turns.append(("user", rng.choice(FILLER_QUESTIONS), None))
            for _ in range(config.distractors):
                turns.append(("user", _distractor(rng, slots, own_values), None))
            for slot, version, value in plan.get(s, []):
                template = slot.plant if version == 0 else slot.change
                assert template is not None
                sentence = template.format(v=value)
                if rng.random() < 0.5:
                    sentence = f"{sentence} {rng.choice(FOLLOW_UPS)}"
                turns.append(("user", sentence, (slot.name, version, value)))
            rng.shuffle(turns)
            messages: list[Message] = []
            for content_role, content, planted in turns:
                mid = f"{sid}-m{len(messages) + 1:03d}"
                messages.append(Message(mid, content_role, content, when + timedelta(minutes=len(messages))))
                if planted is not None:
                    versions.setdefault(planted[0], []).append(Version(planted[2], mid, sid))
                reply = rng.choice(ASSISTANT_REPLIES)
                messages.append(
                    Message(
                        f"{sid}-m{len(messages) + 1:03d}",
                        "assistant",
                        reply,
                        when + timedelta(minutes=len(messages)),
                    )
                )
            sessions.append(Session(sid, user, tuple(messages)))
        for slot in slots:
            found = versions[slot.name]
            questions.append(
                Question(
                    id=f"{user}-{slot.name}",
                    user_id=user,
                    slot=slot.name,
                    text=slot.question,
                    kind="current" if len(found) > 1 else "stable",
                    versions=tuple(found),
                )
            )
    return Conversation(seed, config, tuple(sessions), tuple(questions))


def _distractor(rng: random.Random, slots: Sequence[Slot], own: dict[str, set[str]]) -> str:
    if rng.random() < 0.3:
        return rng.choice(OTHER_PREFERENCES)
    slot = rng.choice([s for s in slots if s.distractor])
    assert slot.distractor is not None
    others = [v for v in slot.values if v not in own[slot.name]]
    return slot.distractor.format(v=rng.choice(others))


# -- evaluation ---------------------------------------------------------------------------------


def _contains(text: str, value: str) -> bool:
    return value.lower() in text.lower()


def _records(results: Sequence[SearchResult]) -> list[MemoryRecord]:
    """Every memory record shown by the results: direct hits and their linked trees."""
    out: list[MemoryRecord] = []

    def walk(result: SearchResult) -> None:
        if isinstance(result.record, MemoryRecord):
            out.append(result.record)
        for _link, child in result.linked_results:
            walk(child)

    for r in results:
        walk(r)
    return out


def judge_current(results: Sequence[SearchResult], question: Question) -> tuple[bool, bool, str]:
    """(right, history shown, why): right when the top *valid* memory result holds the current
    value and every memory shown that holds a superseded value is invalid; history shown when a
    superseded value is shown at all (necessarily as invalid, when right)."""
    top_valid = next(
        (r for r in results if isinstance(r.record, MemoryRecord) and r.status is RecordStatus.VALID), None
    )
    right = top_valid is not None and _contains(top_valid.content, question.current.value)
    why = "right" if right else f"top valid memory: {top_valid.content if top_valid else None!r}"
    shown = _records(results)
    old_values = [v.value for v in question.superseded]
    for record in shown:
        if any(_contains(record.content, v) for v in old_values) and record.status is RecordStatus.VALID:
            right = False
            why = f"superseded value shown as valid: {record.content!r}"
    history = any(any(_contains(r.content, v) for v in old_values) for r in shown)
    return right, history, why


def _memory_of(records: Sequence[MemoryRecord], version: Version) -> MemoryRecord | None:
    for record in records:
        managed = (record.metadata or {}).get("$agent_memory") or {}
        if version.message_id in (managed.get("source_message_ids") or ()) and _contains(
            record.content, version.value
        ):
            return record
    return None


def chains(memory: AgentMemory, conversation: Conversation) -> dict[str, Any]:
    """Planted changes against the stored links: each newer version's memory must supersede the
    previous version's, and every older one must be invalid."""
    expected = found = complete = changed = 0
    extracted = planted = 0
    lifecycle_links = 0
    missing: list[str] = []
    by_user: dict[str, list[MemoryRecord]] = {}
    for q in conversation.questions:
        if q.user_id not in by_user:
            by_user[q.user_id] = memory.list_memories(user_id=q.user_id)
    all_ids = {r.id for records in by_user.values() for r in records}
    with memory.store.unit_of_work() as uow:
        seen_links: set[str] = set()
        for rid in sorted(all_ids):
            for link in uow.links.touching(rid):
                if link.id not in seen_links and link.relation_type in (
                    "supersedes",
                    "refines",
                    "duplicates",
                ):
                    seen_links.add(link.id)
        lifecycle_links = len(seen_links)
        for q in conversation.questions:
            records = by_user[q.user_id]
            mems = [_memory_of(records, v) for v in q.versions]
            planted += len(q.versions)
            extracted += sum(1 for m in mems if m is not None)
            if q.kind != "current":
                continue
            changed += 1
            ok_chain = True
            for older, newer in itertools.pairwise(mems):
                expected += 1
                linked = (
                    older is not None
                    and newer is not None
                    and uow.links.find(newer.id, older.id, "supersedes") is not None
                )
                found += int(linked)
                ok_chain &= linked
            statuses_ok = (
                all(m is not None and m.status is RecordStatus.INVALID for m in mems[:-1])
                and mems[-1] is not None
                and mems[-1].status is RecordStatus.VALID
            )
            if ok_chain and statuses_ok:
                complete += 1
            else:
                missing.append(q.id)
    return {
        "planted_statements": planted,
        "planted_extracted": extracted,
        "supersedes_expected": expected,
        "supersedes_found": found,
        "chains_expected": changed,
        "chains_complete": complete,
        "chains_incomplete": missing,
        "lifecycle_links_total": lifecycle_links,
    }


def evaluate_config(
    conversation: Conversation, embedder: Any, *, strategy: str, extraction: bool, backend: str = "embedded"
) -> dict[str, Any]:
    evidence_all, evidence_current = Recall(), Recall()
    right = history = asked = 0
    card_right = 0
    tokens: list[int] = []
    leaks = 0
    failures: list[dict[str, str]] = []
    with client(embedder, strategy=strategy, extraction=extraction, backend=backend) as memory:
        for session in conversation.sessions:
            thread = memory.create_thread(
                thread_id=session.id,
                user_id=session.user_id,
                agent_id="assistant",
                memory_extraction_config=QUIET_THREAD,
            )
            for m in session.messages:
                thread.add_messages(
                    [{"id": m.id, "role": m.role, "content": m.content, "timestamp": m.timestamp}]
                )
        chain_figures = chains(memory, conversation) if extraction else None
        for q in conversation.questions:
            results = memory.search(q.text, user_id=q.user_id, max_results=10)
            leaks += sum(1 for r in results if r.record.user_id != q.user_id)
            ranked = [frozenset(hit_sources(r)[1]) for r in results]
            evidence_all.add(ranked, frozenset({q.current.message_id}))
            if q.kind == "current":
                evidence_current.add(ranked, frozenset({q.current.message_id}))
            if extraction and q.kind == "current":
                memories = memory.search(
                    q.text, user_id=q.user_id, record_types=MEMORY_TYPES, max_results=10, num_hops=1
                )
                ok, shown, why = judge_current(memories, q)
                if not ok:
                    failures.append({"question": q.id, "where": "search", "why": why})
                asked += 1
                right += int(ok)
                history += int(shown)
        for q in conversation.questions:
            thread = memory.create_thread(thread_id=f"ask-{q.id}", user_id=q.user_id, agent_id="assistant")
            thread.add_messages([{"role": "user", "content": q.text}])
            card = thread.get_context_card()
            tokens.append(card_tokens(card.content))
            if extraction and q.kind == "current":
                ok, _, why = judge_current(list(card.relevant_results), q)
                if not ok:
                    failures.append({"question": q.id, "where": "card", "why": why})
                card_right += int(ok)
    return {
        "strategy": strategy,
        "extraction": extraction,
        "evidence": evidence_all.to_json(),
        "evidence_changed_slots": evidence_current.to_json(),
        "current_vs_superseded": {
            "questions": asked,
            "right": right,
            "share_right": round(right / asked, 4) if asked else None,
            "history_shown": history,
            "card_right": card_right,
            "card_share_right": round(card_right / asked, 4) if asked else None,
        }
        if extraction
        else None,
        "chains": chain_figures,
        "card_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "card_tokens_max": max(tokens) if tokens else None,
        "cross_user_results": leaks,
        "current_failures": failures,
    }


def evaluate(
    seed: int,
    embedder: Any,
    *,
    config: Config = Config(),
    strategies: Sequence[str] = STRATEGIES,
    extraction_modes: Sequence[bool] = (False, True),
    backend: str = "embedded",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    conversation = generate(seed, config)
    configs = []
    for extraction in extraction_modes:
        for strategy in strategies:
            log(f"  synthetic seed {seed}, extraction {'on' if extraction else 'off'}, {strategy} ...")
            configs.append(
                evaluate_config(
                    conversation, embedder, strategy=strategy, extraction=extraction, backend=backend
                )
            )
    return {"conversation": conversation.facts(), "backend": backend, "configs": configs}


def report(result: dict[str, Any]) -> str:
    facts = result["conversation"]
    lines = [
        (
            f"Synthetic conversations, seed {facts['seed']}: {facts['users']} users, {facts['sessions']} sessions, "
            f"{facts['messages']} messages, {facts['questions']} questions ({facts['changed_slots']} about changed slots, "
            f"{facts['supersedes_expected']} supersedes links expected)"
        ),
        "",
    ]
    headers = [
        "extraction",
        "strategy",
        "evid R@5",
        "evid R@10",
        "changed R@5",
        "chains",
        "supersedes",
        "current right",
        "card right",
        "card tokens",
        "leaks",
    ]
    rows = []
    for c in result["configs"]:
        cvs, ch = c["current_vs_superseded"], c["chains"]
        rows.append(
            [
                "on" if c["extraction"] else "off",
                STRATEGY_LABELS[c["strategy"]],
                fmt(c["evidence"]["recall@5"]),
                fmt(c["evidence"]["recall@10"]),
                fmt(c["evidence_changed_slots"]["recall@5"]),
                f"{ch['chains_complete']}/{ch['chains_expected']}" if ch else "n/a",
                f"{ch['supersedes_found']}/{ch['supersedes_expected']}" if ch else "n/a",
                f"{cvs['right']}/{cvs['questions']} ({fmt(cvs['share_right'], 2)})" if cvs else "n/a",
                f"{cvs['card_right']}/{cvs['questions']}" if cvs else "n/a",
                f"{c['card_tokens_mean']:.0f} (max {c['card_tokens_max']})",
                c["cross_user_results"],
            ]
        )
    lines.append(table(headers, rows))
    return "\n".join(lines)
