"""Embedded adapter: the in-process vector index (numpy), partitioned by user scope and kind.

Private to ``EmbeddedStore`` (not an adapter of a port; not exported from the package).
A cache, never the source of truth: the store fills it from SQLite at open and from the change
log after commits, so it only ever reflects committed rows.

Search is exact by default. In ``"auto"`` mode a partition of more than
``approximate_min_rows`` live rows is searched in two passes (ARCHITECTURE.md, D19): a Hamming
scan of one sign bit per dimension, held beside the float32 vectors, picks the ``candidates``
admitted rows nearest the query's own sign bits; those are then scored exactly, so the result is
the exact top ``k`` *among the candidates*. Filters are applied before candidates are drawn, and
a filter admitting no more rows than the candidate budget gives an exact answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from typing import Final, Protocol, TypeVar

import numpy as np
from palimpsest.domain.errors import StorageError
from palimpsest.domain.sentinel import AnyType

from .codec import MESSAGE_CODE, TYPE_CODES
from .snapshot import Region, RegionSource, SnapshotError, StringTable, lookup

__all__ = [
    "APPROXIMATE_MIN_ROWS",
    "CANDIDATES_MIN",
    "CANDIDATES_PER_RESULT",
    "VECTOR_SEARCH_MODES",
    "IndexBatch",
    "NumpyVectorIndex",
    "VectorCandidate",
    "VectorFilter",
    "sign_bits",
]

Key = tuple[bool, str]
"""(is_message, id): messages and memory records live in separate tables and id spaces."""

Scope = tuple[str | None, bool]
"""A partition: (user id, messages?). A user's records and messages are kept apart because
searches usually want one kind (a context card asks for each separately), and a scan then
reads only that kind's vectors."""

NO_CODE: Final = -1
"""The code of a scope value this index has never seen: it matches no row."""

_TIE_MARGIN: Final = 1e-4
"""float32 scores are re-checked in float64 within this margin of the k-th best, so that
near-ties and exact ties are ordered exactly and deterministically (by type, then id)."""

_MIN_CAPACITY: Final = 16
_COMPACT_RATIO: Final = 0.25
_RECORD_CODES: Final = frozenset(code for code in TYPE_CODES.values() if code != MESSAGE_CODE)

VECTOR_SEARCH_MODES: Final = ("auto", "exact")
"""``"exact"``: every search scans float32 vectors. ``"auto"``: partitions larger than
``approximate_min_rows`` take the two-pass (sign bits, then exact re-scoring) search."""

APPROXIMATE_MIN_ROWS: Final = 100_000
"""Default size above which a partition is searched in two passes in ``"auto"`` mode. An exact
scan of 100,000 × 384 float32 takes about 12 ms; below this size exactness is cheap enough."""

CANDIDATES_MIN: Final = 2_000
CANDIDATES_PER_RESULT: Final = 40
"""The first pass keeps ``max(CANDIDATES_MIN, CANDIDATES_PER_RESULT * limit)`` rows for exact
re-scoring (2,000 for k=10: about 3 MB of float32 rows read, well under a millisecond)."""

_PACK_CHUNK: Final = 65_536  # rows packed at a time (bounds the temporary boolean matrix)
_WORD_BITS: Final = 64
_POPCOUNT8: Final = np.array([i.bit_count() for i in range(256)], dtype=np.uint8)


def _popcount_table(words: np.ndarray) -> np.ndarray:
    """Bits set per uint64 through a byte table (numpy < 2 has no ``bitwise_count``)."""
    counts: np.ndarray = _POPCOUNT8[words.view(np.uint8)].reshape(len(words), 8).sum(axis=1, dtype=np.uint8)
    return counts


_popcount = getattr(np, "bitwise_count", None) or _popcount_table


def words_for(dimension: int) -> int:
    """uint64 words holding one sign bit per dimension."""
    return -(-dimension // _WORD_BITS)


def sign_bits(matrix: np.ndarray, words: int) -> np.ndarray:
    """One bit per dimension (set where the component is > 0), packed into ``words`` uint64 per row.

    Padding bits are zero for every row and query alike, so they never add to a distance.
    """
    out = np.zeros((len(matrix), 8 * words), dtype=np.uint8)
    for start in range(0, len(matrix), _PACK_CHUNK):
        packed = np.packbits(matrix[start : start + _PACK_CHUNK] > 0, axis=1)
        out[start : start + _PACK_CHUNK, : packed.shape[1]] = packed
    return out.view(np.uint64)


@dataclass(slots=True)
class IndexBatch:
    """Rows to upsert, column by column (cheap to fill from a cursor, cheap to scatter)."""

    keys: list[Key] = field(default_factory=list)
    users: list[str | None] = field(default_factory=list)
    agents: list[str | None] = field(default_factory=list)
    threads: list[str | None] = field(default_factory=list)
    types: list[int] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    expires: list[int] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)  # L2-normalised float32 little-endian

    def __len__(self) -> int:
        return len(self.keys)

    def append(
        self,
        key: Key,
        user: str | None,
        agent: str | None,
        thread: str | None,
        type_code: int,
        valid: bool,
        expires_us: int,
        blob: bytes,
    ) -> None:
        self.keys.append(key)
        self.users.append(user)
        self.agents.append(agent)
        self.threads.append(thread)
        self.types.append(type_code)
        self.valid.append(valid)
        self.expires.append(expires_us)
        self.blobs.append(blob)


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """A search's filters in index terms. ``None`` on agent/thread means "any"."""

    type_codes: frozenset[int]
    now_us: int
    include_invalid: bool
    user_id: str | None | AnyType  # ANY scans every partition
    agent_code: int | None
    thread_code: int | None
    allowed: frozenset[Key] | None = None  # metadata prefilter result


P = TypeVar("P")


def select_partitions(
    partitions: Mapping[Scope, P], where: Mapping[Key, tuple[Scope, int]], flt: VectorFilter
) -> tuple[list[tuple[Scope, P]], dict[Scope, list[int]]]:
    """The (user, kind) partitions a search reads, and the metadata prefilter's rows grouped
    by partition (empty without a prefilter). Shared by the vector and the keyword index, which
    partition their rows the same way."""
    kinds = [
        message
        for message, wanted in (
            (False, not flt.type_codes <= {MESSAGE_CODE}),
            (True, MESSAGE_CODE in flt.type_codes),
        )
        if wanted
    ]
    user_id = flt.user_id
    if isinstance(user_id, AnyType):
        chosen = [(scope, p) for scope, p in partitions.items() if scope[1] in kinds]
    else:
        chosen = [
            ((user_id, message), p)
            for message in kinds
            if (p := partitions.get((user_id, message))) is not None
        ]
    allowed: dict[Scope, list[int]] = {}
    if flt.allowed is not None:
        for key in flt.allowed:
            found = where.get(key)
            if found is not None:
                allowed.setdefault(found[0], []).append(found[1])
    return chosen, allowed


class FilterColumns(Protocol):
    """The per-row filter columns and their counts, kept alike by the vector and the keyword
    index's partitions, which :func:`count_flags` and :func:`filter_mask` read."""

    alive: np.ndarray
    type_code: np.ndarray
    agent_code: np.ndarray
    thread_code: np.ndarray
    valid: np.ndarray
    expires: np.ndarray
    dead: int
    expiring: int
    invalid: int


def count_flags(columns: FilterColumns, rows: np.ndarray | slice, sign: int, no_expiry: int) -> None:
    """Adds (``sign`` +1) or takes away (-1) the live ``rows`` that expire or are invalid, the
    counts that let :func:`filter_mask` skip a condition nothing could fail."""
    alive = columns.alive[rows]
    columns.expiring += sign * int(np.count_nonzero((columns.expires[rows] != no_expiry) & alive))
    columns.invalid += sign * int(np.count_nonzero(~columns.valid[rows] & alive))


def filter_mask(
    columns: FilterColumns,
    rows: np.ndarray | slice,
    flt: VectorFilter,
    allowed: np.ndarray | None,
    check_types: bool,
) -> np.ndarray | None:
    """The mask of ``rows`` the filters admit; ``None`` when all are. ``allowed``: the metadata
    prefilter's mask over the same rows. A condition is applied only when it can exclude
    something in this partition (``check_types``: whether the query refuses a type this
    partition may hold)."""
    mask: np.ndarray | None = None

    def narrow(condition: np.ndarray) -> None:
        nonlocal mask
        mask = condition if mask is None else mask & condition

    if columns.dead:
        narrow(columns.alive[rows])
    if allowed is not None:
        narrow(allowed)
    if check_types:
        lut = np.zeros(256, dtype=bool)
        lut[list(flt.type_codes)] = True
        narrow(lut[columns.type_code[rows].view(np.uint8)])
    if flt.agent_code is not None:
        narrow(columns.agent_code[rows] == flt.agent_code)
    if flt.thread_code is not None:
        narrow(columns.thread_code[rows] == flt.thread_code)
    if not flt.include_invalid and columns.invalid:
        narrow(columns.valid[rows])
    if columns.expiring:
        narrow(columns.expires[rows] > flt.now_us)
    return mask


VectorCandidate = tuple[float, int, str]
"""(cosine similarity, type code, id): sorts best-first as (-score, type code, id)."""

_COLUMNS: Final = ("vectors", "type_code", "agent_code", "thread_code", "valid", "expires", "alive")


class _Partition:
    """One user scope's records, or its messages: a growable float32 matrix plus parallel
    attribute columns.

    ``bits`` holds the rows' sign bits word-major, shape ``(words, capacity)``: the Hamming scan
    then reads each word as one contiguous column. It has no words (nothing is packed or kept up
    to date) until the partition first grows past the two-pass threshold: see :meth:`pack`.
    """

    __slots__ = (*_COLUMNS, "bits", "ids", "size", "dead", "expiring", "invalid")

    def __init__(self, dimension: int, capacity: int = _MIN_CAPACITY) -> None:
        self.vectors = np.zeros((capacity, dimension), dtype=np.float32)
        self.bits = np.zeros((0, capacity), dtype=np.uint64)
        self.type_code = np.zeros(capacity, dtype=np.int8)
        self.agent_code = np.zeros(capacity, dtype=np.int32)
        self.thread_code = np.zeros(capacity, dtype=np.int32)
        self.valid = np.zeros(capacity, dtype=bool)
        self.expires = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.ids: list[str] = []
        self.size = 0
        self.dead = 0
        # Counts of live rows that need a mask; at zero the mask pass is skipped entirely.
        self.expiring = 0
        self.invalid = 0

    @property
    def live(self) -> int:
        return self.size - self.dead

    def _resize(self, capacity: int, keep: np.ndarray | None = None) -> None:
        for name in _COLUMNS:
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            if keep is None:
                new[: self.size] = old[: self.size]
            else:
                new[: len(keep)] = old[keep]
            setattr(self, name, new)
        bits = np.zeros((self.bits.shape[0], capacity), dtype=np.uint64)
        if keep is None:
            bits[:, : self.size] = self.bits[:, : self.size]
        else:
            bits[:, : len(keep)] = self.bits[:, keep]
        self.bits = bits

    def reserve(self, extra: int) -> None:
        """Amortised growth: capacity doubles, so appends cost O(1) on average."""
        needed = self.size + extra
        if needed > self.vectors.shape[0]:
            self._resize(max(needed, 2 * self.vectors.shape[0]))

    def write(
        self, rows: np.ndarray | slice, src: np.ndarray | slice, columns: _Columns, no_expiry: int
    ) -> None:
        count_flags(self, rows, -1, no_expiry)  # rows being overwritten stop counting
        self.vectors[rows] = columns.matrix[src]
        if words := self.bits.shape[0]:
            self.bits[:, rows] = sign_bits(columns.matrix[src], words).T
        self.type_code[rows] = columns.types[src]
        self.agent_code[rows] = columns.agents[src]
        self.thread_code[rows] = columns.threads[src]
        self.valid[rows] = columns.valid[src]
        self.expires[rows] = columns.expires[src]
        self.alive[rows] = True
        count_flags(self, rows, +1, no_expiry)

    def pack(self, words: int) -> None:
        """Start keeping sign bits: pack every row once; :meth:`write` keeps them up to date."""
        if self.bits.shape[0] != words:
            bits = np.zeros((words, self.vectors.shape[0]), dtype=np.uint64)
            bits[:, : self.size] = sign_bits(self.vectors[: self.size], words).T
            self.bits = bits

    def kill(self, rows: np.ndarray, no_expiry: int) -> None:
        count_flags(self, rows, -1, no_expiry)
        self.alive[rows] = False
        self.dead += len(rows)

    def compact(self) -> list[str]:
        """Drop tombstoned rows; returns the ids in their new row order."""
        keep = np.flatnonzero(self.alive[: self.size])
        self._resize(max(_MIN_CAPACITY, 2 * len(keep)), keep)
        self.ids = [self.ids[i] for i in keep.tolist()]
        self.size = len(keep)
        self.dead = 0
        return self.ids

    def top(
        self,
        query: np.ndarray,
        query64: np.ndarray,
        flt: VectorFilter,
        limit: int,
        allowed_rows: np.ndarray | None,
        candidates: int | None = None,
        query_bits: np.ndarray | None = None,
        check_types: bool = True,
    ) -> list[VectorCandidate]:
        """The best ``limit`` admitted rows (more when tied within the margin).

        With ``candidates`` (and ``query_bits``), the rows are chosen among the ``candidates``
        admitted rows of least Hamming distance to the query's sign bits (all admitted rows when
        there are no more than that), then scored exactly. ``check_types``: whether the query
        refuses a type this partition may hold.
        """
        n = self.size
        if n == 0:
            return []
        mask = filter_mask(self, slice(0, self.size), flt, allowed_rows, check_types)
        count = n if mask is None else int(np.count_nonzero(mask))
        if count == 0:
            return []
        if candidates is not None and query_bits is not None:
            if count <= candidates:  # few admitted rows: score them all, exactly
                rows = np.arange(n) if mask is None else np.flatnonzero(mask)
            else:
                rows = self._nearest_bits(query_bits, mask, candidates)
            return self._best(rows, query, query64, limit)
        # A view of the used rows, not a copy: the matvec is the whole cost of a big scan.
        scores = self.vectors[:n] @ query
        if mask is not None:
            scores[~mask] = -np.inf
        take = min(limit, count)
        if take < n:
            kth = np.partition(scores, n - take)[n - take]
        else:
            kth = scores.min()
        rows = np.flatnonzero(scores >= kth - _TIE_MARGIN)
        if mask is not None:
            rows = rows[mask[rows]]
        return self.rescored(rows, query64)

    def rescored(self, rows: np.ndarray, query64: np.ndarray) -> list[VectorCandidate]:
        """``rows`` scored in float64: a deterministic per-row reduction, so equal vectors get
        equal scores whatever their position in the matrix."""
        exact = (self.vectors[rows].astype(np.float64) * query64).sum(axis=1)
        ids = self.ids
        return [
            (s, t, ids[r]) for s, t, r in zip(exact.tolist(), self.type_code[rows].tolist(), rows.tolist())
        ]

    def _nearest_bits(self, query_bits: np.ndarray, mask: np.ndarray | None, take: int) -> np.ndarray:
        """The ``take`` admitted rows of least Hamming distance, ties broken by row order.

        The caller guarantees that more than ``take`` rows are admitted.
        """
        n = self.size
        bits = self.bits
        words = bits.shape[0]
        sentinel = words * _WORD_BITS + 1  # beyond any real distance: marks refused rows
        dist: np.ndarray = _popcount(bits[0, :n] ^ query_bits[0]).astype(
            np.uint16 if sentinel < 65_535 else np.uint32
        )
        scratch = np.empty(n, dtype=np.uint64)
        for word in range(1, words):
            np.bitwise_xor(bits[word, :n], query_bits[word], out=scratch)
            dist += _popcount(scratch)
        if mask is not None:
            np.putmask(dist, ~mask, sentinel)
        # Distances are small integers: a histogram finds the cut-off distance in one pass.
        cumulative = np.cumsum(np.bincount(dist, minlength=sentinel + 1))
        cut = int(np.searchsorted(cumulative, take))
        below = np.flatnonzero(dist < cut)
        at_cut = np.flatnonzero(dist == cut)[: take - len(below)]
        return np.concatenate((below, at_cut))

    def _best(
        self, rows: np.ndarray, query: np.ndarray, query64: np.ndarray, limit: int
    ) -> list[VectorCandidate]:
        """The best ``limit`` of ``rows`` by exact cosine (ties within the margin kept, float64)."""
        scores = self.vectors[rows] @ query
        take = min(limit, len(rows))
        kth = np.partition(scores, len(rows) - take)[len(rows) - take]
        rows = rows[scores >= kth - _TIE_MARGIN]
        return self.rescored(rows, query64)


@dataclass(slots=True)
class _Columns:
    """An :class:`IndexBatch` converted to arrays once, then scattered into partitions."""

    matrix: np.ndarray
    types: np.ndarray
    agents: np.ndarray
    threads: np.ndarray
    valid: np.ndarray
    expires: np.ndarray


class _Codes:
    """Interning of agent/thread ids to int32 codes (``None`` is code 0)."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: dict[str | None, int] = {None: 0}

    def intern(self, values: list[str | None]) -> np.ndarray:
        codes = self._codes
        out = [codes.get(value, NO_CODE) for value in values]
        if NO_CODE in out:
            for i, value in enumerate(values):
                if out[i] == NO_CODE:
                    code = codes.get(value)
                    if code is None:
                        code = codes[value] = len(codes)
                    out[i] = code
        return np.array(out, dtype=np.int32)

    def lookup(self, value: str | None) -> int:
        return self._codes.get(value, NO_CODE)

    def names(self) -> list[str | None]:
        """The interned values in code order (codes are dense: code ``i`` is ``names()[i]``)."""
        return list(self._codes)

    @classmethod
    def from_names(cls, names: list[str | None]) -> _Codes:
        if not names or names[0] is not None or len(set(names)) != len(names):
            raise SnapshotError("a code table is damaged")
        codes = cls()
        codes._codes = {name: code for code, name in enumerate(names)}
        return codes


def slack(size: int) -> int:
    """The capacity a partition restored from a snapshot gets for ``size`` rows: room for an
    eighth more, so that the first appends after opening copy nothing."""
    return size + max(_MIN_CAPACITY, size // 8)


def restored_column(arrays: Mapping[str, np.ndarray], name: str, capacity: int) -> np.ndarray:
    """A snapshot array that must be ``capacity`` long (on its first axis)."""
    array = arrays.get(name)
    if array is None or array.shape[0] != capacity:
        raise SnapshotError(f"the snapshot's {name} is missing or damaged")
    return array


class _Restorable(Protocol):
    """What the snapshot helpers below set on a vector or keyword partition."""

    alive: np.ndarray
    ids: list[str]
    size: int
    dead: int
    expiring: int
    invalid: int


R = TypeVar("R", bound=_Restorable)


def partition_entry(strings: StringTable, scope: Scope, partition: _Restorable) -> dict[str, object]:
    """A partition's scope and counters, as a snapshot's metadata holds them."""
    return {
        "user": strings.code(scope[0]),
        "message": scope[1],
        "size": partition.size,
        "dead": partition.dead,
        "expiring": partition.expiring,
        "invalid": partition.invalid,
    }


def partition_entries(meta: Mapping[str, object]) -> list[Mapping[str, object]]:
    entries = meta["partitions"]
    if not isinstance(entries, list):
        raise SnapshotError("the snapshot's partitions are damaged")
    return entries


def restored_codes(meta: Mapping[str, object], strings: np.ndarray) -> _Codes:
    codes = meta["codes"]
    if not isinstance(codes, list):
        raise SnapshotError("the snapshot's codes are damaged")
    return _Codes.from_names(lookup(strings, np.array(codes, dtype=np.int64)))


def place_restored(
    partitions: dict[Scope, R],
    where: dict[Key, tuple[Scope, int]] | None,
    partition: R,
    entry: Mapping[str, object],
    ids: np.ndarray,
    strings: np.ndarray,
) -> None:
    """Finish restoring ``partition`` (its columns set by the caller): its ids and counters from
    ``entry`` (:func:`partition_entry`), its place in ``partitions``, its live rows in ``where``
    (unless None: see :func:`restored_where`)."""
    size = int(entry["size"])  # type: ignore[call-overload]
    partition.ids = lookup(strings, ids)
    if len(partition.ids) != size:
        raise SnapshotError("the snapshot's ids do not fit its rows")
    partition.size = size
    partition.dead = int(entry["dead"])  # type: ignore[call-overload]
    partition.expiring = int(entry["expiring"])  # type: ignore[call-overload]
    partition.invalid = int(entry["invalid"])  # type: ignore[call-overload]
    user = lookup(strings, np.array([entry["user"]], dtype=np.int64))[0]
    message = bool(entry["message"])
    scope: Scope = (user, message)
    if scope in partitions:
        raise SnapshotError("the snapshot names a partition twice")
    partitions[scope] = partition
    if where is not None:
        add_live_rows(where, scope, partition)


def add_live_rows(where: dict[Key, tuple[Scope, int]], scope: Scope, partition: _Restorable) -> None:
    message = scope[1]
    size = partition.size
    names = partition.ids
    if partition.dead:
        rows = np.flatnonzero(partition.alive[:size]).tolist()
        keys: Iterable[Key] = zip(repeat(message), (names[row] for row in rows))
        where.update(zip(keys, zip(repeat(scope), rows)))
    else:
        where.update(zip(zip(repeat(message), names), zip(repeat(scope), range(size))))


Placement = tuple[Mapping[Scope, _Restorable], dict[Key, tuple[Scope, int]]]
"""An index's partitions and where each live key is in them."""


def restored_where(partitions: Mapping[Scope, _Restorable], like: Placement | None) -> dict[Key, tuple[Scope, int]]:
    """Where each live key of restored ``partitions`` is: a copy of ``like``'s map (the other
    index's, restored first) when that index holds exactly the same rows, the same ids in the
    same places and none dead (the ids lists are compared by identity first: a restored store's
    caches share one string object per id), else built row by row."""
    if like is not None:
        other, where = like
        if (
            other.keys() == partitions.keys()
            and len(where) == sum(partition.size for partition in partitions.values())
            and all(
                partition.dead == 0 and other[scope].dead == 0 and partition.ids == other[scope].ids
                for scope, partition in partitions.items()
            )
        ):
            return where.copy()
    built: dict[Key, tuple[Scope, int]] = {}
    for scope, partition in partitions.items():
        add_live_rows(built, scope, partition)
    return built


def restore_or_clear(clear: Callable[[], None], restore: Callable[[], None], what: str) -> None:
    """Run ``restore`` on a cleared index; if anything in the snapshot does not fit, leave the
    index empty and raise :class:`SnapshotError`."""
    clear()
    try:
        restore()
    except SnapshotError:
        clear()
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        clear()
        raise SnapshotError(f"the {what} snapshot is damaged: {exc}") from exc


class NumpyVectorIndex:
    """Cosine search over L2-normalised float32 vectors, one partition per user id and kind
    (records, messages).

    A search scoped to one user scans only that user's partitions of the kinds it asks for, so
    its cost follows the scoped row count, not the store size. Exact unless
    ``vector_search="auto"`` and a partition holds more than ``approximate_min_rows`` live rows
    (see the module docstring).
    Not thread-safe: the store serialises access.
    """

    def __init__(
        self,
        no_expiry: int,
        *,
        vector_search: str = "auto",
        approximate_min_rows: int = APPROXIMATE_MIN_ROWS,
        candidates_min: int = CANDIDATES_MIN,
        candidates_per_result: int = CANDIDATES_PER_RESULT,
    ) -> None:
        if vector_search not in VECTOR_SEARCH_MODES:
            raise ValueError(f"vector_search must be one of {VECTOR_SEARCH_MODES}, not {vector_search!r}.")
        for name, value in (
            ("approximate_min_rows", approximate_min_rows),
            ("candidates_min", candidates_min),
            ("candidates_per_result", candidates_per_result),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer.")
        self.vector_search = vector_search
        self.approximate_min_rows = approximate_min_rows
        self._candidates_min = max(1, candidates_min)
        self._candidates_per_result = candidates_per_result
        self._no_expiry = no_expiry
        self._partitions: dict[Scope, _Partition] = {}
        self._where: dict[Key, tuple[Scope, int]] = {}
        self._codes = _Codes()
        self.dimension: int | None = None
        self._expected: dict[Scope, int] = {}  # see expect()

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def clear(self) -> None:
        self._partitions.clear()
        self._where.clear()
        self._codes = _Codes()
        self.dimension = None
        self._expected = {}

    def expect(self, rows: Mapping[Scope, int]) -> None:
        """At most how many rows each partition will get from the upserts up to
        :meth:`finish_loading` (a rebuild counts them first): a partition is then allocated once,
        with the slack of a restored one, instead of doubling (each doubling copies the matrix
        and holds it twice meanwhile). Rows counted but never written cost address space only:
        the pages of a zeroed array are not resident until written."""
        self._expected = dict(rows)

    def finish_loading(self) -> None:
        """Partitions created from now on start small again (see :meth:`expect`)."""
        self._expected = {}

    @property
    def _words(self) -> int:
        """Sign-bit words per row (0: no bits are kept, every search is exact)."""
        if self.vector_search == "exact" or self.dimension is None:
            return 0
        return words_for(self.dimension)

    def candidates(self, limit: int) -> int:
        """Rows the first pass keeps for exact re-scoring, for a search of ``limit`` results."""
        return max(self._candidates_min, self._candidates_per_result * limit)

    def approximate(self, user: str | None, message: bool = False) -> bool:
        """Whether a search of this user's records (``message``: messages) takes the two-pass path."""
        partition = self._partitions.get((user, message))
        return partition is not None and self._two_pass(partition)

    def _two_pass(self, partition: _Partition) -> bool:
        """Whether ``partition`` is searched in two passes; if so, its sign bits are packed."""
        words = self._words
        if not words or partition.live <= self.approximate_min_rows:
            return False
        partition.pack(words)
        return True

    def code(self, value: str | None) -> int:
        """The code of an agent/thread id for :class:`VectorFilter` (``NO_CODE`` if unseen)."""
        return self._codes.lookup(value)

    def export(self, strings: StringTable, prefix: str) -> tuple[dict[str, object], dict[str, RegionSource]]:
        """The index as snapshot regions (see :mod:`.snapshot`), views of the live arrays (the
        ids coded when the writer reaches them): the caller writes them before the index
        changes again."""
        partitions: list[dict[str, object]] = []
        regions: dict[str, RegionSource] = {}
        for number, (scope, partition) in enumerate(self._partitions.items()):
            size = partition.size
            capacity = slack(size)
            name = f"{prefix}{number}."
            partitions.append(partition_entry(strings, scope, partition))
            for column in _COLUMNS:
                regions[name + column] = Region(getattr(partition, column)[:size], capacity)
            regions[name + "bits"] = Region(partition.bits[:, :size], capacity, axis=1)
            regions[name + "ids"] = partial(strings.region, partition.ids[:size])
        meta = {
            "dimension": self.dimension,
            "codes": strings.codes(self._codes.names()).tolist(),
            "partitions": partitions,
        }
        return meta, regions

    def restore(
        self,
        meta: Mapping[str, object],
        arrays: Mapping[str, np.ndarray],
        strings: np.ndarray,
        prefix: str,
        like: Placement | None = None,
    ) -> None:
        """Replace the whole index with a snapshot's (:meth:`export`); the arrays (the process's
        own, see :func:`.snapshot.read_snapshot`) are used as they are; ``like``: another
        restored index's placement, shared if it holds the same rows (:func:`restored_where`).
        Raises :class:`SnapshotError` (leaving the index empty) if anything does not fit."""
        restore_or_clear(self.clear, lambda: self._restore(meta, arrays, strings, prefix, like), "vector")

    def _restore(
        self,
        meta: Mapping[str, object],
        arrays: Mapping[str, np.ndarray],
        strings: np.ndarray,
        prefix: str,
        like: Placement | None,
    ) -> None:
        dimension = meta["dimension"]
        if dimension is not None and (not isinstance(dimension, int) or dimension < 1):
            raise SnapshotError("the vector snapshot's dimension is damaged")
        self.dimension = dimension
        self._codes = restored_codes(meta, strings)
        for number, entry in enumerate(partition_entries(meta)):
            size = int(entry["size"])  # type: ignore[call-overload]
            capacity = slack(size)
            name = f"{prefix}{number}."
            partition = _Partition.__new__(_Partition)
            for column in _COLUMNS:
                setattr(partition, column, restored_column(arrays, name + column, capacity))
            if dimension is None or partition.vectors.shape != (capacity, dimension):
                raise SnapshotError("the vector snapshot's matrix does not fit its dimension")
            bits = arrays[name + "bits"]
            if bits.ndim != 2 or bits.shape[1] != capacity or bits.shape[0] not in (0, words_for(dimension)):
                raise SnapshotError("the vector snapshot's sign bits are damaged")
            if self._words == 0:
                bits = np.zeros((0, capacity), dtype=np.uint64)
            partition.bits = bits
            place_restored(self._partitions, None, partition, entry, arrays[name + "ids"], strings)
            self._two_pass(partition)
        self._where = restored_where(self._partitions, like)

    def partition_sizes(self) -> dict[str | None, int]:
        """Live rows per user, records and messages together (for tests and diagnostics)."""
        sizes: dict[str | None, int] = {}
        for (user, _message), partition in self._partitions.items():
            sizes[user] = sizes.get(user, 0) + partition.live
        return sizes

    def upsert(self, batch: IndexBatch, *, new: bool = False) -> None:
        """Insert or replace rows in bulk: one vectorised scatter per partition.

        Keys must be unique within a batch; ``new``: the caller knows none is in the index
        (a rebuild), so none is looked up.
        """
        n = len(batch)
        if n == 0:
            return
        dimension = len(batch.blobs[0]) // 4
        if self.dimension is None:
            self.dimension = dimension
        if any(len(blob) != 4 * self.dimension for blob in batch.blobs):
            raise StorageError("stored embeddings have inconsistent dimensions; the store file is damaged.")
        columns = _Columns(
            matrix=np.frombuffer(b"".join(batch.blobs), dtype="<f4").reshape(n, self.dimension),
            types=np.array(batch.types, dtype=np.int8),
            agents=self._codes.intern(batch.agents),
            threads=self._codes.intern(batch.threads),
            valid=np.array(batch.valid, dtype=bool),
            expires=np.array(batch.expires, dtype=np.int64),
        )
        scopes = [(user, key[0]) for user, key in zip(batch.users, batch.keys)]
        groups: dict[Scope, list[int]] = {}
        for i, scope in enumerate(scopes):
            groups.setdefault(scope, []).append(i)
        where = self._where
        if where and not new:
            moved = [
                key
                for key, scope in zip(batch.keys, scopes)
                if (found := where.get(key)) is not None and found[0] != scope
            ]
            if moved:  # a row changing user scope leaves its old partition
                self.remove(moved)
        for scope, members in groups.items():
            partition = self._partitions.get(scope)
            if partition is None:
                expected = self._expected.get(scope)
                capacity = _MIN_CAPACITY if expected is None else slack(expected)
                partition = self._partitions[scope] = _Partition(self.dimension, capacity)
            old_rows, old_src, new_src = [], [], []
            if not where or new:
                new_src = members
            else:
                for i in members:
                    found = where.get(batch.keys[i])
                    if found is None:
                        new_src.append(i)
                    else:
                        old_rows.append(found[1])
                        old_src.append(i)
            if old_rows:
                partition.write(np.array(old_rows), np.array(old_src), columns, self._no_expiry)
            if new_src:
                partition.reserve(len(new_src))
                start = partition.size
                stop = start + len(new_src)
                partition.size = stop
                keys = batch.keys if len(new_src) == n else [batch.keys[i] for i in new_src]
                partition.ids.extend(key[1] for key in keys)
                # A whole batch landing in one partition (a single-user bulk load) is copied as
                # slices; otherwise rows are gathered from the batch by index.
                src = slice(None) if len(new_src) == n else np.array(new_src)
                partition.write(slice(start, stop), src, columns, self._no_expiry)
                where.update(zip(keys, zip(repeat(scope), range(start, stop))))
            self._two_pass(partition)  # packs the sign bits when the partition crosses the threshold

    def remove(self, keys: Iterable[Key]) -> None:
        by_partition: dict[Scope, list[int]] = {}
        for key in keys:
            found = self._where.pop(key, None)
            if found is not None:
                by_partition.setdefault(found[0], []).append(found[1])
        for scope, rows in by_partition.items():
            partition = self._partitions[scope]
            partition.kill(np.array(rows), self._no_expiry)
            if partition.live == 0:
                del self._partitions[scope]
            elif partition.dead > _COMPACT_RATIO * partition.size:
                ids = partition.compact()
                keys = [(scope[1], row_id) for row_id in ids]
                self._where.update(zip(keys, zip(repeat(scope), range(len(ids)))))

    def search(self, query: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorCandidate]:
        """The best ``limit`` admitted rows (more only when tied), best first.

        ``query`` must be L2-normalised float32 of the index dimension.
        """
        if flt.agent_code == NO_CODE or flt.thread_code == NO_CODE:
            return []
        partitions, allowed = select_partitions(self._partitions, self._where, flt)
        # A message partition holds one type, admitted (it is searched only then); a record
        # partition needs the type check unless every memory type is asked for.
        check_records = not _RECORD_CODES <= flt.type_codes
        query64 = query.astype(np.float64)
        query_bits: np.ndarray | None = None
        found: list[VectorCandidate] = []
        small: list[tuple[_Partition, np.ndarray | None, bool]] = []  # scanned together, below
        for scope, partition in partitions:
            allowed_rows = None
            if flt.allowed is not None:
                allowed_rows = np.zeros(partition.size, dtype=bool)
                allowed_rows[allowed.get(scope, [])] = True
            check_types = check_records and not scope[1]
            if self._two_pass(partition):
                if query_bits is None:
                    query_bits = sign_bits(query[None, :], self._words)[0]
                found.extend(
                    partition.top(
                        query,
                        query64,
                        flt,
                        limit,
                        allowed_rows,
                        self.candidates(limit),
                        query_bits,
                        check_types=check_types,
                    )
                )
            elif len(partitions) == 1:
                found.extend(partition.top(query, query64, flt, limit, allowed_rows, check_types=check_types))
            elif partition.size:
                small.append((partition, allowed_rows, check_types))
        if small:
            found.extend(self._scan_together(small, query, query64, flt, limit))
        found.sort(key=lambda c: (-c[0], c[1], c[2]))
        return found[:limit]

    @staticmethod
    def _scan_together(
        parts: list[tuple[_Partition, np.ndarray | None, bool]],
        query: np.ndarray,
        query64: np.ndarray,
        flt: VectorFilter,
        limit: int,
    ) -> list[VectorCandidate]:
        """Exact search over many partitions (an unscoped query over many users, or a user's
        records and messages): score each partition's rows, then choose the best ``limit`` of
        all of them at once, so the per-row selection and rescoring run once, not once per
        partition."""
        pieces: list[np.ndarray] = []
        for partition, allowed_rows, check_types in parts:
            scores = partition.vectors[: partition.size] @ query
            mask = filter_mask(partition, slice(0, partition.size), flt, allowed_rows, check_types)
            if mask is not None:
                scores[~mask] = -np.inf
            pieces.append(scores)
        scores = np.concatenate(pieces)
        admitted = int(np.count_nonzero(scores > -np.inf))
        if admitted == 0:
            return []
        take = min(limit, admitted)
        total = len(scores)
        kth = np.partition(scores, total - take)[total - take]
        hits = np.flatnonzero((scores >= kth - _TIE_MARGIN) & (scores > -np.inf))
        offsets = np.cumsum([0, *(len(piece) for piece in pieces)])
        owner = np.searchsorted(offsets, hits, side="right") - 1
        found: list[VectorCandidate] = []
        for index in np.unique(owner).tolist():
            rows = hits[owner == index] - offsets[index]
            found.extend(parts[index][0].rescored(rows, query64))
        return found
