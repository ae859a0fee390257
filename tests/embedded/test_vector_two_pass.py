"""Embedded store: the two-pass vector search of large partitions (sign bits, then exact re-scoring).

What is pinned here: the first pass draws candidates only from rows that pass every filter; the
final order is exact among the candidates; a filter admitting no more rows than the candidate
budget, and every partition at or below the size threshold, gives exactly the brute-force
answer; recall on clustered data stays high; the sign bits follow every write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.embedded import vector_index as vi
from palimpsest.adapters.embedded.codec import NO_EXPIRY_US, TYPE_CODES
from palimpsest.adapters.embedded.vector_index import (
    IndexBatch,
    NumpyVectorIndex,
    VectorCandidate,
    VectorFilter,
    sign_bits,
)
from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.model import RecordType
from palimpsest.domain.sentinel import ANY

from .helpers import E1, ids, query, record, seed

NEVER = int(NO_EXPIRY_US)
FACT, PREFERENCE, GUIDELINE = (
    TYPE_CODES[t] for t in (RecordType.FACT, RecordType.PREFERENCE, RecordType.GUIDELINE)
)
ALL_TYPES = frozenset(TYPE_CODES.values())


def unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def clustered(
    rng: np.random.Generator, count: int, dim: int, centres: np.ndarray, noise: float
) -> np.ndarray:
    labels = rng.integers(0, len(centres), count)
    return unit(centres[labels] + rng.standard_normal((count, dim)) * (noise / np.sqrt(dim)))


def batch(
    vectors: np.ndarray,
    *,
    start: int = 0,
    user: str | None = "u",
    types: Sequence[int] | None = None,
    agents: Sequence[str | None] | None = None,
    valid: Sequence[bool] | None = None,
    expires: Sequence[int] | None = None,
) -> IndexBatch:
    out = IndexBatch()
    for i, vector in enumerate(vectors):
        out.append(
            (False, f"r{start + i:06d}"),
            user,
            None if agents is None else agents[i],
            None,
            FACT if types is None else types[i],
            True if valid is None else valid[i],
            NEVER if expires is None else expires[i],
            vector.astype("<f4").tobytes(),
        )
    return out


def flt(
    *,
    types: frozenset[int] = ALL_TYPES,
    now_us: int = 0,
    include_invalid: bool = True,
    user: object = "u",
    agent_code: int | None = None,
    allowed: frozenset[tuple[bool, str]] | None = None,
) -> VectorFilter:
    return VectorFilter(
        type_codes=types,
        now_us=now_us,
        include_invalid=include_invalid,
        user_id=user,  # type: ignore[arg-type]
        agent_code=agent_code,
        thread_code=None,
        allowed=allowed,
    )


def two_pass(**kwargs: int) -> NumpyVectorIndex:
    """An index whose every partition takes the two-pass path, with a small candidate budget."""
    settings = {"approximate_min_rows": 0, "candidates_min": 100, "candidates_per_result": 10, **kwargs}
    return NumpyVectorIndex(NEVER, vector_search="auto", **settings)


def exact_index() -> NumpyVectorIndex:
    return NumpyVectorIndex(NEVER, vector_search="exact")


def names(found: list[VectorCandidate]) -> list[str]:
    return [c[2] for c in found]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20_261_201)
    dim = 128
    centres = unit(rng.standard_normal((100, dim)))
    return clustered(rng, 20_000, dim, centres, 1.0), clustered(rng, 60, dim, centres, 1.0)


def test_recall_at_10_on_clustered_vectors_is_high(data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, queries = data
    exact, approx = exact_index(), two_pass(candidates_min=400, candidates_per_result=0)
    exact.upsert(batch(rows))
    approx.upsert(batch(rows))
    assert approx.approximate("u") and not exact.approximate("u")
    hits = 0
    for q in queries:
        truth = exact.search(q, flt(), 10)
        found = approx.search(q, flt(), 10)
        kth = truth[9][0]
        hits += sum(1 for c in found if c[0] >= kth - 1e-9)
        assert len(found) == 10
    assert hits / (10 * len(queries)) >= 0.98  # measured 0.999 with this seed


def test_the_final_order_is_exact_among_the_candidates(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, queries = data
    index = two_pass()
    index.upsert(batch(rows))
    drawn: list[np.ndarray] = []
    original = vi._Partition._nearest_bits

    def spy(self: object, *args: object) -> np.ndarray:
        result = original(self, *args)  # type: ignore[arg-type]
        drawn.append(result)
        return result

    monkeypatch.setattr(vi._Partition, "_nearest_bits", spy)
    for q in queries[:20]:
        drawn.clear()
        found = index.search(q, flt(), 10)
        (candidates,) = drawn
        assert len(candidates) == index.candidates(10) == 100
        assert len(set(candidates.tolist())) == 100
        scores = rows[candidates].astype(np.float64) @ q.astype(np.float64)
        best = sorted(zip(-scores, [f"r{i:06d}" for i in candidates.tolist()]))[:10]
        assert names(found) == [name for _, name in best]
        assert [c[0] for c in found] == pytest.approx([-s for s, _ in best], abs=1e-12)


def test_candidates_are_drawn_only_from_rows_passing_every_filter() -> None:
    rng = np.random.default_rng(3)
    n = 3_000
    rows = unit(rng.standard_normal((n, 16)))
    types = [(FACT, PREFERENCE, GUIDELINE)[i % 3] for i in range(n)]
    agents = ["a1" if i % 4 == 0 else "a2" for i in range(n)]
    valid = [i % 5 != 0 for i in range(n)]
    expires = [10 if i % 7 == 0 else NEVER for i in range(n)]
    allowed = frozenset((False, f"r{i:06d}") for i in range(n) if i % 2 == 0)
    removed = [(False, f"r{i:06d}") for i in range(0, n, 11)]
    approx, exact = two_pass(), exact_index()
    for index in (approx, exact):
        index.upsert(batch(rows, types=types, agents=agents, valid=valid, expires=expires))
        index.remove(removed)
    gone = {key[1] for key in removed}

    def admitted(name: str, f: VectorFilter, agent: str | None) -> bool:
        i = int(name[1:])
        return (
            name not in gone
            and types[i] in f.type_codes
            and (agent is None or agents[i] == agent)
            and (f.include_invalid or valid[i])
            and expires[i] > f.now_us
            and (f.allowed is None or (False, name) in f.allowed)
        )

    cases = [
        (flt(types=frozenset({FACT})), None),
        (flt(include_invalid=False, now_us=100), None),
        (flt(agent_code=approx.code("a1"), types=frozenset({FACT, GUIDELINE})), "a1"),
        (flt(allowed=allowed, now_us=100, include_invalid=False), None),
    ]
    for f, agent in cases:
        assert approx.code("a1") == exact.code("a1")
        count = sum(admitted(f"r{i:06d}", f, agent) for i in range(n))
        for q in unit(rng.standard_normal((5, 16))):
            for k in (10, 50):
                found = approx.search(q, f, k)
                assert len(found) == min(k, count)
                assert all(admitted(name, f, agent) for name in names(found))
                if count <= approx.candidates(k):  # the filter leaves few rows: exact answer
                    assert found == exact.search(q, f, k)


def test_a_filter_admitting_few_rows_of_a_large_partition_gives_the_exact_answer() -> None:
    rng = np.random.default_rng(5)
    rows = unit(rng.standard_normal((5_000, 16)))
    types = [PREFERENCE if i % 100 == 0 else FACT for i in range(5_000)]  # 50 preferences
    approx, exact = two_pass(), exact_index()
    for index in (approx, exact):
        index.upsert(batch(rows, types=types))
    for q in unit(rng.standard_normal((10, 16))):
        f = flt(types=frozenset({PREFERENCE}))
        assert approx.search(q, f, 10) == exact.search(q, f, 10)
        assert len(approx.search(q, f, 80)) == 50


def test_partitions_at_or_below_the_threshold_are_searched_exactly() -> None:
    rng = np.random.default_rng(9)
    rows = unit(rng.standard_normal((2_500, 32)))
    auto = two_pass(approximate_min_rows=1_000, candidates_min=20, candidates_per_result=1)
    exact = exact_index()
    for index in (auto, exact):
        index.upsert(batch(rows[:1_000], user="small"))
        index.upsert(batch(rows[1_000:], start=1_000, user="large"))
    assert not auto.approximate("small") and auto.approximate("large")
    misses = 0
    for q in unit(rng.standard_normal((20, 32))):
        assert auto.search(q, flt(user="small"), 10) == exact.search(q, flt(user="small"), 10)
        misses += auto.search(q, flt(user="large"), 10) != exact.search(q, flt(user="large"), 10)
    assert misses > 0  # the tiny budget on random data: the large partition really is approximate


def test_the_default_threshold_keeps_ordinary_scopes_exact() -> None:
    rng = np.random.default_rng(11)
    rows = unit(rng.standard_normal((3_000, 24)))
    auto, exact = NumpyVectorIndex(NEVER), exact_index()
    assert auto.vector_search == "auto" and auto.approximate_min_rows == vi.APPROXIMATE_MIN_ROWS
    for index in (auto, exact):
        index.upsert(batch(rows))
    assert not auto.approximate("u")
    for q in unit(rng.standard_normal((10, 24))):
        assert auto.search(q, flt(user=ANY), 25) == exact.search(q, flt(user=ANY), 25)


def test_sign_bits_follow_updates_moves_and_compaction() -> None:
    rng = np.random.default_rng(13)
    index = two_pass()
    rows = unit(rng.standard_normal((400, 70)))  # 70 dimensions: two words, the second padded
    index.upsert(batch(rows))
    index.upsert(batch(unit(rng.standard_normal((100, 70))), start=0))  # overwrite 100 rows
    index.upsert(batch(unit(rng.standard_normal((50, 70))), start=100, user="v"))  # 50 move scope
    index.remove([(False, f"r{i:06d}") for i in range(200, 330)])  # enough to compact
    for partition in index._partitions.values():
        n = partition.size
        assert partition.bits.shape[0] == 2
        assert np.array_equal(partition.bits[:, :n], sign_bits(partition.vectors[:n], 2).T)
    assert exact_index()._words == 0
    small = NumpyVectorIndex(NEVER)
    small.upsert(batch(rows))
    assert small._partitions[("u", False)].bits.shape[0] == 0  # below the threshold nothing is packed


def test_the_byte_table_popcount_matches_numpy() -> None:
    words = np.random.default_rng(17).integers(0, 2**63, 2_000, dtype=np.uint64) * np.uint64(2)
    words[:3] = (0, 1, np.iinfo(np.uint64).max)
    expected = np.array([int(w).bit_count() for w in words])
    assert np.array_equal(vi._popcount_table(words), expected)


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        NumpyVectorIndex(NEVER, vector_search="fast")
    with pytest.raises(ValueError):
        NumpyVectorIndex(NEVER, approximate_min_rows=-1)


def test_the_store_takes_the_search_mode_and_refuses_unknown_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        EmbeddedStore(tmp_path / "bad.db", dimension=4, vector_search="approximate")
    with EmbeddedStore(tmp_path / "exact.db", dimension=4, vector_search="exact") as store:
        assert store.vector_search == "exact"
        seed(store, records=[(record("a"), E1)])
        assert ids(store.search(query(vector=E1))) == ["a"]
    with EmbeddedStore(tmp_path / "auto.db", dimension=4) as store:
        assert store.vector_search == "auto"


def test_a_partition_growing_past_the_threshold_packs_its_bits_and_keeps_them_up_to_date() -> None:
    rng = np.random.default_rng(19)
    rows = unit(rng.standard_normal((900, 40)))
    index = two_pass(approximate_min_rows=500)
    index.upsert(batch(rows[:400]))
    assert not index.approximate("u") and index._partitions[("u", False)].bits.shape[0] == 0
    index.upsert(batch(rows[400:], start=400))
    index.upsert(batch(unit(rng.standard_normal((10, 40))), start=5))  # updates after packing
    partition = index._partitions[("u", False)]
    assert index.approximate("u")
    n = partition.size
    assert np.array_equal(partition.bits[:, :n], sign_bits(partition.vectors[:n], 1).T)
