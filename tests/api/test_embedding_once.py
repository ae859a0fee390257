"""Ingestion embeds each text once: every message, every extracted memory (one call per
extraction pass), and no lookup by a stored text (past memories, link candidates) embeds that
text again; the memories, candidates and links are those of embedding every lookup."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from clients import build_client
from doubles import CountingEmbedder
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.heuristic import HeuristicExtractor, RuleLinkResolver
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import (
    AgentMemory,
    ExtractedMemory,
    ExtractionRequest,
    LinkProposal,
    LinkResolution,
    MemoryExtractionConfig,
)
from palimpsest.application.embedding import RECENT_MESSAGES, EmbeddingHelper
from palimpsest.application.testing import ScriptedExtractor, ScriptedLinkResolver
from palimpsest.domain import MemoryRecord, RecordType
from palimpsest.domain.ports import MemoryStore

from .helpers import START

TURNS = (
    "I live in Lisbon.",
    "My favourite cuisine is Thai food.",
    "I speak Portuguese.",
    "My sister lives in Oslo.",
    "I now live in Porto.",
    "My favourite cuisine is now Ethiopian food.",
    "I work as a nurse.",
    "I moved to Madrid last month, so I live in Madrid now.",
    "I now work as a teacher.",
    "My favourite programming language is Python.",
    "My favourite programming language is now Rust.",
)
BATCH = ("I now live in Rome. I speak Italian and I work as a chef.", "Rome is lovely.")
"""Appended together: one pass over both, three memories."""


class _SeenExtractor(HeuristicExtractor):
    reads_past_memories = True  # it records them: a pass looks them up

    def __init__(self) -> None:
        super().__init__()
        self.past: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def extract(self, request: ExtractionRequest) -> list[ExtractedMemory]:
        targets = tuple(m.content for m in request.target_messages)
        self.past.append((targets, tuple(p.content for p in request.past_memories)))
        return super().extract(request)


class _SeenResolver(RuleLinkResolver):
    def __init__(self) -> None:
        super().__init__()
        self.shown: list[tuple[str, tuple[str, ...]]] = []

    def resolve(
        self,
        sources: Sequence[MemoryRecord],
        candidates: Mapping[str, Sequence[MemoryRecord]],
        *,
        custom_instructions: str | None = None,
    ) -> list[LinkResolution]:
        self.shown.extend((s.content, tuple(c.content for c in candidates[s.id])) for s in sources)
        return super().resolve(sources, candidates, custom_instructions=custom_instructions)


def _client(store: MemoryStore, embedder: CountingEmbedder, mode: str, **ports: Any) -> AgentMemory:
    counter = itertools.count(1)
    return build_client(
        store=store,
        embedder=embedder,
        clock=ManualClock(START),
        memory_extraction_config=MemoryExtractionConfig(extraction_mode=mode, enable_context_summary=False),
        id_factory=lambda: f"id-{next(counter):04d}",
        **ports,
    )


def _links(memory: AgentMemory) -> list[tuple[str, str, str]]:
    records = {r.id: r.content for r in memory.list_memories(user_id="u1")}
    with memory.store.reading() as uow:
        links = uow.links.list(limit=None)
    return sorted((records[link.source_id], link.relation_type, records[link.target_id]) for link in links)


# What the same appends gave when every lookup embedded its text as a query (the links, the
# candidates each new memory was shown, the past memories each pass was shown).
LINKS = [
    ("The user moved to Madrid last month, so the user lives in Madrid now.", "supersedes", "The user now lives in Porto."),
    ("The user now lives in Porto.", "supersedes", "The user lives in Lisbon."),
    ("The user now lives in Rome.", "supersedes", "The user moved to Madrid last month, so the user lives in Madrid now."),
    ("The user now works as a teacher.", "supersedes", "The user works as a nurse."),
    ("The user works as a chef.", "supersedes", "The user now works as a teacher."),
    ("The user's favourite cuisine is now Ethiopian food.", "supersedes", "The user's favourite cuisine is Thai food."),
    ("The user's favourite programming language is now Rust.", "supersedes", "The user's favourite programming language is Python."),
]
SHOWN: list[tuple[str, tuple[str, ...]]] = [
    ("The user's favourite cuisine is Thai food.", ("The user lives in Lisbon.",)),
    (
        "The user speaks Portuguese.",
        (
            "The user's favourite cuisine is Thai food.",
            "The user lives in Lisbon.",
        ),
    ),
    (
        "The user now lives in Porto.",
        (
            "The user lives in Lisbon.",
            "The user speaks Portuguese.",
            "The user's favourite cuisine is Thai food.",
        ),
    ),
    (
        "The user's favourite cuisine is now Ethiopian food.",
        (
            "The user's favourite cuisine is Thai food.",
            "The user speaks Portuguese.",
            "The user now lives in Porto.",
        ),
    ),
    (
        "The user works as a nurse.",
        (
            "The user speaks Portuguese.",
            "The user now lives in Porto.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
    (
        "The user moved to Madrid last month, so the user lives in Madrid now.",
        (
            "The user now lives in Porto.",
            "The user speaks Portuguese.",
            "The user works as a nurse.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
    (
        "The user now works as a teacher.",
        (
            "The user works as a nurse.",
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
    (
        "The user's favourite programming language is Python.",
        (
            "The user's favourite cuisine is now Ethiopian food.",
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user now works as a teacher.",
        ),
    ),
    (
        "The user's favourite programming language is now Rust.",
        (
            "The user's favourite programming language is Python.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user now works as a teacher.",
        ),
    ),
    (
        "The user now lives in Rome.",
        (
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user speaks Portuguese.",
            "The user's favourite programming language is now Rust.",
            "The user now works as a teacher.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
    (
        "The user speaks Italian.",
        (
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user now works as a teacher.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user's favourite programming language is now Rust.",
        ),
    ),
    (
        "The user works as a chef.",
        (
            "The user now works as a teacher.",
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user's favourite programming language is now Rust.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
]
PAST: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (("I live in Lisbon.",), ()),
    (("My favourite cuisine is Thai food.",), ("The user lives in Lisbon.",)),
    (("I speak Portuguese.",), ("The user's favourite cuisine is Thai food.", "The user lives in Lisbon.")),
    (
        ("My sister lives in Oslo.",),
        (
            "The user lives in Lisbon.",
            "The user's favourite cuisine is Thai food.",
            "The user speaks Portuguese.",
        ),
    ),
    (
        ("I now live in Porto.",),
        (
            "The user lives in Lisbon.",
            "The user's favourite cuisine is Thai food.",
            "The user speaks Portuguese.",
        ),
    ),
    (
        ("My favourite cuisine is now Ethiopian food.",),
        (
            "The user's favourite cuisine is Thai food.",
            "The user speaks Portuguese.",
            "The user now lives in Porto.",
        ),
    ),
    (
        ("I work as a nurse.",),
        (
            "The user now lives in Porto.",
            "The user speaks Portuguese.",
            "The user's favourite cuisine is now Ethiopian food.",
        ),
    ),
    (
        ("I moved to Madrid last month, so I live in Madrid now.",),
        (
            "The user now lives in Porto.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user speaks Portuguese.",
            "The user works as a nurse.",
        ),
    ),
    (
        ("I now work as a teacher.",),
        (
            "The user works as a nurse.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user speaks Portuguese.",
        ),
    ),
    (
        ("My favourite programming language is Python.",),
        (
            "The user's favourite cuisine is now Ethiopian food.",
            "The user speaks Portuguese.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user now works as a teacher.",
        ),
    ),
    (
        ("My favourite programming language is now Rust.",),
        (
            "The user's favourite programming language is Python.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user now works as a teacher.",
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user speaks Portuguese.",
        ),
    ),
    (
        ("I now live in Rome. I speak Italian and I work as a chef.", "Rome is lovely."),
        (
            "The user moved to Madrid last month, so the user lives in Madrid now.",
            "The user's favourite cuisine is now Ethiopian food.",
            "The user's favourite programming language is now Rust.",
            "The user speaks Portuguese.",
            "The user now works as a teacher.",
        ),
    ),
]


@pytest.mark.parametrize("mode", ["INLINE", "BACKGROUND"])
def test_an_append_embeds_each_message_and_each_memory_once(store: MemoryStore, mode: str) -> None:
    embedder = CountingEmbedder(HashingEmbedder())
    extractor, resolver = _SeenExtractor(), _SeenResolver()
    memory = _client(store, embedder, mode, extractor=extractor, link_resolver=resolver)
    thread = memory.create_thread(user_id="u1")
    for text in TURNS:
        thread.add_messages([{"role": "user", "content": text}])
    thread.add_messages([{"role": "user", "content": BATCH[0]}, {"role": "assistant", "content": BATCH[1]}])
    memory.wait_for_memory_extraction(30)

    memories = [r.content for r in memory.list_memories(user_id="u1")]
    assert len(memories) == 13
    documents = embedder.texts(is_query=False)
    assert Counter(documents) == Counter([*TURNS, *BATCH, *memories])
    # The batch's three memories are embedded together, in one call.
    assert [len(call.texts) for call in embedder.calls if set(call.texts) <= set(memories)] == [1] * 10 + [3]
    # The only query: the past memories of the two-message pass, looked up by their joined text.
    assert embedder.texts(is_query=True) == ["\n".join(BATCH)]

    assert _links(memory) == LINKS
    if mode == "INLINE":
        assert resolver.shown == SHOWN
        assert extractor.past == PAST
    else:  # the worker draws link ids between the append's ids: ties in score may swap places
        assert _unordered(resolver.shown) == _unordered(SHOWN)
        assert _unordered(extractor.past) == _unordered(PAST)
    memory.close()


def _unordered(seen: Sequence[tuple[Any, tuple[str, ...]]]) -> list[tuple[Any, tuple[str, ...]]]:
    return [(key, tuple(sorted(shown))) for key, shown in seen]


def test_the_memories_of_one_pass_are_embedded_in_one_call(store: MemoryStore) -> None:
    facts = [ExtractedMemory(RecordType.FACT, f"The user owns {n} bicycles.") for n in (1, 2, 3)]
    embedder = CountingEmbedder(HashingEmbedder())
    memory = _client(store, embedder, "INLINE", extractor=ScriptedExtractor([facts]))
    memory.create_thread(user_id="u1").add_messages([{"role": "user", "content": "Bicycles, bicycles."}])
    assert [(c.texts, c.is_query) for c in embedder.calls] == [
        (("Bicycles, bicycles.",), False),
        (tuple(f.text for f in facts), False),
    ]
    memory.close()


def test_an_added_memory_is_linked_with_the_vector_it_was_stored_with(store: MemoryStore) -> None:
    def supersede(source: MemoryRecord, candidates: Sequence[MemoryRecord]) -> list[LinkProposal]:
        return [LinkProposal(c.id, "supersedes") for c in candidates]

    embedder = CountingEmbedder(HashingEmbedder())
    resolver = ScriptedLinkResolver(supersede)
    memory = _client(store, embedder, "INLINE", link_resolver=resolver)
    old = memory.add_memory("The user lives in Lisbon.", user_id="u1")
    new = memory.add_memory("The user lives in Porto.", user_id="u1", autonomous_linking=True)
    assert resolver.calls == [(new, (old,))]
    assert embedder.calls and not embedder.texts(is_query=True)
    assert embedder.texts(is_query=False) == ["The user lives in Lisbon.", "The user lives in Porto."]
    memory.close()


def test_the_helper_remembers_the_vectors_of_the_last_messages_it_embedded() -> None:
    helper = EmbeddingHelper(HashingEmbedder())

    class _Turn:
        role = "user"
        timestamp = None
        metadata = None

        def __init__(self, content: str) -> None:
            self.content = content

    first = helper.messages([_Turn("I live in Lisbon.")])[0]
    assert helper.message_vector("I live in Lisbon.") == first
    assert helper.message_vector("I live in Porto.") is None
    helper.messages([_Turn(f"message {n}") for n in range(RECENT_MESSAGES)])
    assert helper.message_vector("I live in Lisbon.") is None  # the oldest are forgotten
    assert helper.message_vector(f"message {RECENT_MESSAGES - 1}") is not None
    assert EmbeddingHelper(None).messages([_Turn("I live in Lisbon.")]) == [None]


TALK = (
    ("Caroline", "I live in Lisbon."),
    ("Melanie", "That sounds lovely."),
    ("Caroline", "I now live in Porto. I work as a nurse."),
)


def _turn(speaker: str, text: str) -> dict[str, str]:
    return {"role": "user", "content": text, "name": speaker}


@pytest.mark.parametrize("mode", ["INLINE", "BACKGROUND"])
def test_a_named_turn_embeds_its_index_text_and_its_memories_and_nothing_else(store: MemoryStore, mode: str) -> None:
    # The offline extractor never reads the past memories: a pass embeds no query to look them
    # up (a named turn's text is not its index text, so that lookup embedded it again).
    embedder = CountingEmbedder(HashingEmbedder())
    memory = _client(store, embedder, mode, extractor=HeuristicExtractor(), link_resolver=RuleLinkResolver())
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([_turn(*TALK[0])])
    memory.wait_for_memory_extraction(30)
    assert [(c.texts, c.is_query) for c in embedder.calls] == [
        (("Caroline: I live in Lisbon.",), False),
        (("Caroline lives in Lisbon.",), False),
    ]
    thread.add_messages([_turn(*t) for t in TALK[1:]])
    memory.wait_for_memory_extraction(30)
    assert not embedder.texts(is_query=True)
    assert len(embedder.calls) == 4  # the append's messages in one call, the pass's memories in one
    memories = [r.content for r in memory.list_memories(user_id="u1")]
    assert Counter(embedder.texts(is_query=False)[1:]) == Counter(
        [*(c for c in embedder.calls[2].texts), *memories]
    )
    assert sorted(memories) == ["Caroline lives in Lisbon.", "Caroline now lives in Porto.", "Caroline works as a nurse."]
    # Post-extraction linking still finds its candidates (with the stored vectors).
    assert _links(memory) == [("Caroline now lives in Porto.", "supersedes", "Caroline lives in Lisbon.")]
    memory.close()


def test_the_offline_extractor_still_gets_its_link_candidates_during_extraction(store: MemoryStore) -> None:
    embedder = CountingEmbedder(HashingEmbedder())
    counter = itertools.count(1)
    memory = build_client(
        store=store,
        embedder=embedder,
        clock=ManualClock(START),
        memory_extraction_config=MemoryExtractionConfig(
            extraction_mode="INLINE",
            enable_context_summary=False,
            memory_link_extraction_mode="DURING_EXTRACTION",
        ),
        id_factory=lambda: f"id-{next(counter):04d}",
        extractor=HeuristicExtractor(),
    )
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([_turn(*TALK[0])])
    thread.add_messages([_turn(*TALK[2])])
    assert _links(memory) == [("Caroline now lives in Porto.", "supersedes", "Caroline lives in Lisbon.")]
    assert embedder.texts(is_query=True) == [TALK[0][1], TALK[2][1]]  # each pass looked its candidates up
    memory.close()
