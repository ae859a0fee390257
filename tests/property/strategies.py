"""Shared hypothesis strategies for the property tests (one module, as the conventions ask)."""

from __future__ import annotations

from typing import Any

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


def add_record(
    service: Any,
    content: str,
    *,
    record_id: str,
    record_type: str = "memory",
    user_id: str | None = None,
    embedding: Any = None,
) -> Any:
    """Add a record through ``RecordService.add_record_with_link``, the product's add path
    (``AgentMemory.add_memory`` and thread-scoped adds end there), with no link."""
    return service.add_record_with_link(
        content=content,
        record_type=record_type,
        record_id=record_id,
        scope={"user_id": user_id},
        metadata=None,
        timestamp=None,
        expires_at=None,
        embedding=embedding,
        link=None,
    )
