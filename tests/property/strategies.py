"""Shared hypothesis strategies for the property tests (one module, as the conventions ask)."""

from __future__ import annotations

from hypothesis import strategies as st

RELATION_TYPES = ["supersedes", "refines", "duplicates", "supports", "contradicts", "mentions"]
LIFECYCLE = {"supersedes", "refines", "duplicates"}
RECORD_TYPES = ["memory", "fact", "guideline", "preference"]
USERS = ["alice", "bob", None]

relation_types = st.sampled_from(RELATION_TYPES)
record_types = st.sampled_from(RECORD_TYPES)
users = st.sampled_from(USERS)

# Small integer-valued vectors make cosine ties rare but possible, so the comparison with the
# model has to honour the documented tie-break.
vectors = st.lists(st.integers(min_value=-3, max_value=3), min_size=4, max_size=4).filter(any)

record_index = st.integers(min_value=0, max_value=5)

link_ops = st.lists(
    st.one_of(
        st.tuples(st.just("link"), record_index, record_index, relation_types),
        st.tuples(st.just("retype"), st.integers(0, 20), relation_types),
        st.tuples(st.just("unlink"), st.integers(0, 20)),
        st.tuples(st.just("delete_record"), record_index),
        st.tuples(st.just("readd_record"), record_index),
    ),
    max_size=40,
)
