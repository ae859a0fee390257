"""A hybrid search whose embedder releases the interpreter lock embeds its query on a worker
thread while it reads its keyword candidates: the same results as one after the other, the
embedder's errors as they were, nothing written, and the arguments checked before any embedding."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import AgentMemory, SearchResult
from palimpsest.domain.errors import ModelUnavailableError, StoreClosedError, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import ClientFactory
from .helpers import snapshot

QUERIES = [
    "pizza in Rome",
    "who likes hiking on weekends?",
    "what did the user say about coffee lately",
    "budget for the trip",
    "sourdough",
    "nothing matches this at all",
]


class _Recording(HashingEmbedder):
    """The hashing embedder, recording the thread each query is embedded on; ``fail``: raised
    instead of embedding a query."""

    def __init__(self, fail: Exception | None = None) -> None:
        super().__init__()
        self.fail = fail
        self.query_threads: list[str] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if is_query:
            with self._lock:
                self.query_threads.extend(threading.current_thread().name for _ in texts)
            if self.fail is not None:
                raise self.fail
        return super().embed(texts, is_query=is_query)


class _OffThread(_Recording):
    """Declares that ``embed`` releases the interpreter lock (the ``Embedder`` port's option)."""

    releases_gil = True


def _fill(client: AgentMemory) -> None:
    t1 = client.create_thread(thread_id="t1", user_id="u", agent_id="a")
    t2 = client.create_thread(thread_id="t2", user_id="u", agent_id="b")
    t1.add_messages(
        [
            {"role": "user", "content": "I loved the pizza in Rome, sourdough crust.", "metadata": {"speaker": "Ann"}},
            {"role": "assistant", "content": "Noted: pizza in Rome.", "metadata": {"speaker": "Bot"}},
            {"role": "user", "content": "My budget for the trip is 900 euros.", "metadata": {"speaker": "Ann"}},
        ]
    )
    t2.add_messages([{"role": "user", "content": "We go hiking on weekends and drink black coffee."}])
    client.add_memory("The user likes sourdough pizza.", memory_id="m1", user_id="u", agent_id="a")
    client.add_memory("The user hikes on weekends.", memory_id="m2", user_id="u", memory_type="fact")
    client.add_memory("Trip budget: 900 euros.", memory_id="m3", user_id="u", metadata={"topic": "trip"})
    client.add_memory("Someone else's coffee order.", memory_id="m4", user_id="v")
    client.link_records("m1", "memory", "m3", "memory", "same trip")


def _seen(results: list[SearchResult]) -> list[tuple[Any, ...]]:
    return [(r.id, r.relevance, r.distance, r.formatted_content) for r in results]


SEARCHES: list[dict[str, Any]] = [
    {"user_id": "u"},
    {"user_id": "u", "num_hops": 1},
    {"user_id": "u", "max_results": 2},
    {"user_id": "u", "record_types": ["fact", "message"]},
    {"user_id": "u", "metadata_filter": {"topic": "trip"}},
    {"user_id": "u", "agent_id": "a", "include_invalid_results": False},
    {"user_id": "v"},
]


@pytest.mark.parametrize("options", SEARCHES)
def test_the_overlapped_search_finds_what_the_sequential_one_finds(
    make_client: ClientFactory, options: dict[str, Any]
) -> None:
    inline, off_thread = _Recording(), _OffThread()
    sequential = make_client(embedder=inline)
    _fill(sequential)
    overlapped = make_client(embedder=off_thread)
    for query in QUERIES:
        assert _seen(overlapped.search(query, **options)) == _seen(sequential.search(query, **options)), query
    assert off_thread.query_threads and all(name.startswith("palimpsest-embed") for name in off_thread.query_threads)
    assert inline.query_threads and all(name == threading.current_thread().name for name in inline.query_threads)


def test_a_thread_search_overlaps_too_and_finds_the_same(make_client: ClientFactory) -> None:
    sequential = make_client(embedder=_Recording())
    _fill(sequential)
    overlapped = make_client(embedder=_OffThread())
    for query in QUERIES:
        expected = _seen(sequential.get_thread("t1").search(query))
        assert _seen(overlapped.get_thread("t1").search(query)) == expected


@pytest.mark.parametrize("strategy", ["vector", "keyword"])
def test_only_a_hybrid_search_embeds_off_thread(make_client: ClientFactory, strategy: str) -> None:
    sequential = make_client(embedder=_Recording(), search_strategy=strategy)
    _fill(sequential)
    embedder = _OffThread()
    client = make_client(embedder=embedder, search_strategy=strategy)
    for query in QUERIES:
        assert _seen(client.search(query, user_id="u")) == _seen(sequential.search(query, user_id="u"))
    assert all(name == threading.current_thread().name for name in embedder.query_threads)


def test_concurrent_overlapped_searches_find_what_one_at_a_time_finds(make_client: ClientFactory) -> None:
    sequential = make_client(embedder=_Recording())
    _fill(sequential)
    expected = {q: _seen(sequential.search(q, user_id="u", num_hops=1)) for q in QUERIES}
    client = make_client(embedder=_OffThread())
    jobs = [q for q in QUERIES for _ in range(5)]
    with ThreadPoolExecutor(6) as pool:
        found = list(pool.map(lambda q: (q, _seen(client.search(q, user_id="u", num_hops=1))), jobs))
    assert all(seen == expected[q] for q, seen in found)


@pytest.mark.parametrize("embedder_class", [_Recording, _OffThread])
def test_an_embedder_error_comes_out_as_raised_and_nothing_is_written_or_kept(
    make_client: ClientFactory, store: MemoryStore, embedder_class: type[_Recording]
) -> None:
    _fill(make_client())
    failing = embedder_class(fail=ModelUnavailableError("the embedding service is down"))
    client = make_client(embedder=failing)
    before = snapshot(store)
    with pytest.raises(ModelUnavailableError, match="service is down"):
        client.search("pizza in Rome", user_id="u")
    with pytest.raises(ModelUnavailableError):
        client.get_thread("t1").search("pizza in Rome")
    assert snapshot(store) == before
    failing.fail = None  # the failed query was not kept as a recent one: it is embedded again
    assert client.search("pizza in Rome", user_id="u")
    assert len(failing.query_threads) == 3


def test_an_embedder_error_comes_before_the_store_s_own(make_client: ClientFactory, store: MemoryStore) -> None:
    _fill(make_client())
    failing = _OffThread(fail=ModelUnavailableError("down"))
    client = make_client(embedder=failing)
    working = make_client(embedder=_OffThread())
    store.close()
    with pytest.raises(ModelUnavailableError):  # as when the query was embedded before the store was read
        client.search("pizza", user_id="u")
    with pytest.raises(StoreClosedError):
        working.search("pizza", user_id="u")


@pytest.mark.parametrize("embedder_class", [_Recording, _OffThread])
@pytest.mark.parametrize(
    "bad", [{"num_hops": -1}, {"max_linked_results": -1}, {"record_types": ["no such type"]}, {"metadata_filter": {"t": {"$regex": "a"}}}]
)
def test_bad_arguments_are_refused_before_the_query_is_embedded(
    make_client: ClientFactory, embedder_class: type[_Recording], bad: dict[str, Any]
) -> None:
    embedder = embedder_class()
    client = make_client(embedder=embedder)
    with pytest.raises(ValidationError):
        client.search("pizza", user_id="u", **bad)
    assert embedder.query_threads == []


def test_closing_the_client_stops_the_embedding_workers(make_client: ClientFactory) -> None:
    client = make_client(embedder=_OffThread())
    _fill(client)
    before = set(threading.enumerate())
    client.search("pizza", user_id="u")
    workers = [t for t in threading.enumerate() if t not in before and t.name.startswith("palimpsest-embed")]
    assert workers and all(t.is_alive() for t in workers)
    client.close()
    assert not any(t.is_alive() for t in workers)


class _RecordingSession:
    """Passes a search session's calls through, recording the keyword and neighbour reads."""

    def __init__(self, inner: Any, log: list[tuple[str, Any]]) -> None:
        self._inner = inner
        self._log = log

    def keyword_candidates(self, query: Any, depth: int) -> Any:
        self._log.append(("keyword", (query.text, depth)))
        return self._inner.keyword_candidates(query, depth)

    def message_neighbours(self, message_ids: Sequence[str], radius: int) -> Any:
        self._log.append(("neighbours", tuple(message_ids)))
        return self._inner.message_neighbours(message_ids, radius)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_the_read_ahead_is_not_read_again(
    make_client: ClientFactory, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sequential = make_client(embedder=_Recording())
    _fill(sequential)
    expected = _seen(sequential.search("pizza in Rome", user_id="u"))
    log: list[tuple[str, Any]] = []
    opened = store.searching

    @contextmanager
    def recorded() -> Iterator[Any]:
        with opened() as session:
            yield _RecordingSession(session, log)

    monkeypatch.setattr(store, "searching", recorded)
    client = make_client(embedder=_OffThread())
    assert _seen(client.search("pizza in Rome", user_id="u")) == expected
    assert [entry for entry in log if entry[0] == "keyword"] == [("keyword", ("pizza in Rome", 50))]
    neighbours = [ids for kind, ids in log if kind == "neighbours"]
    assert neighbours and neighbours[0]  # the keyword candidates' messages, read ahead
    later = {i for ids in neighbours[1:] for i in ids}
    assert not later & set(neighbours[0])  # each message's neighbours read once
