"""Property tests of the search pipeline written once (``palimpsest.domain.search``).

1. ``shortest_path_trees`` (every root at once, one ``links_around`` call per depth) builds, for
   each root, exactly the tree ``shortest_path_tree`` builds for it alone with the same links and
   the same admitted records, over random link graphs.
2. On every store, ``store.search(query)`` returns exactly what ``run_search`` answers from one
   ``store.searching()`` session, over random stored data and random queries: for a store that
   answers ``search`` its own faster way, this is the proof that the fast path is the pipeline.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from palimpsest.adapters.backends import BACKENDS
from palimpsest.domain.links import LIFECYCLE_REASONS, opposite_label
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordStatus, RecordType, Thread
from palimpsest.domain.ports import MemoryStore
from palimpsest.domain.search import (
    ScopeFilter,
    SearchHit,
    SearchQuery,
    TreeEdge,
    run_search,
    shortest_path_tree,
    shortest_path_trees,
)
from palimpsest.domain.sentinel import ANY

NOW = datetime(2025, 3, 14, 12, 0, 0, tzinfo=UTC)
DIMENSION = 4


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


# --- 1. shortest_path_trees == shortest_path_tree per root ------------------------------------


def _graph_link(link_id: str, source: str, target: str, minute: int) -> RecordLink:
    return RecordLink(
        id=link_id,
        source_id=source,
        source_type=RecordType.FACT,
        target_id=target,
        target_type=RecordType.FACT,
        relation_type="supports",
        opposite_relation_type=opposite_label("supports", None),
        created_at=at(minute),
    )


@st.composite
def link_graphs(draw: st.DrawFn) -> tuple[list[str], list[RecordLink], set[str]]:
    """Nodes, links (parallel links and equal times allowed, no self-link) and the admitted nodes."""
    size = draw(st.integers(min_value=1, max_value=9))
    nodes = [f"n{i}" for i in range(size)]
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, size - 1), st.integers(0, size - 1), st.integers(0, 3)).filter(
                lambda t: t[0] != t[1]
            ),
            max_size=24,
        )
    )
    # Link ids are drawn in a shuffled order so that "earliest link id" is not "first added".
    numbers = draw(st.permutations(range(len(pairs))))
    links = [
        _graph_link(f"l{n:02d}", nodes[i], nodes[j], minute) for n, (i, j, minute) in zip(numbers, pairs)
    ]
    admitted = set(draw(st.lists(st.sampled_from(nodes), unique=True)))
    return nodes, links, admitted


@given(
    graph=link_graphs(),
    data=st.data(),
    num_hops=st.integers(min_value=0, max_value=5),
    max_linked_results=st.integers(min_value=0, max_value=12),
)
def test_the_trees_of_several_roots_are_each_roots_own_shortest_path_tree(
    graph: tuple[list[str], list[RecordLink], set[str]],
    data: st.DataObject,
    num_hops: int,
    max_linked_results: int,
) -> None:
    nodes, links, admitted = graph
    roots = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=5), label="roots")
    order = data.draw(st.permutations(links), label="link order")  # the port promises no order
    frontiers: list[list[str]] = []

    def links_around(frontier: Sequence[str]) -> dict[str, list[RecordLink]]:
        frontiers.append(list(frontier))
        return {
            node: [lk for lk in order if node in lk.endpoints and lk.other_end(node) in admitted]
            for node in frontier
        }

    trees = shortest_path_trees(
        roots, num_hops=num_hops, max_linked_results=max_linked_results, links_around=links_around
    )

    def alone(root: str) -> list[TreeEdge]:
        return shortest_path_tree(
            root,
            num_hops=num_hops,
            max_linked_results=max_linked_results,
            links_of=lambda node: [lk for lk in links if node in lk.endpoints],
            admits=lambda node: node in admitted,
        )

    expected = {root: alone(root) for root in roots}
    assert {root: trees.get(root, []) for root in roots} == expected
    assert set(trees) <= set(roots)
    # one call per depth at most, each over one sorted frontier of distinct ids
    assert len(frontiers) <= max(num_hops, 0)
    for frontier in frontiers:
        assert frontier == sorted(set(frontier))
        assert set(frontier) <= set(roots) | admitted


# --- 2. store.search == run_search over the store's session, on every store -----------------

WORDS = ["tea", "coffee", "kyoto", "green", "note", "rome"]
USERS = ["A", "B", None]
MEMORY_TYPES = [RecordType.FACT, RecordType.PREFERENCE, RecordType.GUIDELINE, RecordType.MEMORY]
TOPICS = ["tea", "coffee"]


def mostly(usual: Any, *others: Any) -> st.SearchStrategy[Any]:
    """``usual`` three times in four: filters that are mostly off keep hits and trees common."""
    return st.one_of(st.just(usual), st.just(usual), st.just(usual), st.sampled_from(others))


vectors = st.tuples(*[st.integers(min_value=-2, max_value=2)] * DIMENSION).filter(any)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def _floats(vector: Sequence[int] | None) -> tuple[float, ...] | None:
    return None if vector is None else tuple(float(x) for x in vector)


@st.composite
def memory_records(draw: st.DrawFn, index: int) -> tuple[MemoryRecord, tuple[float, ...] | None]:
    invalid = draw(mostly(False, True))
    topic = draw(st.sampled_from([None, *TOPICS]))
    created = at(-index)
    record = MemoryRecord(
        id=f"r{index}",
        record_type=draw(st.sampled_from(MEMORY_TYPES)),
        content=draw(texts),
        created_at=created,
        updated_at=created,
        user_id=draw(mostly("A", "B", None)),
        metadata={"topic": topic} if topic is not None else None,
        expires_at=draw(mostly(None, at(-30), at(30))),
        status=RecordStatus.INVALID if invalid else RecordStatus.VALID,
        invalidation_reason=LIFECYCLE_REASONS["supersedes"] if invalid else None,
        invalidated_at=created if invalid else None,
    )
    return record, _floats(draw(st.one_of(vectors, vectors, st.none())))


@st.composite
def messages(draw: st.DrawFn, index: int) -> tuple[Message, tuple[float, ...] | None]:
    topic = draw(st.sampled_from([None, *TOPICS]))
    message = Message(
        id=f"m{index}" if index else "r0",  # the first message shares its id with a record
        thread_id="t1",
        role="user",
        content=draw(texts),
        seq=index + 1,
        created_at=at(index),
        metadata={"topic": topic} if topic is not None else None,
        user_id="A",
        expires_at=draw(mostly(None, at(30))),
    )
    return message, _floats(draw(st.one_of(st.none(), vectors)))


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, Any]:
    """Records, messages (one sharing an id with a record), and links between the records."""
    records = [draw(memory_records(i)) for i in range(draw(st.integers(min_value=1, max_value=9)))]
    msgs = [draw(messages(i)) for i in range(draw(st.integers(min_value=0, max_value=3)))]
    by_id = {r.id: r for r, _vector in records}
    pairs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(sorted(by_id)), st.sampled_from(sorted(by_id)), st.integers(0, 3)
            ).filter(lambda t: t[0] != t[1]),
            unique_by=lambda t: (t[0], t[1]),
            min_size=len(by_id) - 1,  # dense enough for trees of several levels
            max_size=20,
        )
    )
    links = [
        RecordLink(
            id=f"l{n}",
            source_id=source,
            source_type=by_id[source].record_type,
            target_id=target,
            target_type=by_id[target].record_type,
            relation_type="supports",
            opposite_relation_type=opposite_label("supports", None),
            created_at=at(minute),
        )
        for n, (source, target, minute) in enumerate(pairs)
    ]
    return {"records": records, "messages": msgs, "links": links}


@st.composite
def search_queries(draw: st.DrawFn, record_ids: Sequence[str]) -> SearchQuery:
    vector = draw(st.one_of(st.none(), vectors))
    text = draw(st.one_of(st.none(), texts, st.just("unheardof tea")))
    if vector is None and text is None:
        text = draw(texts)
    some_ids = st.lists(st.sampled_from(list(record_ids)), min_size=1, unique=True).map(frozenset)
    some_types = st.sets(st.sampled_from([*MEMORY_TYPES, RecordType.MESSAGE]), min_size=1).map(frozenset)
    topic = draw(mostly(None, *TOPICS))
    return SearchQuery(
        k=draw(st.integers(min_value=1, max_value=10)),
        now=draw(mostly(NOW, at(-60), at(40))),
        vector=_floats(vector),
        text=text,
        scope=ScopeFilter(user_id=draw(mostly(ANY, *USERS)), agent_id=ANY, thread_id=ANY),
        record_types=draw(st.one_of(st.none(), st.none(), st.none(), some_types)),
        include_invalid=draw(mostly(True, False)),
        metadata_filter=None if topic is None else {"topic": topic},
        num_hops=draw(st.integers(min_value=0, max_value=4)),
        max_linked_results=draw(st.integers(min_value=1, max_value=6)),
        fusion=draw(st.sampled_from(["absolute", "rrf", "score"])),
        dense_weight=draw(st.sampled_from([0.0, 0.3, 0.5, 1.0])),
        fusion_k=draw(st.one_of(st.none(), st.integers(min_value=1, max_value=5))),
        record_ids=draw(st.one_of(st.none(), st.none(), some_ids)),
    )


STORES = [
    pytest.param(name, id=name, marks=getattr(pytest.mark, name) if backend.pooled else ())
    for name, backend in BACKENDS.items()
]


@pytest.fixture(params=STORES)
def open_store(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """``open_store()``: a context manager giving a new, empty store of this backend (closed,
    and for a pooled backend dropped, when it ends). Each example opens its own store."""
    backend = BACKENDS[request.param]
    pool = request.getfixturevalue(f"{request.param}_pool") if backend.pooled else None

    @contextmanager
    def opened() -> Iterator[MemoryStore]:
        if backend.pooled:
            store_id = f"T{uuid.uuid4().hex[:12].upper()}"
            store = backend.open_store(pool=pool, memory_store_id=store_id, dimension=DIMENSION)
            try:
                yield store
            finally:
                store.close()
                assert backend.drop_stores is not None
                backend.drop_stores(pool, [store_id])
        elif backend.location == "path":
            folder = Path(tempfile.mkdtemp(prefix="palimpsest-search-"))
            store = backend.open_store(path=folder / "store.db", dimension=DIMENSION)
            try:
                yield store
            finally:
                store.close()
                shutil.rmtree(folder, ignore_errors=True)
        else:
            store = backend.open_store(dimension=DIMENSION)
            try:
                yield store
            finally:
                store.close()

    return opened


def _seed(store: MemoryStore, corpus: dict[str, Any]) -> None:
    with store.unit_of_work() as uow:
        uow.threads.add(Thread(id="t1", created_at=NOW, updated_at=NOW, user_id="A"))
        for message, vector in corpus["messages"]:
            uow.messages.add(message, embedding=vector)
        for record, vector in corpus["records"]:
            uow.records.add(record, embedding=vector)
        for link in corpus["links"]:
            uow.links.add(link)
        uow.commit()


def _comparable(hits: Sequence[SearchHit]) -> list[tuple[Any, ...]]:
    """Everything of each hit: the entity, the linked tree (records, links, parents, depths)."""
    return [(hit.record, hit.linked) for hit in hits]


POOLED_EXAMPLES = 20
"""Examples of the store comparison on a server store (PostgreSQL) in the default profile: each
costs a schema and its searches over the network; the in-process stores run the profile's count
(60), and the thorough profile (``HYPOTHESIS_PROFILE=thorough``) runs its count everywhere."""


def _same_answers(open_store: Callable[[], Any], corpus: dict[str, Any], data: st.DataObject) -> None:
    record_ids = [record.id for record, _vector in corpus["records"]]
    with open_store() as store:
        _seed(store, corpus)
        for _ in range(3):
            q = data.draw(search_queries(record_ids), label="query")
            with store.searching() as session:
                expected = run_search(session, q)
            got = store.search(q)
            assert _comparable(got) == _comparable(expected)
            assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-9, rel=0)
            assert [h.distance for h in got] == pytest.approx([h.distance for h in expected], abs=1e-9, rel=0)


def test_a_stores_search_returns_exactly_what_the_pipeline_answers_from_its_session(
    open_store: Callable[[], Any], request: pytest.FixtureRequest
) -> None:
    examples = settings.default.max_examples
    if BACKENDS[request.node.callspec.params["open_store"]].pooled and settings.get_current_profile_name() == "default":
        examples = min(examples, POOLED_EXAMPLES)
    check = settings(
        max_examples=examples, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )(given(corpus=corpora(), data=st.data())(_same_answers))  # a factory: each example opens its own store
    check(open_store)
