"""Properties of following version histories (application/retrieval.py
``with_version_history``, ARCHITECTURE.md D22) over random supersedes graphs: no hit is dropped
or repeated, the search's hits keep their relative order, and every record added is an admitted
version (joined by ``supersedes`` links, either way) of a hit placed before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from palimpsest.application.retrieval import asks_across_versions, with_version_history
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordStatus, RecordType
from palimpsest.domain.search import SearchHit, SearchQuery

T0 = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
N = 8


def _memory(i: int, *, valid: bool, fact: bool, source: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}",
        record_type=RecordType.FACT if fact else RecordType.PREFERENCE,
        content=f"memory {i}",
        created_at=T0,
        updated_at=T0,
        user_id="u",
        metadata={"$agent_memory": {"source_message_ids": [source]}} if source else None,
        status=RecordStatus.VALID if valid else RecordStatus.INVALID,
    )


def _link(n: int, source: int, target: int) -> RecordLink:
    return RecordLink(
        id=f"l{n}",
        source_id=f"r{source}",
        source_type=RecordType.FACT,
        target_id=f"r{target}",
        target_type=RecordType.FACT,
        relation_type="supersedes",
        opposite_relation_type="is_superseded_by",
        created_at=T0 + timedelta(minutes=n),
    )


@st.composite
def graphs(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    edges = draw(st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, N - 1)), max_size=12))
    edges = [(a, b) for a, b in edges if a != b]
    targets = {b for _, b in edges}
    facts = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    drawn_from_message = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    records = {
        f"r{i}": _memory(i, valid=i not in targets, fact=facts[i], source=f"m{i}" if drawn_from_message[i] else None)
        for i in range(N)
    }  # a memory is invalid exactly when something supersedes it
    order = draw(st.permutations(range(N)))
    in_pool = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    pool = [SearchHit(records[f"r{i}"], 1.0 - j / N, j / N) for j, i in enumerate(order) if in_pool[i]]
    messages = [
        SearchHit(
            Message(id=f"m{i}", thread_id="t", role="user", content=f"message {i}", seq=i + 1, created_at=T0),
            0.5,
            0.5,
        )
        for i in range(N)
        if drawn_from_message[i] and draw(st.booleans())
    ]
    hits = pool + messages
    return records, [_link(n, a, b) for n, (a, b) in enumerate(edges)], hits


def _reachable(start: str, links: list[RecordLink]) -> set[str]:
    """Every record joined to ``start`` by supersedes links, either way."""
    seen, stack = {start}, [start]
    while stack:
        current = stack.pop()
        for link in links:
            for a, b in ((link.source_id, link.target_id), (link.target_id, link.source_id)):
                if a == current and b not in seen:
                    seen.add(b)
                    stack.append(b)
    return seen - {start}


@given(graphs(), st.booleans(), st.booleans(), st.integers(1, 20))
def test_versions_are_added_after_what_they_precede_and_nothing_else_moves(
    graph, include_invalid: bool, facts_only: bool, limit: int  # type: ignore[no-untyped-def]
) -> None:
    records, links, hits = graph
    query = SearchQuery(
        k=10,
        now=T0,
        text="x",
        include_invalid=include_invalid,
        record_types=frozenset({RecordType.FACT, RecordType.MESSAGE}) if facts_only else None,
    )

    def links_of(record_id: str) -> list[RecordLink]:
        return [link for link in links if record_id in (link.source_id, link.target_id)]

    out = with_version_history(hits, hits, query, links_of, records.get, limit=limit)
    ids = [h.id for h in out]
    assert len(ids) == len(set(ids))
    assert set(ids) >= {h.id for h in hits}
    searched = {h.id for h in hits}
    added = [i for i in ids if i not in searched]
    for position, record_id in enumerate(ids):
        if record_id in added:
            record = records[record_id]
            assert query.admits_record(record, direct=True)
            heads = set()
            for before in ids[:position]:  # a message stands for the memories drawn from it
                heads.update(h.id for h in hits if _drawn_from(h) == before)
                heads.add(before)
            assert any(record_id in _reachable(head, links) for head in heads)
    # The search's own hits keep their relative order, but for those pulled up as a version.
    versions = {r for h in hits for r in _reachable(h.id, links)}
    unmoved = [i for i in ids if i in searched and i not in versions]
    assert unmoved == [h.id for h in hits if h.id in unmoved]


def _drawn_from(hit: SearchHit) -> str | None:
    metadata = hit.record.metadata if isinstance(hit.record, MemoryRecord) else None
    return metadata["$agent_memory"]["source_message_ids"][0] if metadata else None


@given(st.text(max_size=80))
def test_the_version_question_test_never_raises(text: str) -> None:
    assert asks_across_versions(text) in (True, False)


def test_a_long_chain_is_walked_no_further_than_the_visit_cap() -> None:
    from palimpsest.application.retrieval import VERSION_VISITS

    n = 500
    assert VERSION_VISITS < n // 2
    records = {f"r{i}": _memory(i, valid=i == 0, fact=i == 0) for i in range(n)}
    links = [_link(i, i, i + 1) for i in range(n - 1)]  # r0 supersedes r1 supersedes r2 ...
    loaded: list[str] = []

    def load(record_id: str) -> MemoryRecord | None:
        loaded.append(record_id)
        return records.get(record_id)

    def links_of(record_id: str) -> list[RecordLink]:
        i = int(record_id[1:])
        return [link for link in (links[i - 1] if i else None, links[i] if i < n - 1 else None) if link]

    head = SearchHit(records["r0"], 1.0, 0.0)
    facts_only = SearchQuery(k=10, now=T0, text="x", record_types=frozenset({RecordType.FACT}))
    # Every version is a preference, which the query excludes: nothing is added, and the walk stops.
    assert with_version_history([head], [head], facts_only, links_of, load, limit=10) == [head]
    assert len(loaded) < n // 2
    everything = SearchQuery(k=10, now=T0, text="x")
    out = with_version_history([head], [head], everything, links_of, load, limit=10)
    assert out[0] is head  # then at most 8 versions, the nearest ones
    assert {h.id for h in out[1:]} == {f"r{i}" for i in range(1, 9)}
