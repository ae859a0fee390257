"""Embedded store: the in-memory BM25 keyword index (posting lists) and its place among the caches.

The index is pinned to a brute-force Okapi BM25 over the live, admitted documents (the same
formula as the in-memory store's), and its filters to the SQL filters the store used to rank
FTS5 matches with; the store tests check that it follows the change log like the vector cache.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded.codec import MESSAGE_CODE, NO_EXPIRY_US, TYPE_CODES
from palimpsest.adapters.embedded.keyword_index import (
    KeywordBatch,
    PostingsKeywordIndex,
    document_terms,
    fold_diacritics,
    query_terms,
)
from palimpsest.adapters.embedded.vector_index import NO_CODE, VectorFilter
from palimpsest.domain.model import RecordStatus, RecordType
from palimpsest.domain.search import keyword_score
from palimpsest.domain.sentinel import ANY, AnyType
from palimpsest.domain.text import keyword_terms, word_tokens

from .helpers import E1, NOW, at, ids, message, query, raw, record, seed, thread, write_records_worker

NEVER = int(NO_EXPIRY_US)
FACT = TYPE_CODES[RecordType.FACT]
MEMORY = TYPE_CODES[RecordType.MEMORY]
PREFERENCE = TYPE_CODES[RecordType.PREFERENCE]
GUIDELINE = TYPE_CODES[RecordType.GUIDELINE]
ALL_TYPES = frozenset(TYPE_CODES.values())
Key = tuple[bool, str]
Opener = Callable[..., EmbeddedStore]
SPAWN = multiprocessing.get_context("spawn")


# --- building blocks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """One indexed document with its filter attributes (what the store reads from a row)."""

    key: Key
    content: str
    user: str | None = "u1"
    agent: str | None = None
    thread: str | None = None
    type_code: int = FACT
    valid: bool = True
    expires: int = NEVER


def rec(rid: str, content: str, **kw: Any) -> Doc:
    return Doc((False, rid), content, **kw)


def msg(mid: str, content: str, **kw: Any) -> Doc:
    return Doc((True, mid), content, type_code=MESSAGE_CODE, **kw)


def batch(docs: Iterable[Doc]) -> KeywordBatch:
    out = KeywordBatch()
    for d in docs:
        out.keys.append(d.key)
        out.users.append(d.user)
        out.agents.append(d.agent)
        out.threads.append(d.thread)
        out.types.append(d.type_code)
        out.valid.append(d.valid)
        out.expires.append(d.expires)
        out.contents.append(d.content)
    return out


def indexed(*docs: Doc) -> PostingsKeywordIndex:
    index = PostingsKeywordIndex(NEVER)
    index.upsert(batch(docs))
    return index


def flt(
    index: PostingsKeywordIndex,
    *,
    types: frozenset[int] = ALL_TYPES,
    now_us: int = 0,
    include_invalid: bool = True,
    user: str | None | AnyType = ANY,
    agent: str | None | AnyType = ANY,
    thread: str | None | AnyType = ANY,
    allowed: frozenset[Key] | None = None,
) -> VectorFilter:
    """A filter in the index's terms, interning agent/thread the way the store does."""
    return VectorFilter(
        type_codes=types,
        now_us=now_us,
        include_invalid=include_invalid,
        user_id=user,
        agent_code=None if isinstance(agent, AnyType) else index.code(agent),
        thread_code=None if isinstance(thread, AnyType) else index.code(thread),
        allowed=allowed,
    )


def idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def brute_force(
    docs: dict[Key, Doc], text: str, f: VectorFilter, agent: Any, thread: Any, limit: int
) -> list[tuple[float, int, str]]:
    """Okapi BM25 (k1 1.2, b 0.75) written out: statistics over every live document, scores
    for the admitted ones, ordered by score, type code, id: what the index must return."""
    k1, b = 1.2, 0.75
    counted = {key: Counter(fold_diacritics(t) for t in word_tokens(d.content)) for key, d in docs.items()}
    n = len(counted)
    avg_len = sum(sum(c.values()) for c in counted.values()) / n if n else 0.0
    avg_len = avg_len or 1.0
    terms = list(dict.fromkeys(fold_diacritics(t) for t in keyword_terms(text)))
    df = {t: sum(1 for c in counted.values() if t in c) for t in terms}
    found = []
    for key, d in docs.items():
        admitted = (
            d.type_code in f.type_codes
            and (isinstance(f.user_id, AnyType) or d.user == f.user_id)
            and (isinstance(agent, AnyType) or d.agent == agent)
            and (isinstance(thread, AnyType) or d.thread == thread)
            and (f.include_invalid or d.valid)
            and d.expires > f.now_us
            and (f.allowed is None or key in f.allowed)
        )
        if not admitted:
            continue
        counts = counted[key]
        length = sum(counts.values())
        score = 0.0
        for t in terms:
            tf = counts.get(t, 0)
            if tf:
                score += idf(n, df[t]) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))
        if score > 0:
            found.append((-score, d.type_code, key[1]))
    return sorted(found)[:limit]


def search(index: PostingsKeywordIndex, text: str, limit: int = 100, **kw: Any) -> list[str]:
    return [rid for _score, _code, rid in index.search(text, flt(index, **kw), limit)]


# --- the index -----------------------------------------------------------------------------------------


def test_scores_are_okapi_bm25_over_the_whole_collection_of_records_and_messages() -> None:
    docs = [
        rec("r1", "green tea with lemon"),
        rec("r2", "black coffee"),
        msg("m1", "shall we have tea, tea or coffee"),
        rec("r3", "lemon", user="u2"),
    ]
    index = indexed(*docs)
    assert len(index) == 4
    assert index.total_length == 4 + 2 + 7 + 1
    assert index.average_length == pytest.approx(14 / 4)
    assert index.document_frequency("tea") == 2 and index.document_frequency("lemon") == 2
    found = index.search("tea lemon", flt(index), 10)
    expected = brute_force({d.key: d for d in docs}, "tea lemon", flt(index), ANY, ANY, 10)
    assert found == expected
    assert [rid for *_, rid in found] == ["r1", "r3", "m1"]  # a one-word text weighs its word fully
    # r3 is another user's: a scoped search skips it but the statistics still count it.
    scoped = index.search("tea lemon", flt(index, user="u1"), 10)
    assert scoped == [c for c in found if c[2] != "r3"]


def test_text_without_a_known_term_or_without_words_finds_nothing() -> None:
    index = indexed(rec("r1", "tea"))
    assert index.search("coffee", flt(index), 10) == []
    assert index.search('"*()- ;', flt(index), 10) == []
    assert index.search("tea", flt(index), 0) == []
    assert PostingsKeywordIndex(NEVER).search("tea", flt(index), 10) == []


def test_stop_words_are_searched_only_when_the_text_has_nothing_else() -> None:
    index = indexed(rec("r1", "the tea"), rec("r2", "what about the"))
    assert search(index, "the tea") == ["r1"]
    assert search(index, "what about the") == ["r2", "r1"]  # r2 holds all three


def test_terms_are_the_domains_word_tokens_with_diacritics_folded() -> None:
    index = indexed(rec("cafe", "Café crème at the corner"), rec("snake", "uses snake_case names"))
    assert search(index, "cafe CREME") == ["cafe"]
    assert search(index, "CAFÉ") == ["cafe"]
    assert search(index, "snake_case") == ["snake"]
    assert search(index, "snake") == []
    assert document_terms("Straße CAFÉ") == ["straße", "cafe"]
    assert query_terms("café cafe the") == ["cafe"]
    assert fold_diacritics("naïve") == "naive" and fold_diacritics("tea") == "tea"


def test_replacing_a_document_with_new_text_replaces_its_terms_and_statistics() -> None:
    index = indexed(rec("r1", "green tea"), rec("r2", "tea"))
    index.upsert(batch([rec("r1", "black coffee with milk")]))
    assert search(index, "green") == []
    assert search(index, "coffee") == ["r1"]
    assert index.document_frequency("tea") == 1 and index.document_frequency("green") == 0
    assert index.total_length == 4 + 1 and len(index) == 2


def test_an_update_that_keeps_the_text_changes_attributes_in_place() -> None:
    others = [rec(f"other{i}", "coffee") for i in range(4)]
    index = indexed(rec("r1", "green tea"), rec("r2", "tea leaves"), *others)
    index.upsert(batch([rec("r1", "tea green", valid=False)]))  # same terms, other order
    assert (
        index._partitions[("u1", False)].dead == 0 and index._partitions[("u1", False)].size == 6
    )  # no new row
    assert search(index, "tea", include_invalid=False) == ["r2"]
    assert set(search(index, "tea")) == {"r1", "r2"}
    index.upsert(batch([rec("r1", "tea green tea", valid=False)]))  # a frequency changed
    assert index._partitions[("u1", False)].dead == 1 and index._partitions[("u1", False)].size == 7
    assert index.document_frequency("tea") == 2 and index.total_length == 3 + 2 + 4


def test_a_document_moving_to_another_user_leaves_its_old_partition() -> None:
    index = indexed(rec("r1", "tea"), rec("r2", "tea", user="u2"))
    index.upsert(batch([rec("r1", "tea", user="u2")]))
    assert index.partition_sizes() == {"u2": 2}
    assert search(index, "tea", user="u1") == []
    assert search(index, "tea", user="u2") == ["r1", "r2"]


def test_removal_keeps_document_frequencies_and_lengths_of_live_documents_only() -> None:
    index = indexed(rec("r1", "tea tea tea"), rec("r2", "tea"), msg("m1", "coffee now"))
    index.remove([(False, "r1"), (False, "unknown"), (True, "r2")])  # unknown keys are ignored
    assert len(index) == 2 and index.total_length == 1 + 2
    assert index.document_frequency("tea") == 1
    assert index.average_length == pytest.approx(1.5)
    docs = {d.key: d for d in (rec("r2", "tea"), msg("m1", "coffee now"))}
    assert index.search("tea coffee", flt(index), 10) == brute_force(
        docs, "tea coffee", flt(index), ANY, ANY, 10
    )
    index.remove([(False, "r2"), (True, "m1")])
    assert len(index) == 0 and index.partition_sizes() == {} and index.average_length == 1.0
    assert index.search("tea", flt(index), 10) == []


def test_records_and_messages_are_separate_id_spaces() -> None:
    index = indexed(rec("same", "tea"), msg("same", "tea"))
    assert len(index) == 2
    assert [c[1:] for c in index.search("tea", flt(index), 10)] == [(FACT, "same"), (MESSAGE_CODE, "same")]
    index.remove([(True, "same")])
    assert [c[1:] for c in index.search("tea", flt(index), 10)] == [(FACT, "same")]


def test_a_partition_compacts_when_dead_rows_exceed_a_quarter_and_keeps_answering_exactly() -> None:
    docs = {d.key: d for d in (rec(f"r{i:02d}", f"tea number {i % 3} " + "x " * (i % 4)) for i in range(40))}
    index = indexed(*docs.values())
    partition = index._partitions[("u1", False)]
    doomed = [key for i, key in enumerate(docs) if i % 4 == 0][:10]  # exactly a quarter: no compaction
    index.remove(doomed)
    for key in doomed:
        del docs[key]
    assert index._partitions[("u1", False)].dead == 10
    index.remove([(False, "r01")])
    del docs[(False, "r01")]
    assert index._partitions[("u1", False)] is partition and partition.dead == 0 and partition.size == 29
    for text in ("tea", "number 1", "x tea 2"):
        assert index.search(text, flt(index), 7) == brute_force(docs, text, flt(index), ANY, ANY, 7)
    index.upsert(batch([rec("new", "tea x x")]))  # rows appended after compaction are found
    docs[(False, "new")] = rec("new", "tea x x")
    assert index.search("x", flt(index), 50) == brute_force(docs, "x", flt(index), ANY, ANY, 50)


def test_filters_type_validity_and_expiry() -> None:
    index = indexed(
        rec("fact", "tea"),
        rec("pref", "tea", type_code=PREFERENCE),
        rec("stale", "tea", valid=False),
        rec("soon", "tea", expires=100),
        msg("m", "tea"),
    )
    assert set(search(index, "tea")) == {"fact", "pref", "stale", "soon", "m"}
    assert set(search(index, "tea", types=frozenset({PREFERENCE, MESSAGE_CODE}))) == {"pref", "m"}
    assert set(search(index, "tea", include_invalid=False)) == {"fact", "pref", "soon", "m"}
    assert set(search(index, "tea", now_us=99)) == {"fact", "pref", "stale", "soon", "m"}
    assert set(search(index, "tea", now_us=100)) == {"fact", "pref", "stale", "m"}  # expires_at > now


def test_user_scope_with_any_and_none_and_agent_thread_with_null() -> None:
    index = indexed(
        rec("u1-plain", "tea"),
        rec("u1-bot", "tea", agent="bot", thread="t1"),
        rec("nobody", "tea", user=None),
        rec("u2", "tea", user="u2", agent="bot"),
    )
    assert set(search(index, "tea", user=ANY)) == {"u1-plain", "u1-bot", "nobody", "u2"}
    assert search(index, "tea", user=None) == ["nobody"]
    assert search(index, "tea", user="u3") == []
    assert search(index, "tea", user="u1", agent=None) == ["u1-plain"]
    assert set(search(index, "tea", agent="bot")) == {"u1-bot", "u2"}
    assert search(index, "tea", thread="t1") == ["u1-bot"]
    assert set(search(index, "tea", thread=None)) == {"u1-plain", "nobody", "u2"}
    assert index.code("never seen") == NO_CODE
    assert search(index, "tea", agent="never seen") == []


def test_the_allowed_keys_of_a_metadata_prefilter_narrow_the_candidates() -> None:
    index = indexed(rec("a", "tea"), rec("b", "tea", user="u2"), msg("a", "tea"))
    assert search(index, "tea", allowed=frozenset({(False, "a"), (False, "gone")})) == ["a"]
    assert search(index, "tea", allowed=frozenset({(True, "a"), (False, "b")})) == ["b", "a"]
    assert search(index, "tea", allowed=frozenset()) == []


def test_ties_are_ordered_by_type_code_then_id_also_at_the_cut() -> None:
    docs = [
        msg("a-message", "tea", user="u9"),
        rec("z", "tea", type_code=GUIDELINE),
        rec("y", "tea", user="u2"),
        rec("x", "tea", type_code=PREFERENCE, user=None),
        rec("w", "tea", type_code=MEMORY, user="u3"),
        rec("v", "tea"),
    ]
    index = indexed(*docs)
    assert FACT < GUIDELINE < MEMORY < MESSAGE_CODE < PREFERENCE  # codes follow the type names
    assert search(index, "tea") == ["v", "y", "z", "w", "a-message", "x"]
    for limit in range(1, 7):
        assert search(index, "tea", limit) == ["v", "y", "z", "w", "a-message", "x"][:limit]
    # Many ties inside one partition: the cut keeps the first by type, then id.
    many = indexed(*(rec(f"r{i:03d}", "tea", type_code=(FACT, MEMORY)[i % 2]) for i in range(300)))
    expected = [f"r{i:03d}" for i in range(0, 300, 2)] + [f"r{i:03d}" for i in range(1, 300, 2)]
    for limit in (1, 5, 149, 150, 151, 299, 300, 301):
        assert search(many, "tea", limit) == expected[:limit]


def test_ties_at_the_cut_are_broken_by_the_whole_id_whatever_its_first_bytes() -> None:
    # Ids sharing their first 8 bytes, ids shorter than 8 bytes, multi-byte characters cut by
    # the 8-byte prefix: the order must be Python's string order all the same.
    names = [f"same-prefix-{i:03d}" for i in range(0, 120, 3)]
    names += [f"same-prefiy-{i}" for i in range(5)] + ["same-pre", "same-pr", "s", "same-prefix"]
    names += [f"caf\u00e9-{i:02d}" for i in range(20)] + [f"cafe\u0301{i}" for i in range(5)]
    names += [f"\u20ac\u20ac\u20ac{i}" for i in range(12)] + [f"\u20ac\u20ac\u20ab{i}" for i in range(3)]
    names += [f"\U0001f375tea{i}" for i in range(6)] + [f"zz{i}" for i in range(10)] + ["a", "ab", "abc"]
    shuffled = sorted(names, key=lambda n: hash((n, "shuffle")))
    docs = [
        rec(name, "tea", type_code=(FACT, MEMORY)[i % 3 == 0], user="u0" if i % 2 else f"u{i % 20}")
        for i, name in enumerate(shuffled)
    ]
    index = PostingsKeywordIndex(NEVER)
    index.BULK_MIN_DOCUMENTS = 10_000  # appended one by one, then in bulk
    index.upsert(batch(docs[:40]))
    index.BULK_MIN_DOCUMENTS = 1
    index.upsert(batch(docs[40:]))
    live = {d.key: d for d in docs}
    assert len(index._partitions) > 8
    for user in ("u0", ANY):  # one partition; many, ranked together
        f = flt(index, user=user)
        for limit in (1, 2, 7, 30, 31, 60, 200):
            assert index.search("tea", f, limit) == brute_force(live, "tea", f, ANY, ANY, limit)
    index.remove([d.key for d in docs[::2]])  # compaction renumbers the rows
    live = {d.key: d for d in docs[1::2]}
    for user in ("u0", ANY):
        f = flt(index, user=user)
        for limit in (1, 5, 20, 100):
            assert index.search("tea", f, limit) == brute_force(live, "tea", f, ANY, ANY, limit)


def test_idf_sum_adds_the_idf_of_every_query_term_absent_ones_included() -> None:
    index = indexed(rec("r1", "green tea"), rec("r2", "tea"), rec("r3", "coffee"))
    assert index.idf("tea") == pytest.approx(idf(3, 2))
    assert index.idf_sum("tea unheard") == pytest.approx(idf(3, 2) + idf(3, 0))
    assert index.idf_sum("the TEA, tea and Green") == pytest.approx(idf(3, 2) + idf(3, 1))  # stop words out
    assert index.idf_sum("the") == pytest.approx(idf(3, 0))  # only stop words: they are the terms
    assert index.idf_sum("") == 0.0
    assert PostingsKeywordIndex(NEVER).idf_sum("tea") == pytest.approx(math.log(2))


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize("consolidate", [False, True])
def test_bulk_and_one_by_one_appends_build_the_same_index(bulk: bool, consolidate: bool) -> None:
    docs = [
        (rec if i % 3 else msg)(f"d{i}", f"tea {'milk ' * (i % 5)}number {i % 7}", user=f"u{i % 3}")
        for i in range(200)
    ]
    index = PostingsKeywordIndex(NEVER)
    index.BULK_MIN_DOCUMENTS = 1 if bulk else 10_000
    index.CONSOLIDATE_MIN_POSTINGS = 0 if consolidate else 10_000
    index.upsert(batch(docs[:150]))
    index.upsert(batch(docs[150:170]))
    index.upsert(batch(docs[170:]))
    partition = index._partitions[("u1", False)]
    if consolidate:  # tails that outgrew the base were merged into it
        assert 0 < partition.tail_count <= len(partition.base_rows)
    elif bulk:  # the first batch made a new partition's base, the later ones are tails
        assert len(partition.base_rows) > 0 and partition.tail_count > 0
    else:
        assert len(partition.base_rows) == 0 and partition.tail_count > 0
    index.remove([d.key for d in docs[:40]])
    live = {d.key: d for d in docs[40:]}
    for text in ("tea", "milk number 3", "number"):
        for user in (ANY, "u1"):
            f = flt(index, user=user)
            assert index.search(text, f, 30) == brute_force(live, text, f, ANY, ANY, 30)


def test_rare_terms_in_a_large_partition_are_summed_sparsely_and_exactly() -> None:
    # Few postings against many rows take the sort-based sum instead of a dense array.
    rare = ["tea milk", "tea", "milk sugar tea", "sugar", "milk milk", "tea tea sugar milk"]
    docs = [rec(f"rare{i}", text) for i, text in enumerate(rare)]
    docs += [rec(f"filler{i:04d}", f"filler words {i % 13}") for i in range(2_000)]
    docs += [rec(f"other{i}", "tea milk sugar", user="u2") for i in range(3)]
    index = indexed(*docs)
    live = {d.key: d for d in docs}
    for text in ("tea milk sugar", "milk tea", "sugar 7 tea"):
        for limit in (1, 3, 10):
            f = flt(index, user="u1")
            assert index.search(text, f, limit) == brute_force(live, text, f, ANY, ANY, limit)


def test_an_unscoped_search_over_many_partitions_matches_brute_force() -> None:
    docs = [
        (rec if i % 4 else msg)(f"d{i:04d}", f"{'tea ' * (i % 3)}note {i % 5}", user=f"u{i % 50}")
        for i in range(600)
    ]
    index = indexed(*docs)
    index.remove([d.key for d in docs[::7]])
    live = {d.key: d for i, d in enumerate(docs) if i % 7}
    some = frozenset(d.key for i, d in enumerate(docs) if i % 3 == 0)
    for text in ("tea note", "note 3", "tea"):
        for limit in (1, 10, 100):
            for f in (
                flt(index),
                flt(index, include_invalid=False, types=frozenset({FACT, MESSAGE_CODE})),
                flt(index, types=frozenset({MESSAGE_CODE})),
                flt(index, allowed=some),
            ):
                assert index.search(text, f, limit) == brute_force(live, text, f, ANY, ANY, limit)


# --- the property: the index equals a brute-force BM25 ------------------------------------------------

WORDS = ["tea", "coffee", "milk", "café", "cafe", "rome", "the", "and", "x", "snake_case", "Tea"]
USERS = [None, "u1", "u2"]
AGENTS = [None, "a1", "a2"]
THREADS = [None, "t1"]
RECORD_KEYS = [(False, f"k{i}") for i in range(6)]
MESSAGE_KEYS = [(True, f"k{i}") for i in range(4)]


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    key = draw(st.sampled_from(RECORD_KEYS + MESSAGE_KEYS))
    words = draw(st.lists(st.sampled_from(WORDS), max_size=8))
    message_key = key[0]
    return Doc(
        key=key,
        content=" ".join(words) + draw(st.sampled_from(["", ".", " !"])),
        user=draw(st.sampled_from(USERS)),
        agent=draw(st.sampled_from(AGENTS)),
        thread=draw(st.sampled_from(THREADS)),
        type_code=MESSAGE_CODE
        if message_key
        else draw(st.sampled_from([FACT, MEMORY, PREFERENCE, GUIDELINE])),
        valid=True if message_key else draw(st.booleans()),
        expires=draw(st.sampled_from([NEVER, 100, 200])),
    )


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("upsert"), st.lists(documents(), min_size=1, max_size=8, unique_by=lambda d: d.key)
        ),
        st.tuples(st.just("remove"), st.lists(st.sampled_from(RECORD_KEYS + MESSAGE_KEYS), max_size=4)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(
    ops=operations,
    bulk_min=st.sampled_from([1, 3, 64]),
    consolidate_min=st.sampled_from([0, 5, 4_096]),
    queries=st.lists(
        st.tuples(
            st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=4),
            st.sets(st.sampled_from(sorted(ALL_TYPES)), min_size=1),
            st.sampled_from([0, 150, 250]),
            st.booleans(),
            st.sampled_from([ANY, *USERS, "u3"]),
            st.sampled_from([ANY, *AGENTS, "a9"]),
            st.sampled_from([ANY, *THREADS]),
            st.one_of(st.none(), st.sets(st.sampled_from(RECORD_KEYS + MESSAGE_KEYS))),
            st.integers(1, 12),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_the_index_ranks_like_a_brute_force_bm25_over_live_admitted_documents(
    ops: list[tuple[str, Any]], bulk_min: int, consolidate_min: int, queries: list[tuple[Any, ...]]
) -> None:
    index = PostingsKeywordIndex(NEVER)
    index.BULK_MIN_DOCUMENTS = bulk_min
    index.CONSOLIDATE_MIN_POSTINGS = consolidate_min
    live: dict[Key, Doc] = {}
    for op, payload in ops:
        if op == "upsert":
            index.upsert(batch(payload))
            live.update((d.key, d) for d in payload)
        else:
            index.remove(payload)
            for key in payload:
                live.pop(key, None)
        assert len(index) == len(live)
        assert index.total_length == sum(len(word_tokens(d.content)) for d in live.values())
    for words, types, now_us, include_invalid, user, agent, thread_id, allowed, limit in queries:
        text = " ".join(words)
        f = flt(
            index,
            types=frozenset(types),
            now_us=now_us,
            include_invalid=include_invalid,
            user=user,
            agent=agent,
            thread=thread_id,
            allowed=None if allowed is None else frozenset(allowed),
        )
        assert index.search(text, f, limit) == brute_force(live, text, f, agent, thread_id, limit)
    for term in {fold_diacritics(w.lower()) for w in WORDS}:
        assert index.document_frequency(term) == sum(
            1 for d in live.values() if term in document_terms(d.content)
        )


# --- the store: a cache kept in step with the file ----------------------------------------------------


def test_keyword_search_works_on_a_store_without_vectors(open_store: Opener) -> None:
    store = open_store(dimension=None)
    seed(
        store,
        threads=[thread("t1")],
        messages=[(message("m1", "t1", 1, "tea time"), None)],
        records=[(record("r1", "green tea"), None), (record("r2", "coffee"), None)],
    )
    assert store.dimension is None and len(store._vectors) == 0
    assert set(ids(store.search(query(text="tea")))) == {"m1", "r1"}
    assert len(store._keywords) == 3


def test_keyword_only_scores_are_the_bm25_relevance_of_the_index_over_the_ideal(store: EmbeddedStore) -> None:
    texts = {"r1": "green tea", "r2": "tea tea with milk", "r3": "milk with honey and a slice of lemon"}
    seed(store, records=[(record(rid, text), None) for rid, text in texts.items()])
    hits = store.search(query(text="tea green"))
    docs = {d.key: d for d in (rec(rid, text, user=None) for rid, text in texts.items())}
    index = PostingsKeywordIndex(NEVER)
    expected = brute_force(docs, "tea green", flt(index), ANY, ANY, 10)
    # The one score convention: raw relevance (-bm25) over the query's ideal relevance (the sum
    # of its terms' idf over the collection), clipped to [0, 1].
    ideal = idf(3, 2) + idf(3, 1)
    assert ideal == pytest.approx(store._keywords.idf_sum("tea green"))
    assert [(h.id, h.score) for h in hits] == [
        (rid, pytest.approx(keyword_score(-bm25, ideal))) for bm25, _, rid in expected
    ]
    assert [h.id for h in hits] == ["r1", "r2"]
    assert hits[0].score == 1.0 and 0.0 < hits[1].score < 1.0  # r1 outscores the ideal text
    assert all(h.distance == pytest.approx(1.0 - h.score) for h in hits)


def test_a_second_instance_sees_committed_keyword_changes_without_reopening(open_store: Opener) -> None:
    writer, reader = open_store(), open_store()
    assert reader.search(query(text="tea")) == []
    seed(
        writer,
        threads=[thread("t1")],
        messages=[(message("m1", "t1", 1, "tea in the thread"), None)],
        records=[(record("a", "tea note"), None), (record("b", "coffee note"), E1)],
    )
    assert set(ids(reader.search(query(text="tea")))) == {"a", "m1"}
    with writer.unit_of_work() as uow:  # new text: old terms go, new ones come
        uow.records.update(record("a", "herbal infusion"))
        uow.commit()
    assert ids(reader.search(query(text="tea"))) == ["m1"]
    assert ids(reader.search(query(text="infusion"))) == ["a"]
    with writer.unit_of_work() as uow:  # same text, new status: filtered, not re-indexed
        stale = replace(
            record("b", "coffee note"),
            status=RecordStatus.INVALID,
            invalidated_at=NOW,
            invalidation_reason="Superseded by another memory.",
        )
        uow.records.update(stale)
        uow.commit()
    assert ids(reader.search(query(text="coffee"))) == ["b"]
    assert reader.search(query(text="coffee", include_invalid=False)) == []
    with writer.unit_of_work() as uow:  # a cascade: the thread's messages go with it
        uow.threads.delete("t1")
        uow.records.delete("b")
        uow.commit()
    assert reader.search(query(text="tea coffee")) == []
    assert ids(reader.search(query(text="note infusion"))) == ["a"]
    assert len(reader._keywords) == len(writer._keywords) == 1


def test_a_second_process_writing_is_seen_by_keyword_search(store: EmbeddedStore, path: Path) -> None:
    seed(store, records=[(record("mine", "written here"), None)])
    child = SPAWN.Process(target=write_records_worker, args=(str(path), "theirs", 20, 0.01))
    child.start()
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 20 and time.monotonic() < deadline:
            seen = {i for i in ids(store.search(query(text="written theirs"))) if i.startswith("theirs")}
            # Every answer is a consistent snapshot: the other process commits in order.
            assert seen == {f"theirs{i:04d}" for i in range(len(seen))}
            time.sleep(0.01)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert len(seen) == 20
    assert ids(store.search(query(text="here"))) == ["mine"]


def test_an_instance_that_fell_behind_a_pruned_change_log_rebuilds_its_keyword_index(
    open_store: Opener, path: Path
) -> None:
    writer, reader = open_store(), open_store()
    writer.CHANGES_KEEP = 3
    writer._PRUNE_EVERY = 1
    assert reader.search(query(text="entry")) == []
    for i in range(12):
        seed(writer, records=[(record(f"r{i:02d}", f"entry {i}"), None)])
    with writer.unit_of_work() as uow:
        uow.records.delete("r00")
        uow.commit()
    with raw(path) as conn:
        assert int(conn.execute("SELECT value FROM meta WHERE key = 'changes_floor'").fetchone()[0]) > 0
    assert ids(reader.search(query(text="entry"))) == [f"r{i:02d}" for i in range(1, 12)]
    assert ids(reader.search(query(text="7"))) == ["r07"]


def test_a_rolled_back_write_never_reaches_the_keyword_index(store: EmbeddedStore) -> None:
    seed(store, records=[(record("kept", "old note"), None)])
    with store.unit_of_work() as uow:
        uow.records.add(record("ghost", "phantom note"))
        uow.records.delete("kept")
    assert ids(store.search(query(text="note"))) == ["kept"]
    assert store._keywords.document_frequency("phantom") == 0


# --- the store: the index admits what the SQL filters admitted -----------------------------------------

SCOPES = [None, "u1", "u2"]


@st.composite
def stored_rows(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """Records and messages with random scopes, types, status, expiry, metadata and text."""
    text = st.lists(st.sampled_from(["tea", "coffee", "milk", "rome", "the"]), min_size=1, max_size=5)
    records = []
    for i in range(draw(st.integers(0, 10))):
        status = draw(st.sampled_from([RecordStatus.VALID, RecordStatus.INVALID]))
        extra: dict[str, Any] = {}
        if status is RecordStatus.INVALID:
            extra = {"invalidated_at": NOW, "invalidation_reason": "Superseded by another memory."}
        records.append(
            record(
                f"r{i}",
                " ".join(draw(text)),
                record_type=draw(
                    st.sampled_from(list(RecordType.__members__.values())).filter(lambda t: t.is_memory_like)
                ),
                user_id=draw(st.sampled_from(SCOPES)),
                agent_id=draw(st.sampled_from(SCOPES)),
                thread_id=draw(st.sampled_from([None, "t1"])),
                expires_at=draw(st.sampled_from([None, at(-5), at(5)])),
                metadata={"topic": draw(st.sampled_from(["a", "b"]))},
                status=status,
                **extra,
            )
        )
    messages = [
        message(
            f"m{i}",
            "t1",
            i + 1,
            " ".join(draw(text)),
            user_id=draw(st.sampled_from(SCOPES)),
            agent_id=draw(st.sampled_from(SCOPES)),
            expires_at=draw(st.sampled_from([None, at(-5), at(5)])),
            metadata={"topic": draw(st.sampled_from(["a", "b"]))},
        )
        for i in range(draw(st.integers(0, 6)))
    ]
    return records, messages


@settings(max_examples=40, deadline=None)
@given(
    rows=stored_rows(),
    text=st.sampled_from(["tea", "coffee milk", "rome the", "the"]),
    user=st.sampled_from([ANY, *SCOPES]),
    agent=st.sampled_from([ANY, *SCOPES]),
    thread_id=st.sampled_from([ANY, None, "t1"]),
    types=st.sets(st.sampled_from(["memory", "fact", "preference", "guideline", "message"]), min_size=1),
    include_invalid=st.booleans(),
    metadata=st.sampled_from([None, {"topic": "a"}]),
)
def test_the_keyword_candidates_are_the_rows_the_sql_filters_admit(
    tmp_path_factory: pytest.TempPathFactory,
    rows: tuple[list[Any], list[Any]],
    text: str,
    user: Any,
    agent: Any,
    thread_id: Any,
    types: set[str],
    include_invalid: bool,
    metadata: dict[str, str] | None,
) -> None:
    records, messages = rows
    path = tmp_path_factory.mktemp("kw") / "memory.db"
    with EmbeddedStore(path, dimension=4) as store:
        seed(
            store,
            threads=[thread("t1")],
            messages=[(m, None) for m in messages],
            records=[(r, None) for r in records],
        )
        q = query(
            text=text,
            k=1000,
            user_id=user,
            agent_id=agent,
            thread_id=thread_id,
            record_types=types,
            include_invalid=include_invalid,
            metadata_filter=metadata,
        )
        terms = set(keyword_terms(text))
        expected: set[tuple[bool, str]] = set()
        with store._reading() as conn:
            for table, alias, is_message in (("records", "r", False), ("messages", "m", True)):
                where = store._sql_filter(alias, q, message=is_message)
                if where is None:
                    continue
                sql, params = where
                for row_id, content in conn.execute(
                    f"SELECT {alias}.id, {alias}.content FROM {table} AS {alias} WHERE {sql}", params
                ):
                    if terms & set(word_tokens(content)):
                        expected.add((is_message, row_id))
        hits = store.search(q)
        assert {(hit.record.record_type is RecordType.MESSAGE, hit.id) for hit in hits} == expected
