"""Opening by a rebuild from the tables: batch by batch, the caches answer exactly as those that
followed every commit, and hold the same state whatever the batch size.

The reference for "exactly" is the store that wrote the rows: its caches were kept current by
replaying the change log after each commit (rows appended, replaced, deleted, moved between
partitions), never rebuilt. The rebuilt store reads the tables ``REBUILD_BATCH_ROWS`` rows at a
time; a small batch size makes every partition span several batches.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.keyword_index import KeywordBatch, PostingsKeywordIndex
from palimpsest.adapters.embedded.vector_index import _Partition, slack
from palimpsest.domain.model import RecordStatus, RecordType
from palimpsest.domain.search import ScopeFilter, SearchQuery
from palimpsest.domain.sentinel import ANY

from .helpers import NOW, answers, at, link, message, record, thread

DIM = 6
USERS = ("alice", "bob", "carol", None)
TYPES = (RecordType.FACT, RecordType.PREFERENCE, RecordType.MEMORY, RecordType.GUIDELINE)
WORDS = "apple banana cherry delta echo falcon grape harbor island jungle kettle lemon Café crème".split()
SPEAKERS = ("Ann", "Bo", None)


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIM)]


def text(rng: random.Random) -> str:
    # Some documents share a word many times, some have a word of their own, a few have none.
    if rng.random() < 0.03:
        return "!!"
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 7))]
    if rng.random() < 0.2:
        words.append(f"rare{rng.randint(0, 10_000)}")
    return " ".join(words)


def write(store: EmbeddedStore, rng: random.Random) -> None:
    """Several commits of records (every type, some invalid, expiring, without a vector, in
    agent and thread scopes), named and unnamed messages in threads, links, then updates,
    deletes and ids re-added under another user: what the writer's caches replay."""
    ids: list[str] = []
    with store.unit_of_work() as uow:
        uow.threads.add(thread("t-a", user_id="alice"))
        uow.threads.add(thread("t-b", user_id="bob"))
        uow.commit()
    for start in range(0, 240, 60):
        with store.unit_of_work() as uow:
            for i in range(start, start + 60):
                rid = f"r{i:04d}"
                uow.records.add(
                    record(
                        rid,
                        text(rng),
                        user_id=USERS[i % 4],
                        agent_id=rng.choice((None, "agent-1", "agent-2")),
                        thread_id=rng.choice((None, None, "t-a", "t-b")),
                        record_type=rng.choice(TYPES),
                        status=RecordStatus.INVALID if i % 11 == 0 else RecordStatus.VALID,
                        expires_at=at(60 * 24 * 365) if i % 7 == 0 else None,
                    ),
                    embedding=vector(rng) if i % 5 else None,
                )
                ids.append(rid)
            thread_id = f"t{start}"
            uow.threads.add(thread(thread_id, user_id=rng.choice(("alice", "bob"))))
            for seq in range(1, 9):
                speaker = rng.choice(SPEAKERS)
                uow.messages.add(
                    message(
                        f"m{start}-{seq}",
                        thread_id,
                        seq,
                        text(rng),
                        user_id="alice" if seq % 3 else "bob",
                        metadata={} if speaker is None else {"speaker": speaker},
                    ),
                    embedding=vector(rng) if seq % 4 else None,
                )
            uow.commit()
    with store.unit_of_work() as uow:
        for j in range(50):
            uow.links.add(link(f"l{j}", ids[j], ids[(7 * j + 31) % len(ids)]))
        uow.commit()
    with store.unit_of_work() as uow:
        for rid in ids[100:130]:
            uow.records.delete(rid)
        for i, rid in enumerate(ids[130:170]):  # new text, vector, status or owner
            old = uow.records.get(rid)
            assert old is not None
            changed = replace(
                old,
                content=text(rng) if i % 2 else old.content,
                status=RecordStatus.INVALID if i % 3 == 0 else old.status,
                updated_at=at(1),
            )
            if i % 5:
                uow.records.update(changed, embedding=vector(rng) if i % 4 else None)
            else:  # the same id under another user: it moves to another partition
                uow.records.delete(rid)
                uow.records.add(replace(changed, user_id="dave", thread_id=None), embedding=vector(rng))
        uow.commit()


def queries(rng: random.Random) -> list[SearchQuery]:
    found = []
    for user in (*USERS, "dave", ANY):
        scope = ScopeFilter(user_id=user)
        for hops in (0, 2):
            found.append(
                SearchQuery(
                    k=12,
                    now=NOW,
                    vector=tuple(vector(rng)),
                    scope=scope,
                    num_hops=hops,
                    include_invalid=False,
                )
            )
            found.append(
                SearchQuery(k=12, now=NOW, text=text(rng), scope=scope, num_hops=hops, include_invalid=False)
            )
            found.append(
                SearchQuery(
                    k=12,
                    now=NOW,
                    text=text(rng),
                    vector=tuple(vector(rng)),
                    scope=scope,
                    include_invalid=True,
                )
            )
    found.append(SearchQuery(k=30, now=NOW, text=" ".join(WORDS), scope=ScopeFilter(user_id=ANY), num_hops=1))
    found.append(
        SearchQuery(k=10, now=NOW, text="apple cafe", scope=ScopeFilter(user_id=ANY, agent_id="agent-1"))
    )
    found.append(
        SearchQuery(k=10, now=NOW, vector=tuple(vector(rng)), scope=ScopeFilter(user_id=ANY, thread_id="t-a"))
    )
    found.append(
        SearchQuery(
            k=10,
            now=at(60 * 24 * 400),
            text="banana",
            vector=tuple(vector(rng)),
            scope=ScopeFilter(user_id=ANY),
        )
    )
    found.append(
        SearchQuery(
            k=10,
            now=NOW,
            text="grape lemon",
            record_types=frozenset({RecordType.MESSAGE}),
            scope=ScopeFilter(),
        )
    )
    return found


def counters(store: EmbeddedStore, index: str) -> dict[object, tuple[int, int, int]]:
    """Per partition: live rows, and the live rows that are invalid or expire."""
    partitions = getattr(store, index)._partitions
    return {scope: (p.live, p.invalid, p.expiring) for scope, p in partitions.items()}


@pytest.fixture
def written(tmp_path: Path) -> Iterator[tuple[EmbeddedStore, Path]]:
    path = tmp_path / "store.db"
    store = EmbeddedStore(path, dimension=DIM)
    write(store, random.Random(5))
    try:
        yield store, path
    finally:
        store.close()


def rebuilt(path: Path, batch: int, monkeypatch: pytest.MonkeyPatch) -> EmbeddedStore:
    monkeypatch.setattr(EmbeddedStore, "REBUILD_BATCH_ROWS", batch)
    store = EmbeddedStore(path)
    assert store._snapshot_seq is None  # no snapshot: the caches come from the tables
    return store


@pytest.mark.parametrize("batch", [1, 7, 64, 100_000])
def test_a_rebuild_answers_as_the_caches_kept_by_every_commit(
    written: tuple[EmbeddedStore, Path], batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, path = written
    requests = queries(random.Random(11))
    with rebuilt(path, batch, monkeypatch) as store:
        expected = answers(writer, requests)
        assert answers(store, requests) == expected
        assert any(linked for found in expected for _id, _score, linked in found)
        mine, theirs = store._keywords, writer._keywords
        assert (len(mine), mine.total_length, mine.average_length) == (
            len(theirs),
            theirs.total_length,
            theirs.average_length,
        )
        vocabulary = {term for term in theirs._terms if term is not None}
        assert {term for term in mine._terms if term is not None} == vocabulary
        for term in vocabulary:
            assert mine.document_frequency(term) == theirs.document_frequency(term)
        for q in requests:
            if q.text is not None:
                assert mine.idf_sum(q.text) == theirs.idf_sum(q.text)
        assert store._attrs == writer._attrs
        assert len(store._vectors) == len(writer._vectors)
        for index in ("_vectors", "_keywords"):
            assert counters(store, index) == counters(writer, index)
            assert getattr(store, index).partition_sizes() == getattr(writer, index).partition_sizes()
        assert store.dimension == writer.dimension == DIM


def test_the_batch_size_changes_nothing_in_the_caches(
    written: tuple[EmbeddedStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row order, vectors, codes, vocabulary and postings of a rebuild in batches of 3 rows are
    those of a rebuild in one batch."""
    _writer, path = written
    with rebuilt(path, 3, monkeypatch) as small, rebuilt(path, 1_000_000, monkeypatch) as whole:
        for index in ("_vectors", "_keywords"):
            mine, theirs = getattr(small, index), getattr(whole, index)
            assert mine._where == theirs._where
            # Agent and thread ids are numbered in the order batches meet them: the same names.
            names, other_names = mine._codes.names(), theirs._codes.names()
            assert sorted(map(str, names)) == sorted(map(str, other_names))
            assert list(mine._partitions) == list(theirs._partitions)
            for scope, partition in mine._partitions.items():
                other = theirs._partitions[scope]
                size = partition.size
                assert partition.ids == other.ids
                assert (partition.dead, partition.expiring, partition.invalid) == (
                    0,
                    other.expiring,
                    other.invalid,
                )
                for column in ("type_code", "valid", "expires", "alive"):
                    assert np.array_equal(getattr(partition, column)[:size], getattr(other, column)[:size])
                for column in ("agent_code", "thread_code"):
                    assert [names[code] for code in getattr(partition, column)[:size].tolist()] == [
                        other_names[code] for code in getattr(other, column)[:size].tolist()
                    ]
                if index == "_vectors":
                    assert np.array_equal(partition.vectors[:size], other.vectors[:size])
                else:
                    for column in ("id_key", "length", "start", "width"):
                        assert np.array_equal(
                            getattr(partition, column)[:size], getattr(other, column)[:size]
                        )
                    assert partition.terms == other.terms and partition.freqs == other.freqs
                    assert not partition.postings  # every posting in the base, none in a tail
                    for base in ("base_terms", "base_offsets", "base_rows", "base_tfs"):
                        assert np.array_equal(getattr(partition, base), getattr(other, base))
        assert small._keywords._terms == whole._keywords._terms
        assert small._keywords._df == whole._keywords._df


def test_a_rebuild_allocates_each_vector_matrix_once(
    written: tuple[EmbeddedStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each partition's matrix is allocated at the size the per-user counts give, never grown
    (a growth copies the matrix and holds it twice meanwhile)."""
    _writer, path = written
    grown: list[int] = []
    resize = _Partition._resize

    def counted(self: _Partition, capacity: int, keep: np.ndarray | None = None) -> None:
        grown.append(capacity)
        resize(self, capacity, keep)

    monkeypatch.setattr(_Partition, "_resize", counted)
    with rebuilt(path, 5, monkeypatch) as store:
        assert grown == []
        for (user, message), partition in store._vectors._partitions.items():
            with store.reading() as uow:
                table = "messages" if message else "records"
                rows = (
                    uow.connection()
                    .execute(f"SELECT count(*) FROM {table} WHERE user_id IS ?", (user,))
                    .fetchone()[0]
                )
            assert partition.vectors.shape[0] == slack(rows)
        # Later partitions start small again; later writes grow the reserved ones as before.
        with store.unit_of_work() as uow:
            uow.records.add(
                record("new-user-row", "apple", user_id="erin"), embedding=vector(random.Random(1))
            )
            uow.commit()
        assert store._vectors._partitions[("erin", False)].vectors.shape[0] == 16


def test_keyword_load_in_batches_builds_the_postings_an_upsert_would() -> None:
    rng = random.Random(3)
    docs = [((i % 9 == 0, f"d{i:03d}"), USERS[i % 4], text(rng)) for i in range(300)]

    def batch(part: list[tuple[tuple[bool, str], str | None, str]]) -> KeywordBatch:
        return KeywordBatch(
            keys=[key for key, _user, _text in part],
            users=[user for _key, user, _text in part],
            agents=[None] * len(part),
            threads=[None] * len(part),
            types=[1] * len(part),
            valid=[True] * len(part),
            expires=[1 << 62] * len(part),
            contents=[content for _key, _user, content in part],
        )

    loaded, upserted = PostingsKeywordIndex(1 << 62), PostingsKeywordIndex(1 << 62)
    for start in range(0, len(docs), 13):
        loaded.load(batch(docs[start : start + 13]))
    loaded.finish_loading()
    upserted.upsert(batch(docs))
    assert loaded._terms == upserted._terms and loaded._df == upserted._df
    assert loaded._where == upserted._where
    for scope, partition in loaded._partitions.items():
        other = upserted._partitions[scope]
        for base in ("base_terms", "base_offsets", "base_rows", "base_tfs"):
            assert np.array_equal(getattr(partition, base), getattr(other, base))
    with pytest.raises(ValueError, match="partitions it created"):
        upserted.load(batch(docs[:1]))
