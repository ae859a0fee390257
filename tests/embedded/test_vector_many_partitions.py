"""Embedded store: a vector search over several partitions is exact.

Partitions are per user and, within a user, per kind (records, messages). A search over many of
them scores every partition and selects the best rows of all of them at once; these properties
pin it to a brute-force scan of the same rows, with filters, removed rows and ties.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from palimpsest.adapters.embedded.codec import MESSAGE_CODE
from palimpsest.adapters.embedded.vector_index import IndexBatch, NumpyVectorIndex
from palimpsest.domain.sentinel import ANY

from .test_vector_two_pass import ALL_TYPES, FACT, GUIDELINE, NEVER, PREFERENCE, batch, flt, unit

TYPES = (FACT, PREFERENCE, GUIDELINE)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    users=st.integers(2, 12),
    per_user=st.integers(1, 30),
    limit=st.integers(1, 25),
    removed=st.floats(0.0, 0.7),
    only_facts=st.booleans(),
    valid_only=st.booleans(),
    duplicates=st.booleans(),
)
def test_an_unscoped_search_matches_a_brute_force_scan(
    seed: int,
    users: int,
    per_user: int,
    limit: int,
    removed: float,
    only_facts: bool,
    valid_only: bool,
    duplicates: bool,
) -> None:
    rng = np.random.default_rng(seed)
    dim = 8
    index = NumpyVectorIndex(NEVER, vector_search="exact")
    rows: dict[str, tuple[np.ndarray, int, bool]] = {}
    base = unit(rng.standard_normal((4, dim)))
    for u in range(users):
        vectors = unit(rng.standard_normal((per_user, dim)))
        if duplicates:  # exact ties across partitions
            vectors[: min(per_user, 4)] = base[: min(per_user, 4)]
        types = rng.choice(TYPES, per_user).tolist()
        valid = (rng.random(per_user) > 0.3).tolist()
        start = u * 1000
        index.upsert(batch(vectors, start=start, user=f"u{u}", types=types, valid=valid))
        for i in range(per_user):
            rows[f"r{start + i:06d}"] = (vectors[i], types[i], valid[i])
    doomed = [key for key in rows if rng.random() < removed]
    index.remove([(False, key) for key in doomed])
    for key in doomed:
        del rows[key]
    query = unit(rng.standard_normal((1, dim)))[0]
    wanted_types = frozenset({FACT}) if only_facts else ALL_TYPES

    found = index.search(
        query, flt(types=wanted_types, include_invalid=not valid_only, user=ANY), limit
    )

    admitted = {
        key: float(np.dot(vector.astype(np.float64), query.astype(np.float64)))
        for key, (vector, type_code, valid) in rows.items()
        if type_code in wanted_types and (valid or not valid_only)
    }
    expected = sorted(admitted.items(), key=lambda item: (-item[1], rows[item[0]][1], item[0]))[:limit]
    assert len(found) == len(expected)
    got_scores = [c[0] for c in found]
    assert np.allclose(got_scores, [score for _key, score in expected], atol=1e-6)
    assert all(c[2] in admitted for c in found)
    assert got_scores == sorted(got_scores, reverse=True)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    users=st.integers(1, 4),
    per_user=st.integers(1, 40),
    limit=st.integers(1, 30),
    removed=st.floats(0.0, 0.7),
    wanted=st.sampled_from(
        [
            frozenset({MESSAGE_CODE}),
            frozenset({FACT}),
            frozenset(TYPES),
            frozenset({FACT, MESSAGE_CODE}),
            ALL_TYPES,
        ]
    ),
    scoped=st.booleans(),
    two_pass=st.booleans(),
)
def test_a_users_records_and_messages_are_separate_partitions_searched_exactly(
    seed: int,
    users: int,
    per_user: int,
    limit: int,
    removed: float,
    wanted: frozenset[int],
    scoped: bool,
    two_pass: bool,
) -> None:
    rng = np.random.default_rng(seed)
    dim = 8
    # Two passes with a candidate budget above every partition's size: exact all the same.
    index = (
        NumpyVectorIndex(NEVER, vector_search="auto", approximate_min_rows=0, candidates_min=1_000)
        if two_pass
        else NumpyVectorIndex(NEVER, vector_search="exact")
    )
    rows: dict[tuple[bool, str], tuple[np.ndarray, int, str]] = {}
    for u in range(users):
        vectors = unit(rng.standard_normal((per_user, dim)))
        vectors[per_user // 2 :] = vectors[: per_user - per_user // 2]  # ties between the kinds
        update = IndexBatch()
        for i, vector in enumerate(vectors):
            message = i % 2 == 1
            key = (message, f"{u}-{i:03d}")
            type_code = MESSAGE_CODE if message else int(rng.choice(TYPES))
            update.append(key, f"u{u}", None, None, type_code, True, NEVER, vector.astype("<f4").tobytes())
            rows[key] = (vector, type_code, f"u{u}")
        index.upsert(update)
    assert set(index._partitions) <= {(f"u{u}", kind) for u in range(users) for kind in (False, True)}
    assert index.partition_sizes() == {
        f"u{u}": sum(1 for _v, _t, user in rows.values() if user == f"u{u}") for u in range(users)
    }
    doomed = [key for key in rows if rng.random() < removed]
    index.remove(doomed)
    for key in doomed:
        del rows[key]
    query = unit(rng.standard_normal((1, dim)))[0]
    user = "u0" if scoped else ANY

    found = index.search(query, flt(types=wanted, user=user), limit)

    admitted = {
        key: float(np.dot(vector.astype(np.float64), query.astype(np.float64)))
        for key, (vector, type_code, owner) in rows.items()
        if type_code in wanted and (not scoped or owner == "u0")
    }
    expected = sorted(admitted.items(), key=lambda item: (-item[1], rows[item[0]][1], item[0][1]))[:limit]
    assert [(c[1], c[2]) for c in found] == [(rows[key][1], key[1]) for key, _score in expected]
    assert np.allclose([c[0] for c in found], [score for _key, score in expected], atol=1e-6)
