"""Embedded store: an unscoped vector search over many user partitions is exact.

Such a search scores every partition and selects the best rows of all of them at once; these
properties pin it to a brute-force scan of the same rows, with filters, removed rows and ties.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from palimpsest.adapters.embedded import NumpyVectorIndex
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
