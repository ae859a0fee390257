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

Presets (:data:`PRESETS`): ``small`` (the first one), ``large`` (the default of the benchmark:
more sessions and distractors, and three things ``small`` lacks: half of the questions asked in
other words, third-party "confusers" that reuse the question's own words, and history questions
whose evidence is every version) and ``quick`` (smoke runs). See the README for the parameters
and why.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, SearchResult
from palimpsest.domain.model import MemoryRecord, RecordStatus

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
    raw_store,
    table,
    variant_label,
)

__all__ = ["LARGE", "PRESETS", "QUICK", "SMALL", "Config", "Conversation", "evaluate", "generate", "report"]

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
    paraphrase: str = ""
    """The question in other words: no content word of ``plant`` or ``change`` (``large`` preset)."""
    confuser: str | None = None
    """A third party's statement that reuses the question's and the slot's own words, with another
    value, so word overlap alone points at it (``large`` preset)."""
    history: str | None = None
    """A question about every value the slot has had (changing slots, ``large`` preset)."""


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
        paraphrase="Where is my home these days?",
        confuser="My sister keeps asking which city she should live in; she is leaning towards {v}.",
        history="Which cities have I lived in?",
    ),
    Slot(
        "employer",
        "I work at {v}.",
        "I now work at {v}.",
        "Which company do I work at?",
        COMPANIES,
        "My friend works at {v}.",
        paraphrase="Which firm employs me?",
        confuser="My friend wonders which company he should work at; {v} made him an offer.",
        history="Which companies have I worked at?",
    ),
    Slot(
        "job",
        "I work as a {v}.",
        "I now work as a {v}.",
        "What is my job?",
        JOBS,
        "My cousin works as a {v}.",
        paraphrase="What do I do for a living?",
        confuser="My cousin likes his job: he works as a {v} on night shifts.",
        history="What jobs have I had?",
    ),
    Slot(
        "manager",
        "My manager is {v}.",
        "My manager is now {v}.",
        "Who is my manager?",
        MANAGERS,
        "My wife's manager is {v}.",
        paraphrase="Who is my boss?",
        confuser="My wife says her manager, {v}, is the best manager she has had.",
        history="Who have my managers been?",
    ),
    Slot(
        "language",
        "My favourite programming language is {v}.",
        "My favourite programming language is now {v}.",
        "What is my favourite programming language?",
        LANGUAGES,
        "My brother's favourite programming language is {v}.",
        paraphrase="What do I most like to code in?",
        confuser="My brother tells everyone that his favourite programming language is {v}.",
        history="Which programming languages have been my favourite?",
    ),
    Slot(
        "cuisine",
        "My favourite cuisine is {v}.",
        "My favourite cuisine is now {v}.",
        "What kind of food is my favourite cuisine?",
        CUISINES,
        "Maybe I should try {v} someday.",
        paraphrase="What do I most like to eat?",
        confuser="My neighbour's favourite kind of food is {v}; she cooks it every week.",
        history="Which cuisines have been my favourite?",
    ),
    Slot(
        "sport",
        "My favourite sport is {v}.",
        "My favourite sport is now {v}.",
        "Which sport is my favourite?",
        SPORTS,
        "My son's favourite sport is {v}.",
        paraphrase="Which game do I most enjoy playing?",
        confuser="My son says his favourite sport is {v} and plays it every weekend.",
        history="Which sports have been my favourite?",
    ),
)
STABLE: tuple[Slot, ...] = (
    Slot(
        "spoken",
        "I speak {v}.",
        None,
        "Which language do I speak?",
        SPOKEN,
        "My neighbour speaks {v}.",
        paraphrase="Which language can I converse in?",
        confuser="My neighbour speaks {v} and says it is a beautiful language.",
    ),
    Slot(
        "dog",
        "I have a dog named {v}.",
        None,
        "What is my dog called?",
        DOGS,
        "My aunt has a dog named {v}.",
        paraphrase="What is my pet called?",
        confuser="My aunt's dog is called {v} and she walks it twice a day.",
    ),
    Slot(
        "car",
        "I drive a {v}.",
        None,
        "What car do I drive?",
        CARS,
        "My dad drives a {v}.",
        paraphrase="Which vehicle do I own?",
        confuser="My dad drives a {v} and says it is the best car he has owned.",
    ),
    Slot(
        "birthday",
        "My birthday is on {v}.",
        None,
        "When is my birthday?",
        BIRTHDAYS,
        "My mother's birthday is on {v}.",
        paraphrase="When was I born?",
        confuser="My mother's birthday is on {v}, so I need to buy her a present.",
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
    paraphrase_share: float = 0.0
    """Share of each user's slot questions asked in other words (:attr:`Slot.paraphrase`)."""
    confuser_share: float = 0.0
    """Share of the slot distractors drawn as confusers (:attr:`Slot.confuser`) instead."""
    history_questions: bool = False
    """Also ask, per changed slot, for every value it has had (evidence: every version)."""


SMALL = Config()
"""The first preset (seed 7: 4 users, 48 sessions, 32 questions): recall@10 near its ceiling."""
LARGE = Config(
    users=6,
    sessions=20,
    turns=5,
    changing=7,
    stable=4,
    max_versions=3,
    distractors=5,
    paraphrase_share=0.5,
    confuser_share=0.5,
    history_questions=True,
)
"""The harder preset, fixed before any method was run on it (README: parameters and rationale)."""
QUICK = Config(users=2, sessions=3, turns=1, changing=3, stable=1, max_versions=3, distractors=1)
PRESETS: dict[str, Config] = {"small": SMALL, "large": LARGE, "quick": QUICK}


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
    """``current`` (a changed slot's value now), ``stable`` or ``history`` (every value a changed
    slot has had)."""
    versions: tuple[Version, ...]
    """Oldest first; the last is the current value."""
    phrasing: str = "literal"
    """``literal`` (the slot's own words) or ``paraphrase``."""

    @property
    def evidence(self) -> frozenset[str]:
        """The messages that answer it: the current value's, or every version's for history."""
        if self.kind == "history":
            return frozenset(v.message_id for v in self.versions)
        return frozenset({self.current.message_id})

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
            "questions_by_kind": _count(q.kind for q in self.questions),
            "questions_by_phrasing": _count(q.phrasing for q in self.questions),
            "changed_slots": sum(1 for q in self.questions if q.kind == "current"),
            "supersedes_expected": sum(len(q.versions) - 1 for q in self.questions if q.kind != "history"),
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
                turns.append(("user", _distractor(rng, slots, own_values, config.confuser_share), None))
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
        paraphrased: set[str] = set()
        if config.paraphrase_share:  # no draw otherwise: the earlier presets stay as they were
            count = round(config.paraphrase_share * len(slots))
            paraphrased = {s.name for s in rng.sample([s for s in slots if s.paraphrase], count)}
        for slot in slots:
            found = versions[slot.name]
            para = slot.name in paraphrased
            questions.append(
                Question(
                    id=f"{user}-{slot.name}",
                    user_id=user,
                    slot=slot.name,
                    text=slot.paraphrase if para else slot.question,
                    kind="current" if len(found) > 1 else "stable",
                    versions=tuple(found),
                    phrasing="paraphrase" if para else "literal",
                )
            )
        if config.history_questions:
            for slot in slots:
                found = versions[slot.name]
                if slot.history and len(found) > 1:
                    questions.append(
                        Question(
                            id=f"{user}-{slot.name}-history",
                            user_id=user,
                            slot=slot.name,
                            text=slot.history,
                            kind="history",
                            versions=tuple(found),
                        )
                    )
    return Conversation(seed, config, tuple(sessions), tuple(questions))


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _distractor(
    rng: random.Random, slots: Sequence[Slot], own: dict[str, set[str]], confuser_share: float = 0.0
) -> str:
    if rng.random() < 0.3:
        return rng.choice(OTHER_PREFERENCES)
    slot = rng.choice([s for s in slots if s.distractor])
    assert slot.distractor is not None
    others = [v for v in slot.values if v not in own[slot.name]]
    template = slot.distractor
    if confuser_share and slot.confuser and rng.random() < confuser_share:  # no draw when 0
        template = slot.confuser
    return template.format(v=rng.choice(others))


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
    with raw_store(memory).unit_of_work() as uow:
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


def _ingest(memory: AgentMemory, conversation: Conversation) -> None:
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


def evaluate_mode(
    conversation: Conversation,
    embedder: Any,
    *,
    variants: Sequence[str],
    extraction: bool,
    backend: str = "embedded",
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """One result per variant for an extraction mode (see ``evaluate_variants``)."""
    times = [m.timestamp for s in conversation.sessions for m in s.messages]
    asked_at: dict[str, datetime] = {}
    for session in conversation.sessions:
        last = max(m.timestamp for m in session.messages) + timedelta(hours=1)
        asked_at[session.user_id] = max(asked_at.get(session.user_id, last), last)

    def ingest(memory: AgentMemory) -> dict[str, Any]:
        _ingest(memory, conversation)
        return {"chains": chains(memory, conversation) if extraction else None}

    def searches(memory: AgentMemory, _tag: str, clock: ManualClock) -> dict[str, Any]:
        evidence = Recall()
        by_kind: dict[str, Recall] = {}
        by_phrasing: dict[str, Recall] = {}
        latency = Latency(embedder)
        right = history = asked = leaks = 0
        failures: list[dict[str, str]] = []
        for q in conversation.questions:
            clock.set(asked_at[q.user_id])  # "now" is after the user's last session
            with latency.time("search"):
                results = memory.search(q.text, user_id=q.user_id, max_results=10)
            leaks += sum(1 for r in results if r.record.user_id != q.user_id)
            ranked = [frozenset(hit_sources(r)[1]) for r in results]
            evidence.add(ranked, q.evidence)
            by_kind.setdefault(q.kind, Recall()).add(ranked, q.evidence)
            if q.kind != "history":
                by_phrasing.setdefault(q.phrasing, Recall()).add(ranked, q.evidence)
            if extraction and q.kind == "current":
                memories = memory.search(
                    q.text, user_id=q.user_id, record_types=MEMORY_TYPES, max_results=10, num_hops=1
                )
                ok, shown, why = judge_current(memories, q)
                if not ok:
                    failures.append({"question": q.id, "text": q.text, "where": "search", "why": why})
                asked += 1
                right += int(ok)
                history += int(shown)
        return {
            "evidence": evidence.to_json(),
            "evidence_by_kind": {k: r.to_json() for k, r in sorted(by_kind.items())},
            "evidence_by_phrasing": {k: r.to_json() for k, r in sorted(by_phrasing.items())},
            "current_vs_superseded": {"questions": asked, "right": right, "history_shown": history}
            if extraction
            else None,
            "cross_user_results": leaks,
            "current_failures": failures,
            "latency": latency.to_json(),
        }

    def cards(memory: AgentMemory, tag: str, clock: ManualClock) -> dict[str, Any]:
        card_evidence = Recall(ks=(5,))
        latency = Latency(embedder)
        tokens: list[int] = []
        card_right = 0
        failures: list[dict[str, str]] = []
        for q in conversation.questions:
            clock.set(asked_at[q.user_id])
            thread = memory.create_thread(
                thread_id=f"ask-{tag}-{q.id}", user_id=q.user_id, agent_id="assistant"
            )
            thread.add_messages([{"role": "user", "content": q.text}])
            with latency.time("card"):
                card = thread.get_context_card()
            tokens.append(card_tokens(card.content))
            card_evidence.add([frozenset(hit_sources(r)[1]) for r in card.relevant_results], q.evidence)
            if extraction and q.kind == "current":
                ok, _, why = judge_current(list(card.relevant_results), q)
                if not ok:
                    failures.append({"question": q.id, "text": q.text, "where": "card", "why": why})
                card_right += int(ok)
        return {
            "card_evidence": card_evidence.to_json(),
            "card_right": card_right,
            "card_failures": failures,
            "card_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
            "card_tokens_max": max(tokens) if tokens else None,
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
        label=f"synthetic seed {conversation.seed}",
        start=min(times) - timedelta(days=1),
    )
    for c in configs:
        c["latency"] = {**c.pop("latency"), **c.pop("card_latency")}
        c["current_failures"] = c["current_failures"] + c.pop("card_failures")
        cvs = c["current_vs_superseded"]
        if cvs is not None:
            cvs["card_right"] = c.pop("card_right")
            cvs["share_right"] = round(cvs["right"] / cvs["questions"], 4) if cvs["questions"] else None
            cvs["card_share_right"] = (
                round(cvs["card_right"] / cvs["questions"], 4) if cvs["questions"] else None
            )
        else:
            c.pop("card_right")
    return configs


def evaluate(
    seed: int,
    embedder: Any,
    *,
    config: Config = SMALL,
    preset: str | None = None,
    variants: Sequence[str] = STANDARD_VARIANTS,
    extraction_modes: Sequence[bool] = (False, True),
    backend: str = "embedded",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    conversation = generate(seed, config)
    configs: list[dict[str, Any]] = []
    for extraction in extraction_modes:
        configs.extend(
            evaluate_mode(
                conversation, embedder, variants=variants, extraction=extraction, backend=backend, log=log
            )
        )
    return {
        "conversation": conversation.facts(),
        "preset": preset,
        "backend": backend,
        "variants": list(variants),
        "configs": configs,
    }


def _get(path: str) -> Callable[[Mapping[str, Any]], Any]:
    keys = path.split(".")

    def get(config: Mapping[str, Any]) -> Any:
        value: Any = config
        for key in keys:
            value = (value or {}).get(key)
        return value

    return get


def report(result: dict[str, Any]) -> str:
    facts = result["conversation"]
    preset = f" ({result['preset']} preset)" if result.get("preset") else ""
    lines = [
        (
            f"Synthetic conversations{preset}, seed {facts['seed']}: {facts['users']} users, {facts['sessions']} sessions, "
            f"{facts['messages']} messages, {facts['questions']} questions {facts.get('questions_by_kind', {})} "
            f"{facts.get('questions_by_phrasing', {})}, {facts['supersedes_expected']} supersedes links expected"
        ),
    ]
    groups: dict[bool, list[dict[str, Any]]] = {}
    for c in result["configs"]:
        groups.setdefault(c["extraction"], []).append(c)
    for extraction, configs in groups.items():
        headers = [
            "variant",
            "evid R@5",
            "evid R@10",
            "all@10",
            "literal R@10",
            "para R@10",
            "history all@10",
        ]
        if extraction:
            headers += ["current right", "card right", "chains"]
        headers += [
            "card evid",
            "card tokens",
            "search ms p50/p95 [excl. emb.]",
            "card ms p50/p95 [excl. emb.]",
        ]
        rows = []
        for c in configs:
            e, by_p, by_k = c["evidence"], c["evidence_by_phrasing"], c["evidence_by_kind"]
            row = [
                variant_label(c),
                fmt(e["recall@5"]),
                fmt(e["recall@10"]),
                fmt(e["all@10"]),
                fmt((by_p.get("literal") or {}).get("recall@10")),
                fmt((by_p.get("paraphrase") or {}).get("recall@10")),
                fmt((by_k.get("history") or {}).get("all@10")),
            ]
            if extraction:
                cvs, ch = c["current_vs_superseded"], c["chains"]
                row += [
                    f"{cvs['right']}/{cvs['questions']}",
                    f"{cvs['card_right']}/{cvs['questions']}",
                    f"{ch['chains_complete']}/{ch['chains_expected']}",
                ]
            row += [
                fmt(c["card_evidence"]["recall@5"]),
                f"{c['card_tokens_mean']:.0f} (max {c['card_tokens_max']})",
                fmt_ms(c["latency"], "search"),
                fmt_ms(c["latency"], "card"),
            ]
            rows.append(row)
        leaks = {c["variant"]: c["cross_user_results"] for c in configs if c["cross_user_results"]}
        lines += ["", f"extraction {'on' if extraction else 'off'}", "", table(headers, rows), ""]
        lines.append(gap_line(configs, {"evidence R@10": _get("evidence.recall@10")}))
        lines.append(f"  results of other users (leaks): {leaks or 'none'}")
    return "\n".join(lines)
