"""Embedded adapter: keyword search, BM25 over in-memory posting lists.

:class:`PostingsKeywordIndex` is a private cache of ``EmbeddedStore`` like the vector index (not
an adapter of a port; not exported from the package; ARCHITECTURE.md D5): the store
fills it from SQLite at open and replays the change log into it after commits and before
searches, so it only ever reflects committed rows. It replaced SQLite FTS5, whose ``bm25()``
scores every row matching any query term (2–3 µs each), which made one keyword list cost
11–29 ms on keyword-dense scopes; summing numpy posting lists of the query's terms costs about
a millisecond there. The FTS5 tables themselves were dropped in schema version 6.
"""

from __future__ import annotations

import functools
import heapq
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Final

import numpy as np
from palimpsest.domain.text import BM25_B, BM25_K1, bm25_idf, document_terms, fold_diacritics, query_terms

from .codec import MESSAGE_CODE, TYPE_CODES
from .snapshot import Region, RegionSource, SnapshotError, StringTable, strings_of, strings_region
from .vector_index import (
    NO_CODE,
    Key,
    Placement,
    Scope,
    VectorFilter,
    _Codes,
    count_flags,
    filter_mask,
    partition_entries,
    partition_entry,
    place_restored,
    restore_or_clear,
    restored_codes,
    restored_column,
    select_partitions,
    slack,
)

__all__ = [
    "K1",
    "B",
    "KeywordBatch",
    "KeywordCandidate",
    "PostingsKeywordIndex",
    "document_terms",
    "fold_diacritics",
    "id_keys",
    "query_terms",
]

KeywordCandidate = tuple[float, int, str]
"""(bm25, type code, id): bm25 is lower-is-better (the negated Okapi score, as FTS5's
``bm25()`` was), so these sort best-first as they are: score, then type code, then id."""


# --- in-memory BM25 over posting lists ------------------------------------------------------------

K1: Final = BM25_K1
B: Final = BM25_B
"""Okapi BM25 parameters: the domain's, which the in-memory store uses too."""

_MIN_CAPACITY: Final = 16
_COMPACT_RATIO: Final = 0.25
_RECORD_CODES: Final = frozenset(code for code in TYPE_CODES.values() if code != MESSAGE_CODE)
_TOGETHER_MIN_PARTITIONS: Final = 8
"""Above this many partitions to search, they are ranked together (per-partition numpy calls
would cost more than laying their columns end to end)."""
_DENSE_SHARE: Final = 8
"""Postings of a query are summed into a dense per-row array when they number at least
1/``_DENSE_SHARE`` of the partition's rows (one pass over the rows is then cheaper than the sort
that finding the distinct rows of a sparse set needs)."""


@dataclass(slots=True)
class KeywordBatch:
    """Documents to upsert, column by column, with the filter attributes of their rows."""

    keys: list[Key] = field(default_factory=list)
    users: list[str | None] = field(default_factory=list)
    agents: list[str | None] = field(default_factory=list)
    threads: list[str | None] = field(default_factory=list)
    types: list[int] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    expires: list[int] = field(default_factory=list)
    contents: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)


def id_keys(ids: list[str]) -> np.ndarray:
    """The first 8 bytes of each id's UTF-8 encoding (zero-padded), as big-endian uint64.

    Monotone in the ids' order: ``id_keys(a) < id_keys(b)`` implies ``a < b`` (UTF-8 orders
    like code points), so a numpy selection on the keys decides every tie-break but those
    between ids sharing their first 8 bytes, which are left to a string comparison.
    """
    try:
        packed = np.array(ids, dtype="S8")  # ASCII, truncated and NUL-padded to 8 bytes
    except UnicodeEncodeError:
        packed = np.array([i.encode("utf-8", "surrogatepass")[:8] for i in ids], dtype="S8")
    return packed.view(">u8").astype(np.uint64)


_KW_COLUMNS: Final = (
    "id_key",
    "type_code",
    "agent_code",
    "thread_code",
    "valid",
    "expires",
    "alive",
    "length",
    "start",
    "width",
)


class _KeywordPartition:
    """One user scope's documents: filter columns, a forward index and posting lists.

    Rows are appended; a removed or replaced document only loses its ``alive`` flag (its
    postings stay until :meth:`compact`, and searches mask it out). The forward index (each
    row's distinct term ids and frequencies, flat, from ``start``) is what removal needs to keep
    document frequencies right, and what tells an unchanged text from a changed one.

    Postings live in two places. The *base* is one block sorted by term: ``base_terms`` (sorted
    term ids), ``base_offsets`` into ``base_rows``/``base_tfs``; a term's postings there are
    numpy views, found by binary search, at a few bytes per term. Postings written since are
    *tails*, one ``array('i')`` of (row, frequency) pairs per term: appending is O(1) amortised.
    When the tails hold more postings than the base (or at compaction), :meth:`consolidate`
    merges them into a new base with numpy sorts, so merging costs O(1) per posting amortised,
    and a partition loaded in bulk (the store's rebuild) has no per-term Python object at all.
    A term with a tail is read as base + tail, concatenated once and kept in ``cache`` until
    the tail grows.
    """

    __slots__ = (
        *_KW_COLUMNS,
        "base_offsets",
        "base_rows",
        "base_terms",
        "base_tfs",
        "cache",
        "dead",
        "expiring",
        "freqs",
        "ids",
        "invalid",
        "norm",
        "postings",
        "size",
        "tail_count",
        "terms",
    )

    def __init__(self) -> None:
        self.id_key = np.zeros(_MIN_CAPACITY, dtype=np.uint64)  # see id_keys(): tie-breaks by id
        self.type_code = np.zeros(_MIN_CAPACITY, dtype=np.int8)
        self.agent_code = np.zeros(_MIN_CAPACITY, dtype=np.int32)
        self.thread_code = np.zeros(_MIN_CAPACITY, dtype=np.int32)
        self.valid = np.zeros(_MIN_CAPACITY, dtype=bool)
        self.expires = np.zeros(_MIN_CAPACITY, dtype=np.int64)
        self.alive = np.zeros(_MIN_CAPACITY, dtype=bool)
        self.length = np.zeros(_MIN_CAPACITY, dtype=np.float64)  # tokens, as BM25 reads it
        self.start = np.zeros(_MIN_CAPACITY, dtype=np.int64)  # first forward-index slot ...
        self.width = np.zeros(_MIN_CAPACITY, dtype=np.int32)  # ... and the row's distinct terms
        self.terms = array("i")  # forward index: term ids ...
        self.freqs = array("i")  # ... and their frequencies in the row
        self.base_terms = np.zeros(0, dtype=np.int32)
        self.base_offsets = np.zeros(1, dtype=np.int64)
        self.base_rows = np.zeros(0, dtype=np.int32)
        self.base_tfs = np.zeros(0, dtype=np.int32)
        self.postings: dict[int, array[int]] = {}  # tails: (row, frequency) pairs per term
        self.tail_count = 0  # postings in the tails
        self.cache: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}  # base + tail, tail length
        # (avgdl, K1 * (1 - B + B * length / avgdl) per row): dropped whenever rows change.
        self.norm: tuple[float, np.ndarray] | None = None
        self.ids: list[str] = []
        self.size = 0
        self.dead = 0
        # Live rows that need a mask; at zero the mask pass is skipped entirely.
        self.expiring = 0
        self.invalid = 0

    @property
    def live(self) -> int:
        return self.size - self.dead

    def _resize(self, capacity: int, keep: np.ndarray | None = None) -> None:
        for name in _KW_COLUMNS:
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            if keep is None:
                new[: self.size] = old[: self.size]
            else:
                new[: len(keep)] = old[keep]
            setattr(self, name, new)

    def reserve(self, extra: int) -> None:
        """Amortised growth: capacity doubles, so appends cost O(1) on average."""
        needed = self.size + extra
        if needed > len(self.alive):
            self._resize(max(needed, 2 * len(self.alive)))

    def posting(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's (rows, frequencies), both int32, or ``None`` if no row has it.

        Base-only terms are views; a tail is copied (a view would pin the array's buffer and
        make the next append fail), once per tail length.
        """
        tail = self.postings.get(term)
        if tail is not None:
            cached = self.cache.get(term)
            if cached is not None and cached[2] == len(tail):
                return cached[0], cached[1]
        at = int(self.base_terms.searchsorted(term))
        in_base = at < len(self.base_terms) and self.base_terms[at] == term
        if tail is None:
            if not in_base:
                return None
            low, high = self.base_offsets[at], self.base_offsets[at + 1]
            return self.base_rows[low:high], self.base_tfs[low:high]
        pairs = np.array(tail, dtype=np.int32).reshape(-1, 2)
        rows, tfs = pairs[:, 0], pairs[:, 1]
        if in_base:
            low, high = self.base_offsets[at], self.base_offsets[at + 1]
            rows = np.concatenate((self.base_rows[low:high], rows))
            tfs = np.concatenate((self.base_tfs[low:high], tfs))
        else:
            rows, tfs = rows.copy(), tfs.copy()  # contiguous
        self.cache[term] = (rows, tfs, len(tail))
        return rows, tfs

    def set_base(self, terms: np.ndarray, offsets: np.ndarray, rows: np.ndarray, tfs: np.ndarray) -> None:
        """Install a base (sorted term ids, their offsets, rows and frequencies) built by the
        caller, in a partition that holds no postings yet."""
        self.base_terms, self.base_offsets, self.base_rows, self.base_tfs = terms, offsets, rows, tfs

    def consolidate(self, renumber: np.ndarray | None = None) -> None:
        """Merge the tails into the base; with ``renumber`` (old row → new row, −1 for a dead
        row), also drop dead rows' postings and renumber the rest (compaction)."""
        tails = self.postings
        counts = np.fromiter((len(pairs) // 2 for pairs in tails.values()), dtype=np.int64, count=len(tails))
        tail_pairs = np.frombuffer(b"".join(map(bytes, tails.values())), dtype=np.int32).reshape(-1, 2)
        terms = np.concatenate(
            (
                np.repeat(self.base_terms, np.diff(self.base_offsets)),
                np.repeat(np.fromiter(tails, dtype=np.int32, count=len(tails)), counts),
            )
        )
        rows = np.concatenate((self.base_rows, tail_pairs[:, 0]))
        tfs = np.concatenate((self.base_tfs, tail_pairs[:, 1]))
        if renumber is not None:
            rows = renumber[rows]
            live = rows >= 0
            terms, rows, tfs = terms[live], rows[live], tfs[live]
        order = np.argsort(terms, kind="stable")  # base first, then tails: row order kept
        terms = terms[order]
        unique, firsts = np.unique(terms, return_index=True)
        self.set_base(
            unique.astype(np.int32), np.append(firsts, len(terms)).astype(np.int64), rows[order], tfs[order]
        )
        self.postings = {}
        self.tail_count = 0
        self.cache.clear()

    def index_forward(self) -> None:
        """Build the base from the forward index, in a partition that has no postings yet and
        whose rows were appended in order (a load): each term's rows in row order, as
        :meth:`consolidate` and the bulk path of an upsert lay them out."""
        size = self.size
        terms = np.frombuffer(self.terms, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        terms = terms[order]  # a copy: the forward index's buffer is free again
        rows = np.repeat(np.arange(size, dtype=np.int32), self.width[:size])[order]
        tfs = np.frombuffer(self.freqs, dtype=np.int32)[order]
        del order
        firsts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(terms) else np.zeros(0, np.int64)
        self.set_base(terms[firsts], np.append(firsts, len(terms)).astype(np.int64), rows, tfs)

    def forward(self, row: int) -> tuple[array[int], array[int]]:
        """The row's distinct term ids and their frequencies."""
        first = int(self.start[row])
        stop = first + int(self.width[row])
        return self.terms[first:stop], self.freqs[first:stop]

    def kill(self, row: int) -> None:
        self.alive[row] = False
        self.dead += 1

    def compact(self) -> None:
        """Drop dead rows from every column, posting list and the forward index; renumber."""
        keep = np.flatnonzero(self.alive[: self.size])
        renumber = np.full(self.size, -1, dtype=np.int32)
        renumber[keep] = np.arange(len(keep), dtype=np.int32)
        self.consolidate(renumber)
        widths = self.width[keep].astype(np.int64)
        starts = np.zeros(len(keep), dtype=np.int64)
        np.cumsum(widths[:-1], out=starts[1:])
        # Forward-index slots of the kept rows, in row order: old start + 0 .. width - 1 each.
        slots = np.arange(int(widths.sum()), dtype=np.int64) + np.repeat(self.start[keep] - starts, widths)
        self.terms = array("i", np.frombuffer(self.terms, dtype=np.int32)[slots].tobytes())
        self.freqs = array("i", np.frombuffer(self.freqs, dtype=np.int32)[slots].tobytes())
        self._resize(max(_MIN_CAPACITY, 2 * len(keep)), keep)
        self.start[: len(keep)] = starts
        self.ids = [self.ids[i] for i in keep.tolist()]
        self.size = len(keep)
        self.dead = 0
        self.norm = None

    def top(
        self,
        weights: list[tuple[int, float]],
        avgdl: float,
        flt: VectorFilter,
        limit: int,
        allowed_rows: np.ndarray | None,
        check_types: bool = True,
    ) -> list[KeywordCandidate]:
        """The best ``limit`` admitted rows for the query terms ``weights`` ((term id, idf),
        in query order), unordered: the caller sorts the candidates of all partitions."""
        postings: list[tuple[np.ndarray, np.ndarray, float]] = []
        for term, idf in weights:
            found = self.posting(term)
            if found is not None:
                postings.append((*found, idf))
        return self.rank(postings, avgdl, flt, limit, allowed_rows, check_types)

    def rank(
        self,
        postings: list[tuple[np.ndarray, np.ndarray, float]],
        avgdl: float,
        flt: VectorFilter,
        limit: int,
        allowed_rows: np.ndarray | None,
        check_types: bool,
    ) -> list[KeywordCandidate]:
        """:meth:`top` from the postings of the query's terms, (rows, frequencies, idf) in
        query order (a term may come in several pieces, on distinct rows)."""
        if not postings:
            return []
        total = sum(len(rows) for rows, _tf, _idf in postings)
        # The length part of the denominator, K1 * (1 - B + B * length / avgdl): per posting,
        # or, when the postings are many, once per row for as long as avgdl and the rows last.
        norm: np.ndarray | None = None
        if self.norm is not None and self.norm[0] == avgdl:
            norm = self.norm[1]
        elif 2 * total >= self.size:
            norm = K1 * (1 - B + B * self.length[: self.size] / avgdl)
            self.norm = (avgdl, norm)
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        for rows, tf, idf in postings:
            part = norm[rows] if norm is not None else K1 * (1 - B + B * self.length[rows] / avgdl)
            # Operation for operation the in-memory store's formula, so that equal inputs give
            # bit-equal scores (and the tie order is the documented one, not a rounding accident).
            pieces.append((rows, idf * tf * (K1 + 1) / (tf + part)))
        if len(pieces) == 1:
            rows, scores = pieces[0]  # a term lists a row once: no summing needed
        elif total * _DENSE_SHARE >= self.size:
            # bincount adds in input order, i.e. term by term, from 0.0: a plain running sum.
            acc = np.bincount(
                np.concatenate([rows for rows, _ in pieces]),
                weights=np.concatenate([c for _, c in pieces]),
                minlength=self.size,
            )
            rows = np.flatnonzero(acc)  # every contribution is > 0
            scores = acc[rows]
        else:
            every = np.concatenate([rows for rows, _ in pieces])
            rows, inverse = np.unique(every, return_inverse=True)
            scores = np.bincount(inverse, weights=np.concatenate([c for _, c in pieces]), minlength=len(rows))
        mask = filter_mask(self, rows, flt, None if allowed_rows is None else allowed_rows[rows], check_types)
        if mask is not None:
            rows, scores = rows[mask], scores[mask]
        tied: list[KeywordCandidate] = []
        if len(rows) > limit:
            rows, scores, tied = self._cut(rows, scores, limit)
        ids = self.ids
        return [
            (-s, t, ids[r]) for s, t, r in zip(scores.tolist(), self.type_code[rows].tolist(), rows.tolist())
        ] + tied

    def _cut(
        self, rows: np.ndarray, scores: np.ndarray, limit: int
    ) -> tuple[np.ndarray, np.ndarray, list[KeywordCandidate]]:
        """The best ``limit`` of more than ``limit`` rows by (score desc, type code, id): rows
        and scores of those that need no tie-break, and the candidates chosen among ties.

        Rows scoring above the ``limit``-th best score are all in. Rows tied with it
        (templated texts tie by the thousand) are taken by type code, and those of the last
        type by id: by the ids' 8-byte prefixes in numpy, then, among ids sharing the prefix at
        the cut, by comparing the ids themselves. No tied row becomes a tuple or a string
        comparison unless it sits at the cut.
        """
        # The value alone: partition is several times cheaper than argpartition on tied scores.
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        better = scores > kth
        at_kth = rows[scores == kth]
        need = limit - int(np.count_nonzero(better))
        if len(at_kth) <= need:  # no tie to break
            keep = better | (scores == kth)
            return rows[keep], scores[keep], []
        types = self.type_code[at_kth]
        cut_type = int(np.partition(types, need - 1)[need - 1])
        first = at_kth[types < cut_type]
        ids = self.ids
        last = at_kth[types == cut_type]
        wanted = need - len(first)  # < len(last)
        keys = self.id_key[last]
        edge = np.partition(keys, wanted - 1)[wanted - 1]
        below = last[keys < edge]  # fewer than `wanted`, and all smaller than the rest
        chosen = [ids[row] for row in below.tolist()]
        chosen += heapq.nsmallest(wanted - len(below), map(ids.__getitem__, last[keys == edge].tolist()))
        rows = np.concatenate((rows[better], first))
        scores = np.concatenate((scores[better], np.full(len(first), kth)))
        return rows, scores, [(-float(kth), cut_type, rid) for rid in chosen]


_Appended = tuple[list[int], list[int], list[int], list[int]]
"""Rows appended to one partition, column-wise: batch index, forward-index start, distinct
terms and length (tokens) of each."""


class PostingsKeywordIndex:
    """Okapi BM25 over every record and message with content, one collection, in memory.

    A cache like :class:`~.vector_index.NumpyVectorIndex`, and kept in step the same way (the
    store fills it at open and replays the change log into it); it replaced FTS5, whose
    ``bm25()`` scored every matching row (2–3 µs each), too slow for keyword-dense scopes. Documents are
    partitioned by user id, and within a user into records and messages, so that a scoped
    search reads only the postings of that user and of the kinds it asks for; the
    statistics (N, document frequencies, average length) are those of all live documents, so
    scores of every partition, and of records and messages, are comparable.

    Terms come from the domain (:func:`~palimpsest.domain.text.word_tokens` for documents,
    :func:`~palimpsest.domain.text.keyword_terms` for queries), with diacritics folded. Not
    thread-safe: the store serialises access.
    """

    BULK_MIN_DOCUMENTS: int = 64
    """New documents in one upsert from which postings are built with numpy sorts, not one
    append at a time (the per-call overhead of the sorts loses below this)."""
    CONSOLIDATE_MIN_POSTINGS: int = 4_096
    """Tail postings a partition may hold before they are merged into its base, however small
    the base (above this, once they outnumber the base's)."""

    def __init__(self, no_expiry: int) -> None:
        self._no_expiry = no_expiry
        self._partitions: dict[Scope, _KeywordPartition] = {}
        self._where: dict[Key, tuple[Scope, int]] = {}
        self._codes = _Codes()
        self._term_ids: dict[str, int] = {}
        self._terms: list[str | None] = []  # by term id; None marks a free id
        self._df: list[int] = []  # live documents containing each term
        self._free: list[int] = []
        self._total_length = 0  # tokens in live documents
        self._loading: set[Scope] = set()  # partitions filled by load(), postings not built yet

    def __len__(self) -> int:
        """Live documents (the N of BM25)."""
        return len(self._where)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def clear(self) -> None:
        self._partitions.clear()
        self._where.clear()
        self._codes = _Codes()
        self._term_ids.clear()
        self._terms.clear()
        self._df.clear()
        self._free.clear()
        self._total_length = 0
        self._loading = set()

    # --- statistics (for tests, diagnostics and score normalisation) ------------------------------

    @property
    def total_length(self) -> int:
        """Tokens in all live documents."""
        return self._total_length

    @property
    def average_length(self) -> float:
        """Mean tokens per live document (1.0 when there is none, or only empty ones)."""
        return (self._total_length / len(self._where) if self._where else 0.0) or 1.0

    def document_frequency(self, term: str) -> int:
        """Live documents containing ``term`` (an indexed term: folded, lower-case)."""
        found = self._term_ids.get(term)
        return 0 if found is None else self._df[found]

    def idf(self, term: str) -> float:
        return bm25_idf(len(self._where), self.document_frequency(term))

    def idf_sum(self, text: str) -> float:
        """Σ idf over the query terms of ``text``, terms absent from the collection included
        (df 0): the score of a text of average length holding every term once, a scale for
        keyword scores that does not depend on the other hits of the query."""
        return sum(self.idf(term) for term in query_terms(text))

    def partition_sizes(self) -> dict[str | None, int]:
        """Live rows per user (for tests and diagnostics)."""
        sizes: dict[str | None, int] = {}
        for (user, _messages), partition in self._partitions.items():
            sizes[user] = sizes.get(user, 0) + partition.live
        return sizes

    def code(self, value: str | None) -> int:
        """The code of an agent/thread id for :class:`VectorFilter` (``NO_CODE`` if unseen)."""
        return self._codes.lookup(value)

    # --- snapshot -----------------------------------------------------------------------------------

    def export(self, strings: StringTable, prefix: str) -> tuple[dict[str, object], dict[str, RegionSource]]:
        """The index as snapshot regions (see :mod:`.snapshot`). Tails are merged into each
        partition's base first, so that a restored partition has no per-term Python object."""
        partitions: list[dict[str, object]] = []
        regions: dict[str, RegionSource] = {
            prefix + "terms": strings_region(self._terms),
            prefix + "df": Region(np.array(self._df, dtype=np.int64)),
        }
        for number, (scope, partition) in enumerate(self._partitions.items()):
            if partition.postings:
                partition.consolidate()
            size = partition.size
            capacity = slack(size)
            name = f"{prefix}{number}."
            partitions.append(partition_entry(strings, scope, partition))
            for column in _KW_COLUMNS:
                regions[name + column] = Region(getattr(partition, column)[:size], capacity)
            regions[name + "terms"] = Region(np.frombuffer(partition.terms, dtype=np.int32))
            regions[name + "freqs"] = Region(np.frombuffer(partition.freqs, dtype=np.int32))
            for base in ("base_terms", "base_offsets", "base_rows", "base_tfs"):
                regions[name + base] = Region(getattr(partition, base))
            regions[name + "ids"] = functools.partial(strings.region, partition.ids[:size])
        meta = {
            "codes": strings.codes(self._codes.names()).tolist(),
            "free": list(self._free),
            "total_length": self._total_length,
            "partitions": partitions,
        }
        return meta, regions

    def placement(self) -> Placement:
        """The partitions and where each live key is in them (for another index restored from
        the same snapshot, see :func:`.vector_index.restored_where`); not to be changed."""
        return self._partitions, self._where

    def restore(
        self, meta: Mapping[str, object], arrays: Mapping[str, np.ndarray], strings: np.ndarray, prefix: str
    ) -> None:
        """Replace the whole index with a snapshot's (:meth:`export`). Raises
        :class:`SnapshotError` (leaving the index empty) if anything does not fit."""
        restore_or_clear(self.clear, lambda: self._restore(meta, arrays, strings, prefix), "keyword")

    def _restore(
        self, meta: Mapping[str, object], arrays: Mapping[str, np.ndarray], strings: np.ndarray, prefix: str
    ) -> None:
        terms = strings_of(arrays[prefix + "terms"])
        df = arrays[prefix + "df"]
        if len(df) != len(terms):  # an unhashable term fails below; a number matches no query
            raise SnapshotError("the keyword snapshot's vocabulary is damaged")
        self._terms = terms
        self._term_ids = dict(zip(terms, range(len(terms))))  # then without the free ids' None
        self._term_ids.pop(None, None)  # type: ignore[call-overload]
        self._df = df.tolist()
        free = meta["free"]
        if not isinstance(free, list) or any(terms[tid] is not None for tid in free):
            raise SnapshotError("the keyword snapshot's free term ids are damaged")
        self._free = [int(tid) for tid in free]
        self._total_length = int(meta["total_length"])  # type: ignore[call-overload]
        self._codes = restored_codes(meta, strings)
        vocabulary = len(terms)
        for number, entry in enumerate(partition_entries(meta)):
            size = int(entry["size"])  # type: ignore[call-overload]
            capacity = slack(size)
            name = f"{prefix}{number}."
            partition = _KeywordPartition()
            for column in _KW_COLUMNS:
                setattr(partition, column, restored_column(arrays, name + column, capacity))
            forward_terms, forward_freqs = arrays[name + "terms"], arrays[name + "freqs"]
            base_terms, base_offsets = arrays[name + "base_terms"], arrays[name + "base_offsets"]
            base_rows, base_tfs = arrays[name + "base_rows"], arrays[name + "base_tfs"]
            if (
                len(forward_terms) != len(forward_freqs)
                or len(base_offsets) != len(base_terms) + 1
                or len(base_rows) != len(base_tfs)
                or int(base_offsets[-1]) != len(base_rows)
                or (len(forward_terms) and int(forward_terms.max()) >= vocabulary)
                or (len(base_terms) and int(base_terms.max()) >= vocabulary)
                or (len(base_rows) and int(base_rows.max()) >= size)
            ):
                raise SnapshotError("the keyword snapshot's postings are damaged")
            partition.terms.frombytes(forward_terms.tobytes())
            partition.freqs.frombytes(forward_freqs.tobytes())
            partition.set_base(base_terms, base_offsets, base_rows, base_tfs)
            place_restored(self._partitions, self._where, partition, entry, arrays[name + "ids"], strings)

    # --- writes -------------------------------------------------------------------------------------

    def _term_id(self, term: str) -> int:
        found = self._term_ids.get(term)
        if found is not None:
            return found
        if self._free:
            found = self._free.pop()
            self._terms[found] = term
        else:
            found = len(self._terms)
            self._terms.append(term)
            self._df.append(0)
        self._term_ids[term] = found
        return found

    def upsert(self, batch: KeywordBatch) -> None:
        """Insert or replace documents. Keys must be unique within a batch.

        A document whose user and terms are unchanged (a status, expiry or metadata update) is
        updated in place; any other replacement kills the old row and appends a new one.
        """
        if not len(batch):
            return
        agents = self._codes.intern(batch.agents).tolist()
        threads = self._codes.intern(batch.threads).tolist()
        partitions = self._partitions
        where = self._where
        names = self._terms
        scopes = [(user, key[0]) for user, key in zip(batch.users, batch.keys)]
        rewrite: dict[Scope, list[tuple[int, int]]] = {}  # in place: (batch index, row)
        fresh: list[int] = []  # batch indices to append
        tokens: dict[int, list[str]] = {}  # of replaced documents, tokenised once
        killed: set[Scope] = set()
        for i, (key, scope) in enumerate(zip(batch.keys, scopes)):
            found = where.get(key)
            if found is not None:
                tokens[i] = document_terms(batch.contents[i])
                if found[0] == scope:
                    terms, freqs = partitions[scope].forward(found[1])
                    counts: Counter[str | None] = Counter(tokens[i])  # a free term id's name is None
                    if len(terms) == len(counts) and all(
                        counts.get(names[t]) == f for t, f in zip(terms, freqs)
                    ):
                        rewrite.setdefault(scope, []).append((i, found[1]))
                        continue
                self._kill(key, found)
                killed.add(found[0])
            fresh.append(i)
        if fresh:
            documents = [tokens.get(i) or document_terms(batch.contents[i]) for i in fresh]
            if len(fresh) >= self.BULK_MIN_DOCUMENTS:
                appended = self._add_bulk(scopes, fresh, documents)
            else:
                appended = self._add_each(scopes, fresh, documents)
            self._place(appended, batch, agents, threads)
        for scope, pairs in rewrite.items():
            rows_array = np.array([row for _, row in pairs], dtype=np.int64)
            self._write(partitions[scope], rows_array, [i for i, _ in pairs], batch, agents, threads)
        for scope in killed:
            if scope in partitions:
                self._tidy(scope)

    def _place(
        self, appended: dict[Scope, _Appended], batch: KeywordBatch, agents: list[int], threads: list[int]
    ) -> None:
        """Give the appended documents their rows: per-row columns, ids and places."""
        partitions = self._partitions
        for scope, (members, starts, widths, lengths) in appended.items():
            partition = partitions[scope]
            first = partition.size
            partition.reserve(len(members))
            partition.size = stop = first + len(members)
            partition.norm = None
            rows = slice(first, stop)
            partition.start[rows] = starts
            partition.width[rows] = widths
            partition.length[rows] = lengths
            self._write(partition, rows, members, batch, agents, threads)
            new_ids = [batch.keys[i][1] for i in members]
            partition.ids.extend(new_ids)
            partition.id_key[rows] = id_keys(new_ids)
            if partition.tail_count > max(self.CONSOLIDATE_MIN_POSTINGS, len(partition.base_rows)):
                partition.consolidate()
            self._where.update(zip([batch.keys[i] for i in members], zip(repeat(scope), range(first, stop))))

    def load(self, batch: KeywordBatch) -> None:
        """Append new documents to partitions being filled from the tables (a rebuild), batch
        after batch, then :meth:`finish_loading` once.

        Every key must be new and every partition it lands in new or filled by this load: the
        rows get their columns, forward index and statistics now, and their postings only at
        :meth:`finish_loading`, built once per partition from its forward index by numpy
        sorts (no per-term Python object, no merge of one batch's postings into the last's).
        Searching in between would miss the loaded rows: the store loads under its lock.
        """
        if not len(batch):
            return
        scopes = [(user, key[0]) for user, key in zip(batch.users, batch.keys)]
        partitions, loading = self._partitions, self._loading
        for scope in set(scopes):
            if scope in partitions and scope not in loading:
                raise ValueError("load() appends to partitions it created only")
            loading.add(scope)
        agents = self._codes.intern(batch.agents).tolist()
        threads = self._codes.intern(batch.threads).tolist()
        documents = [document_terms(content) for content in batch.contents]
        appended = self._add_bulk(scopes, list(range(len(batch))), documents, defer_postings=True)
        del documents
        self._place(appended, batch, agents, threads)

    def finish_loading(self) -> None:
        """Build the postings of the partitions :meth:`load` filled."""
        for scope in self._loading:
            partition = self._partitions.get(scope)
            if partition is not None:
                partition.index_forward()
        self._loading = set()

    def _partition(self, scope: Scope) -> _KeywordPartition:
        partition = self._partitions.get(scope)
        if partition is None:
            partition = self._partitions[scope] = _KeywordPartition()
        return partition

    def _add_each(
        self, scopes: list[Scope], members: list[int], documents: list[list[str]]
    ) -> dict[Scope, _Appended]:
        """Append postings and forward entries document by document (small batches: the
        commits of an agent's turn), leaving the per-row columns to the caller.

        The hot path of every write: per term, only dictionary lookups and array appends."""
        appended: dict[Scope, _Appended] = {}
        df = self._df
        known = self._term_ids.get
        new_term = self._term_id
        for i, document in zip(members, documents):
            scope = scopes[i]
            partition = self._partition(scope)
            pending = appended.get(scope)
            if pending is None:
                pending = appended[scope] = ([], [], [], [])
            row = partition.size + len(pending[0])
            counts: dict[str, int] = {}
            for token in document:
                counts[token] = counts.get(token, 0) + 1
            postings = partition.postings
            posting_of = postings.get
            tids = []
            for term, tf in counts.items():
                tid = known(term)
                if tid is None:
                    tid = new_term(term)
                df[tid] += 1
                pairs = posting_of(tid)
                if pairs is None:
                    pairs = postings[tid] = array("i")
                pairs.append(row)
                pairs.append(tf)
                tids.append(tid)
            pending[0].append(i)
            pending[1].append(len(partition.terms))
            pending[2].append(len(counts))
            pending[3].append(len(document))
            partition.terms.extend(tids)
            partition.freqs.extend(counts.values())
            partition.tail_count += len(counts)
            self._total_length += len(document)
        return appended

    def _add_bulk(
        self,
        scopes: list[Scope],
        members: list[int],
        documents: list[list[str]],
        *,
        defer_postings: bool = False,
    ) -> dict[Scope, _Appended]:
        """:meth:`_add_each` for many documents at once (a rebuild at open, a bulk load).

        Counting terms, document frequencies and grouping postings by partition and term are
        numpy sorts over all tokens of the batch, so the Python work is per distinct
        (partition, term), not per posting: a rebuild costs little more than tokenising.
        """
        term_ids = self._term_ids
        for term in dict.fromkeys(chain.from_iterable(documents)):
            if term not in term_ids:
                self._term_id(term)
        vocabulary = max(1, len(self._terms))  # the pair key's radix (no terms: no pairs)
        n = len(members)
        sizes = np.fromiter(map(len, documents), dtype=np.int64, count=n)
        tids = np.fromiter(
            map(term_ids.__getitem__, chain.from_iterable(documents)), dtype=np.int64, count=int(sizes.sum())
        )
        # One (document, term) pair per distinct term of each document, ordered by document
        # then term id, with its frequency.
        keys, tfs = np.unique(
            np.repeat(np.arange(n, dtype=np.int64), sizes) * vocabulary + tids, return_counts=True
        )
        pair_doc = keys // vocabulary
        pair_term = keys - pair_doc * vocabulary
        widths = np.bincount(pair_doc, minlength=n)
        # Per distinct term of the batch (not a vocabulary-long count per batch: a load of
        # many batches would cost batches × vocabulary).
        added, counts = np.unique(pair_term, return_counts=True)
        df = self._df
        for tid, count in zip(added.tolist(), counts.tolist()):
            df[tid] += count
        self._total_length += int(sizes.sum())
        # Partitions: a number for each, and each document's row in its partition.
        doc_scopes = [scopes[i] for i in members]
        numbers = {scope: number for number, scope in enumerate(dict.fromkeys(doc_scopes))}
        targets = list(numbers)
        parts = [self._partition(scope) for scope in targets]
        doc_part = np.fromiter(map(numbers.__getitem__, doc_scopes), dtype=np.int64, count=n)
        doc_order = np.argsort(doc_part, kind="stable")  # by partition, then batch order
        doc_bounds = np.searchsorted(doc_part[doc_order], np.arange(len(targets) + 1))
        doc_row = np.empty(n, dtype=np.int64)
        doc_row[doc_order] = np.arange(n) - np.repeat(doc_bounds[:-1], np.diff(doc_bounds))
        doc_row += np.array([partition.size for partition in parts], dtype=np.int64)[doc_part]
        # Forward index: each partition's pairs in document order (the pairs are sorted by
        # document, a stable sort by partition keeps that order).
        pair_part = doc_part[pair_doc]
        order = np.argsort(pair_part, kind="stable")
        bounds = np.searchsorted(pair_part[order], np.arange(len(targets) + 1))
        appended: dict[Scope, _Appended] = {}
        for number, (scope, partition) in enumerate(zip(targets, parts)):
            chosen = order[bounds[number] : bounds[number + 1]]
            docs = doc_order[doc_bounds[number] : doc_bounds[number + 1]]
            part_widths = widths[docs]
            starts = np.empty(len(docs), dtype=np.int64)
            starts[0] = 0
            np.cumsum(part_widths[:-1], out=starts[1:])
            starts += len(partition.terms)
            partition.terms.frombytes(pair_term[chosen].astype(np.int32).tobytes())
            partition.freqs.frombytes(tfs[chosen].astype(np.int32).tobytes())
            appended[scope] = (
                [members[d] for d in docs.tolist()],
                starts.tolist(),
                part_widths.tolist(),
                sizes[docs].tolist(),
            )
        if defer_postings:  # a load: built from the forward index at the end (finish_loading)
            return appended
        # Postings: pairs grouped by (partition, term), rows in document order within a group.
        group = pair_part * vocabulary + pair_term
        order = np.argsort(group, kind="stable")
        group = group[order]
        rows = doc_row[pair_doc[order]].astype(np.int32)
        freqs = tfs[order].astype(np.int32)
        firsts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(group) else group
        bounds = np.append(firsts, len(group))  # pair offsets of each (partition, term) group
        group_part = group[firsts] // vocabulary
        group_terms = group[firsts] - group_part * vocabulary
        part_bounds = np.searchsorted(group_part, np.arange(len(targets) + 1)).tolist()
        pairs: memoryview | None = None
        for number, partition in enumerate(parts):
            low, high = part_bounds[number], part_bounds[number + 1]
            first, last = int(bounds[low]), int(bounds[high])
            if partition.size == 0:  # a new partition (a rebuild): the groups are its base
                partition.set_base(
                    group_terms[low:high].astype(np.int32),
                    bounds[low : high + 1] - first,
                    rows[first:last].copy(),
                    freqs[first:last].copy(),
                )
                continue
            if pairs is None:  # (row, frequency) pairs, as bytes that extend a tail
                pairs = memoryview(np.stack((rows, freqs), axis=1).tobytes())
            partition.tail_count += last - first
            postings = partition.postings
            posting_of = postings.get
            offsets = (8 * bounds[low : high + 1]).tolist()  # two int32 per pair
            for begin, end, tid in zip(offsets[:-1], offsets[1:], group_terms[low:high].tolist()):
                tail = posting_of(tid)
                if tail is None:
                    tail = postings[tid] = array("i")
                tail.frombytes(pairs[begin:end])
        return appended

    def _write(
        self,
        partition: _KeywordPartition,
        rows: np.ndarray | slice,
        members: list[int],
        batch: KeywordBatch,
        agents: list[int],
        threads: list[int],
    ) -> None:
        """Write the filter columns of batch entries ``members`` to ``rows`` (now alive)."""
        count_flags(partition, rows, -1, self._no_expiry)  # rows being overwritten stop counting
        partition.type_code[rows] = [batch.types[i] for i in members]
        partition.agent_code[rows] = [agents[i] for i in members]
        partition.thread_code[rows] = [threads[i] for i in members]
        partition.valid[rows] = [batch.valid[i] for i in members]
        partition.expires[rows] = [batch.expires[i] for i in members]
        partition.alive[rows] = True
        count_flags(partition, rows, +1, self._no_expiry)

    def remove(self, keys: Iterable[Key]) -> None:
        """Forget documents (unknown keys are ignored)."""
        touched: set[Scope] = set()
        for key in keys:
            found = self._where.get(key)
            if found is not None:
                self._kill(key, found)
                touched.add(found[0])
        for scope in touched:
            self._tidy(scope)

    def _kill(self, key: Key, found: tuple[Scope, int]) -> None:
        """Mark a live row dead and take it out of the statistics."""
        scope, row = found
        partition = self._partitions[scope]
        count_flags(partition, slice(row, row + 1), -1, self._no_expiry)
        partition.kill(row)
        terms, _freqs = partition.forward(row)
        df = self._df
        for tid in terms:
            df[tid] -= 1
            if df[tid] == 0:  # the id is free again; its dead postings are masked until compaction
                term = self._terms[tid]
                if term is not None:
                    del self._term_ids[term]
                self._terms[tid] = None
                self._free.append(tid)
        self._total_length -= int(partition.length[row])
        del self._where[key]

    def _tidy(self, scope: Scope) -> None:
        """Drop an empty partition; compact one whose dead rows exceed a quarter of its rows."""
        partition = self._partitions[scope]
        if partition.live == 0:
            del self._partitions[scope]
        elif partition.dead > _COMPACT_RATIO * partition.size:
            partition.compact()
            message = scope[1]
            self._where.update(
                zip(
                    [(message, row_id) for row_id in partition.ids], zip(repeat(scope), range(partition.size))
                )
            )

    # --- search -------------------------------------------------------------------------------------

    def _search_together(
        self,
        partitions: list[tuple[Scope, _KeywordPartition]],
        weights: list[tuple[int, float]],
        avgdl: float,
        flt: VectorFilter,
        limit: int,
        allowed: dict[Scope, list[int]] | None,
    ) -> list[KeywordCandidate]:
        """:meth:`_KeywordPartition.top` over many partitions at once (an unscoped search
        over many users): their columns and postings laid end to end, ranked in one pass, so
        the numpy work is per query, not per partition."""
        merged = _KeywordPartition()
        sizes = [p.size for _, p in partitions]
        offsets = np.cumsum([0, *sizes]).tolist()
        for name in (
            "id_key",
            "type_code",
            "agent_code",
            "thread_code",
            "valid",
            "expires",
            "alive",
            "length",
        ):
            setattr(merged, name, np.concatenate([getattr(p, name)[: p.size] for _, p in partitions]))
        merged.ids = list(chain.from_iterable(p.ids for _, p in partitions))
        merged.size = offsets[-1]
        merged.dead = sum(p.dead for _, p in partitions)
        merged.invalid = sum(p.invalid for _, p in partitions)
        merged.expiring = sum(p.expiring for _, p in partitions)
        postings: list[tuple[np.ndarray, np.ndarray, float]] = []
        for term, idf in weights:  # term by term, so that every row's sum runs in query order
            rows: list[np.ndarray] = []
            tfs: list[np.ndarray] = []
            shifts: list[int] = []
            for (_scope, partition), offset in zip(partitions, offsets):
                found = partition.posting(term)
                if found is not None:
                    rows.append(found[0])
                    tfs.append(found[1])
                    shifts.append(offset)
            if rows:  # one piece per term: each partition's rows shifted by its offset
                shift = np.repeat(np.array(shifts, dtype=np.int64), [len(r) for r in rows])
                postings.append((np.concatenate(rows) + shift, np.concatenate(tfs), idf))
        allowed_rows = None
        if allowed is not None:
            allowed_rows = np.zeros(merged.size, dtype=bool)
            for (scope, _partition), offset in zip(partitions, offsets):
                allowed_rows[np.asarray(allowed.get(scope, []), dtype=np.int64) + offset] = True
        check_types = not _RECORD_CODES | {MESSAGE_CODE} <= flt.type_codes
        return merged.rank(postings, avgdl, flt, limit, allowed_rows, check_types)

    def search(self, text: str, flt: VectorFilter, limit: int) -> list[KeywordCandidate]:
        """The best ``limit`` admitted documents for ``text``: (−bm25, type code, id), best first
        (ties by type code, then id)."""
        if limit <= 0 or flt.agent_code == NO_CODE or flt.thread_code == NO_CODE or not self._where:
            return []
        documents = len(self._where)
        weights: list[tuple[int, float]] = []
        for term in query_terms(text):
            tid = self._term_ids.get(term)
            if tid is not None:  # an absent term matches nothing
                weights.append((tid, bm25_idf(documents, self._df[tid])))
        if not weights:
            return []
        avgdl = self.average_length
        partitions, allowed = select_partitions(self._partitions, self._where, flt)
        if len(partitions) > _TOGETHER_MIN_PARTITIONS:
            together = self._search_together(
                partitions, weights, avgdl, flt, limit, None if flt.allowed is None else allowed
            )
            together.sort()
            return together[:limit]
        best: list[KeywordCandidate] = []
        for scope, partition in partitions:
            allowed_rows = None
            if flt.allowed is not None:
                if scope not in allowed:
                    continue
                allowed_rows = np.zeros(partition.size, dtype=bool)
                allowed_rows[allowed[scope]] = True
            # A message partition holds one type, admitted (it is searched only then); a record
            # partition needs the type check unless every memory type is asked for.
            check_types = not scope[1] and not _RECORD_CODES <= flt.type_codes
            best.extend(partition.top(weights, avgdl, flt, limit, allowed_rows, check_types))
        best.sort()
        return best[:limit]
