"""Shared hypothesis strategies for the property tests (one module, as the conventions ask)."""

from __future__ import annotations

from datetime import UTC, datetime
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


# --- entities, for the JSON codec -------------------------------------------------------------

ids = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x2FF), min_size=1, max_size=20).filter(
    lambda s: bool(s.strip())  # an id of only whitespace (U+00A0, U+0085) is refused by check_id
)
optional_ids = st.none() | ids
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)
contents = texts.filter(str.strip)
times = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
optional_times = st.none() | times
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | texts
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ids, inner, max_size=3),
    max_leaves=8,
)
metadata = st.none() | st.dictionaries(ids, json_values, max_size=4)
memory_types = st.sampled_from(RECORD_TYPES)


@st.composite
def memory_records(draw: st.DrawFn) -> Any:
    from palimpsest.domain.model import MemoryRecord

    invalid = draw(st.booleans())
    return MemoryRecord(
        id=draw(ids),
        record_type=draw(memory_types),
        content=draw(contents),
        created_at=draw(times),
        updated_at=draw(times),
        user_id=draw(optional_ids),
        agent_id=draw(optional_ids),
        thread_id=draw(optional_ids),
        metadata=draw(metadata),
        status="invalid" if invalid else "valid",
        invalidation_reason=draw(st.none() | contents) if invalid else None,
        invalidated_at=draw(optional_times) if invalid else None,
        timestamp=draw(optional_times),
        expires_at=draw(optional_times),
    )


def entities() -> st.SearchStrategy[Any]:
    """Every kind the entity codec converts, with every field drawn."""
    from palimpsest.domain.model import Message, RecordLink, Thread, ThreadSummary

    threads = st.builds(
        Thread,
        id=ids,
        created_at=times,
        updated_at=times,
        user_id=optional_ids,
        agent_id=optional_ids,
        metadata=metadata,
        config=st.dictionaries(ids, json_values, max_size=3),
        state=st.dictionaries(ids, json_values, max_size=3),
    )
    messages = st.builds(
        Message,
        id=ids,
        thread_id=ids,
        role=st.sampled_from(["user", "assistant", "system", "tool"]),
        content=texts,
        seq=st.integers(1, 2**40),
        created_at=times,
        timestamp=optional_times,
        metadata=metadata,
        user_id=optional_ids,
        agent_id=optional_ids,
        expires_at=optional_times,
    )
    links = st.builds(
        RecordLink,
        id=ids,
        source_id=ids,
        source_type=memory_types,
        target_id=ids,
        target_type=memory_types,
        relation_type=ids,
        opposite_relation_type=ids,
        created_at=times,
        metadata=metadata,
        timestamp=optional_times,
    )
    summaries = st.builds(
        ThreadSummary,
        id=ids,
        thread_id=ids,
        revision=st.integers(1, 10_000),
        text=contents,
        created_at=times,
        topics=st.lists(contents, max_size=4).map(tuple),
        covered_through_seq=st.integers(0, 10_000),
        status=st.sampled_from(["valid", "invalid"]),
        user_id=optional_ids,
        agent_id=optional_ids,
        metadata=metadata,
    )
    return st.one_of(threads, messages, memory_records(), links, summaries)
