"""The Oracle message repository keeps each message's chunk text its keyword text.

``Tables`` answers the recording fake connection as a database holding MESSAGE and RECORD_CHUNKS
would: it recognises each statement the repository sends by its SQL text (rendered by the same
builders) and applies it to rows kept in dictionaries. After every write, each stored message's
chunk text must be ``keyword_text`` of it after the stored message just before it in its thread
(by seq, expired or not), as the other stores index it.
"""

from __future__ import annotations

import array
import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from palimpsest.adapters.oracle import statements as st
from palimpsest.adapters.oracle.connection import ConnectionSource
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.oracle.schema import SchemaManager
from palimpsest.adapters.oracle.unit_of_work import OracleUnitOfWork, StoreContext
from palimpsest.domain.model import Message, RecordStatus, RecordType, keyword_text, speaker_of

from .fakes import Call, FakePool

NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
NAMES = StoreNames("acme")
E1 = (1.0, 0.0, 0.0, 0.0)


def _sample_message() -> Message:
    return Message(id="m", thread_id="t", role="user", content="x", seq=1, created_at=NOW)


def _statement_names() -> dict[str, str]:
    """SQL text -> statement name, for every statement these writes may send."""
    m = _sample_message()
    chunk = {
        "source_id": "m",
        "record_type": RecordType.MESSAGE,
        "content": "x",
        "user_id": None,
        "agent_id": None,
        "status": RecordStatus.VALID,
        "expires_at": None,
        "created_at": NOW,
    }
    built = [
        st.message_insert(NAMES, m),
        st.message_update(NAMES, m),
        st.message_delete(NAMES, "m"),
        st.message_place(NAMES, "m"),
        st.message_place(NAMES, "m", with_text=True),
        st.message_before(NAMES, "t", 1),
        st.message_after(NAMES, "t", 1),
        st.messages_expired(NAMES, NOW),
        st.chunk_insert(NAMES, thread_id="t", vector=None, **chunk),
        st.chunk_insert(NAMES, thread_id="t", vector=array.array("f", E1), **chunk),
        st.chunk_update(NAMES, **chunk),
        st.chunk_update(NAMES, vector=None, **chunk),
        st.chunk_update(NAMES, vector=array.array("f", E1), **chunk),
        st.chunk_text_update(NAMES, "m", "x"),
        st.chunk_delete(NAMES, "m", message=True),
        st.savepoint(1),
        st.savepoint(2),
    ]
    return {s.sql: s.name for s in built}


STATEMENTS = _statement_names()


@dataclasses.dataclass
class Row:
    thread_id: str
    seq: int
    content: str | None  # Oracle keeps '' as NULL
    metadata: str | None
    expires_at: datetime | None


@dataclasses.dataclass
class Chunk:
    text: str | None
    embedding: Any


@dataclasses.dataclass
class Tables:
    """MESSAGE and RECORD_CHUNKS as a responder of the fake connection (see the module docstring)."""

    messages: dict[str, Row] = dataclasses.field(default_factory=dict)
    chunks: dict[str, Chunk] = dataclasses.field(default_factory=dict)
    names: list[str] = dataclasses.field(default_factory=list)

    def __call__(self, sql: str, binds: dict[str, Any]) -> Any:
        if "PALIMPSEST_STORES" in sql and sql.lstrip().startswith("SELECT"):
            return [(json.dumps({"embedding_dimension": 4, "vector_index": "hnsw"}), 1, "CREATED")]
        name = STATEMENTS.get(sql)
        if name is None:
            raise AssertionError(f"a statement the model does not know:\n{sql}")
        self.names.append(name)
        handler: Callable[[dict[str, Any]], Any] = getattr(self, "_" + name.replace(".", "_"))
        return handler(binds)

    # --- messages
    def _messages_insert(self, b: dict[str, Any]) -> int:
        assert b["record_id"] not in self.messages
        taken = {(r.thread_id, r.seq) for r in self.messages.values()}
        assert (b["thread_id"], b["order_seq"]) not in taken
        self.messages[b["record_id"]] = Row(
            b["thread_id"], b["order_seq"], b["content"] or None, b["metadata"], b["expires_at"]
        )
        return 1

    def _messages_update(self, b: dict[str, Any]) -> int:
        row = self.messages.get(b["record_id"])
        if row is None:
            return 0
        row.content, row.metadata, row.expires_at = b["content"] or None, b["metadata"], b["expires_at"]
        return 1

    def _messages_delete(self, b: dict[str, Any]) -> int:
        return 0 if self.messages.pop(b["record_id"], None) is None else 1

    def _messages_place(self, b: dict[str, Any]) -> list[tuple[Any, ...]]:
        row = self.messages.get(b["record_id"])
        return [] if row is None else [(row.thread_id, row.seq)]

    def _messages_place_with_text(self, b: dict[str, Any]) -> list[tuple[Any, ...]]:
        row = self.messages.get(b["record_id"])
        return [] if row is None else [(row.thread_id, row.seq, row.content, row.metadata)]

    def _thread(self, thread_id: str) -> list[tuple[str, Row]]:
        return sorted(
            ((i, r) for i, r in self.messages.items() if r.thread_id == thread_id), key=lambda p: p[1].seq
        )

    def _messages_before(self, b: dict[str, Any]) -> list[tuple[Any, ...]]:
        below = [r for _, r in self._thread(b["thread_id"]) if r.seq < b["order_seq"]]
        return [(below[-1].content, below[-1].metadata)] if below else []

    def _messages_after(self, b: dict[str, Any]) -> list[tuple[Any, ...]]:
        above = [(i, r) for i, r in self._thread(b["thread_id"]) if r.seq > b["order_seq"]]
        return [(above[0][0], above[0][1].seq, above[0][1].content, above[0][1].metadata)] if above else []

    def _messages_expired(self, b: dict[str, Any]) -> list[tuple[Any, ...]]:
        now = b["now"]
        return [
            (i, r.thread_id, r.seq) for i, r in self.messages.items() if r.expires_at and r.expires_at <= now
        ]

    # --- chunks (of messages only)
    def _insert_chunk(self, b: dict[str, Any], embedding: Any) -> int:
        assert b["source_record_type"] == "message" and b["source_id"] not in self.chunks
        self.chunks[b["source_id"]] = Chunk(b["chunk_text"] or None, embedding)
        return 1

    def _chunks_insert(self, b: dict[str, Any]) -> int:
        return self._insert_chunk(b, b["embedding"])

    def _chunks_insert_without_vector(self, b: dict[str, Any]) -> int:
        return self._insert_chunk(b, None)

    def _update_chunk(self, b: dict[str, Any], **embedding: Any) -> int:
        chunk = self.chunks.get(b["source_id"])
        if chunk is None:
            return 0
        chunk.text = b["chunk_text"] or None
        if embedding:
            chunk.embedding = embedding["embedding"]
        return 1

    def _chunks_update(self, b: dict[str, Any]) -> int:
        return self._update_chunk(b)

    def _chunks_update_drop_vector(self, b: dict[str, Any]) -> int:
        return self._update_chunk(b, embedding=None)

    def _chunks_update_vector(self, b: dict[str, Any]) -> int:
        return self._update_chunk(b, embedding=b["embedding"])

    def _chunks_update_text(self, b: dict[str, Any]) -> int:
        assert set(b) == {"chunk_text", "source_record_type", "source_id", "chunk_seq"}
        return self._update_chunk(b)

    def _chunks_delete_message(self, b: dict[str, Any]) -> int:
        return 0 if self.chunks.pop(b["source_id"], None) is None else 1

    def _uow_savepoint(self, b: dict[str, Any]) -> int:
        return 0

    # --- what the chunks should hold
    def expected_texts(self) -> dict[str, str]:
        """Each message's keyword text after the stored message just before it in its thread."""
        expected: dict[str, str] = {}
        for thread_id in {r.thread_id for r in self.messages.values()}:
            before: Row | None = None
            for message_id, row in self._thread(thread_id):
                speaker = speaker_of(json.loads(row.metadata) if row.metadata else None)
                if before is None:
                    text = keyword_text(row.content or "", speaker)
                else:
                    before_speaker = speaker_of(json.loads(before.metadata) if before.metadata else None)
                    text = keyword_text(row.content or "", speaker, before.content or "", before_speaker)
                expected[message_id] = text
                before = row
        return expected

    def texts(self) -> dict[str, str]:
        return {i: c.text or "" for i, c in self.chunks.items()}


def message(
    message_id: str,
    seq: int,
    content: str,
    speaker: str | None = None,
    *,
    thread_id: str = "t1",
    expires_at: datetime | None = None,
) -> Message:
    return Message(
        id=message_id,
        thread_id=thread_id,
        role="user",
        content=content,
        seq=seq,
        created_at=NOW,
        metadata={"speaker": speaker} if speaker is not None else None,
        expires_at=expires_at,
    )


def renamed(m: Message, speaker: str | None) -> Message:
    return dataclasses.replace(m, metadata={"speaker": speaker} if speaker is not None else None)


class Store:
    """Units of work over one ``Tables``; each call below is one committed unit of work."""

    def __init__(self) -> None:
        self.tables = Tables()
        self.pool = FakePool(self.tables)
        self.context = StoreContext(
            names=NAMES, source=ConnectionSource(self.pool), schema=SchemaManager(NAMES)
        )

    def write(self, action: Callable[[Any], Any]) -> Any:
        with OracleUnitOfWork(self.context) as uow:
            result = action(uow.messages)
            uow.commit()
        return result

    def statements(self, action: Callable[[Any], Any]) -> list[str]:
        """The names of the statements ``action`` sent (one committed unit of work)."""
        start = len(self.tables.names)
        self.write(action)
        return self.tables.names[start:]

    def calls(self, name: str) -> list[Call]:
        return [c for c in self.pool.log if c.sql is not None and STATEMENTS.get(c.sql) == name]

    def check(self) -> None:
        assert self.tables.texts() == self.tables.expected_texts()


def conversation(store: Store) -> None:
    """t1: 1 Ann "hi", 2 Bob "hello", 3 (unnamed) "noted", 4 Ann "bye"."""
    store.write(lambda r: r.add(message("m1", 1, "hi", "Ann")))
    store.write(lambda r: r.add(message("m2", 2, "hello", "Bob")))
    store.write(lambda r: r.add_many([message("m4", 4, "bye", "Ann"), message("m3", 3, "noted")]))


# --- add and add_many ------------------------------------------------------------------------------


def test_an_added_named_message_reads_the_stored_message_before_it() -> None:
    store = Store()
    conversation(store)
    assert store.tables.texts() == {
        "m1": "Ann: hi",
        "m2": "Ann: hi\nBob: hello",
        "m3": "noted",
        "m4": "Ann: bye",  # the message before it has no speaker
    }
    store.check()


def test_a_batch_reads_its_own_messages_and_asks_once_per_thread_for_a_named_first() -> None:
    store = Store()
    store.write(lambda r: r.add(message("a1", 1, "hi", "Ann")))
    store.write(lambda r: r.add(message("b1", 1, "yo", "Cy", thread_id="t2")))
    batch = [
        message("b3", 3, "later", "Dee", thread_id="t2"),
        message("a2", 2, "hello", "Bob"),
        message("b2", 2, "sup", "Dee", thread_id="t2"),
        message("a3", 3, "how are you", "Ann"),
    ]
    names = store.statements(lambda r: r.add_many(batch, [E1, None, None, E1]))
    assert names.count("messages.before") == 2
    assert [c.binds for c in store.calls("messages.before")[-2:]] == [
        {"thread_id": "t1", "order_seq": 2},
        {"thread_id": "t2", "order_seq": 2},
    ]
    texts = store.tables.texts()
    assert texts["a2"] == "Ann: hi\nBob: hello" and texts["a3"] == "Bob: hello\nAnn: how are you"
    assert texts["b2"] == "Cy: yo\nDee: sup" and texts["b3"] == "Dee: sup\nDee: later"
    assert store.tables.chunks["a2"].embedding is None and store.tables.chunks["b3"].embedding is not None
    store.check()


def test_unnamed_messages_ask_for_nothing_before_them() -> None:
    store = Store()
    store.write(lambda r: r.add(message("m1", 1, "hi", "Ann")))
    assert "messages.before" not in store.statements(lambda r: r.add(message("m2", 2, "hello")))
    batch = [message("m3", 3, "a"), message("m4", 4, "b", "Bob")]
    assert "messages.before" not in store.statements(lambda r: r.add_many(batch))
    assert store.tables.texts()["m2"] == "hello"
    store.check()


# --- update ----------------------------------------------------------------------------------------


def test_editing_a_named_message_rewrites_it_and_the_text_of_the_message_after_it() -> None:
    store = Store()
    store.write(lambda r: r.add(message("m1", 1, "hi", "Ann")))
    store.write(lambda r: r.add(message("m2", 2, "hello", "Bob"), embedding=E1))
    store.write(lambda r: r.add(message("m3", 3, "bye", "Ann")))
    vector = store.tables.chunks["m2"].embedding
    names = store.statements(lambda r: r.update(message("m1", 1, "good morning", "Ann")))
    assert names == [
        "messages.place_with_text",
        "uow.savepoint",
        "messages.update",
        "messages.before",
        "chunks.update",
        "messages.after",
        "chunks.update_text",
    ]
    (rewrite,) = store.calls("chunks.update_text")
    assert rewrite.binds == {
        "chunk_text": "Ann: good morning\nBob: hello",
        "source_record_type": "message",
        "source_id": "m2",
        "chunk_seq": 1,
    }
    assert store.tables.chunks["m2"].embedding is vector  # the follower keeps its vector
    store.check()


def test_a_new_speaker_or_none_is_read_by_the_message_after_it() -> None:
    store = Store()
    conversation(store)
    store.write(lambda r: r.update(renamed(message("m1", 1, "hi"), "Cat")))
    assert store.tables.texts()["m2"] == "Cat: hi\nBob: hello"
    store.write(lambda r: r.update(message("m1", 1, "hi")))
    assert store.tables.texts()["m2"] == "Bob: hello"
    store.write(lambda r: r.update(message("m3", 3, "noted", "Cat")))  # names m3: m4 reads it now
    assert store.tables.texts()["m3"] == "Bob: hello\nCat: noted"
    assert store.tables.texts()["m4"] == "Cat: noted\nAnn: bye"
    store.check()


def test_an_edit_that_leaves_what_the_next_message_reads_asks_nothing_after() -> None:
    store = Store()
    conversation(store)
    later = NOW + timedelta(days=1)
    names = store.statements(lambda r: r.update(message("m2", 2, "hello", "Bob", expires_at=later)))
    assert "messages.after" not in names and "chunks.update_text" not in names
    names = store.statements(lambda r: r.update(message("m3", 3, "seen")))  # unnamed before and after
    assert "messages.after" not in names and "messages.before" not in names
    store.check()


def test_the_last_message_edited_has_no_follower_to_rewrite() -> None:
    store = Store()
    conversation(store)
    names = store.statements(lambda r: r.update(message("m4", 4, "see you", "Ann")))
    assert names[-1] == "messages.after" and "chunks.update_text" not in names
    store.check()


# --- delete ----------------------------------------------------------------------------------------


def test_deleting_a_message_makes_the_next_read_the_one_before_it() -> None:
    store = Store()
    store.write(lambda r: r.add(message("m1", 1, "hi", "Ann")))
    store.write(lambda r: r.add(message("m2", 2, "hello", "Bob")))
    store.write(lambda r: r.add(message("m3", 3, "bye", "Cat")))
    assert store.statements(lambda r: r.delete("m2")) == [
        "messages.place",
        "uow.savepoint",
        "messages.delete",
        "chunks.delete_message",
        "messages.after",
        "messages.before",
        "chunks.update_text",
    ]
    assert store.tables.texts() == {"m1": "Ann: hi", "m3": "Ann: hi\nCat: bye"}
    store.write(lambda r: r.delete("m1"))
    assert store.tables.texts() == {"m3": "Cat: bye"}
    store.check()


def test_an_unnamed_follower_reads_nothing_before_it_and_keeps_its_text() -> None:
    store = Store()
    conversation(store)
    names = store.statements(lambda r: r.delete("m2"))  # m3, unnamed, follows
    assert names[-1] == "messages.after" and "chunks.update_text" not in names
    store.check()


def test_deleting_an_absent_message_writes_nothing() -> None:
    store = Store()
    conversation(store)
    assert store.statements(lambda r: r.delete("ghost")) == ["messages.place"]
    assert store.write(lambda r: r.delete("ghost")) is False
    store.check()


# --- purge -----------------------------------------------------------------------------------------


def test_purging_rewrites_the_survivor_after_each_run_of_purged_messages() -> None:
    store = Store()
    old = NOW - timedelta(days=1)
    t1 = [
        message("a1", 1, "one", "Ann"),
        message("a2", 2, "two", "Bob", expires_at=old),
        message("a3", 3, "three", "Ann", expires_at=old),
        message("a4", 4, "four", "Bob"),
        message("a5", 5, "five", "Ann", expires_at=old),
        message("a6", 6, "six", "Bob"),
        message("a7", 7, "seven", "Ann", expires_at=old),
    ]
    t2 = [
        message("b1", 1, "un", "Cy", thread_id="t2", expires_at=old),
        message("b2", 2, "deux", "Dee", thread_id="t2"),
    ]
    store.write(lambda r: r.add_many(t1 + t2))
    purged = store.write(lambda r: r.purge_expired(NOW))
    assert purged == [("t1", 2), ("t1", 3), ("t1", 5), ("t1", 7), ("t2", 1)]
    assert store.tables.texts() == {
        "a1": "Ann: one",
        "a4": "Ann: one\nBob: four",
        "a6": "Bob: four\nBob: six",
        "b2": "Dee: deux",
    }
    # one follower asked for per run of purged seqs (2-3, 5, 7 in t1; 1 in t2)
    assert [c.binds["order_seq"] for c in store.calls("messages.after")] == [2, 5, 7, 1]
    assert [c.binds["source_id"] for c in store.calls("chunks.update_text")] == ["a4", "a6", "b2"]
    store.check()


# --- any sequence of writes --------------------------------------------------------------------------

SPEAKERS = hs.sampled_from([None, "Ann", "Bob", " "])
WORDS = hs.sampled_from(["", "hi", "hello there", "bye"])
EXPIRY = hs.sampled_from([None, NOW - timedelta(days=1), NOW + timedelta(days=1)])
OPS = hs.lists(
    hs.one_of(
        hs.tuples(
            hs.just("append"),
            hs.sampled_from(["t1", "t2"]),
            hs.lists(hs.tuples(SPEAKERS, WORDS, EXPIRY), min_size=1, max_size=3),
            hs.integers(1, 3),
        ),
        hs.tuples(hs.just("update"), hs.integers(0, 30), SPEAKERS, WORDS, EXPIRY),
        hs.tuples(hs.just("delete"), hs.integers(0, 30)),
        hs.tuples(
            hs.just("purge"),
        ),
    ),
    max_size=12,
)


def _apply(store: Store, op: Sequence[Any], counter: list[int]) -> None:
    tables = store.tables
    if op[0] == "append":
        _, thread_id, turns, gap = op
        seq = max((r.seq for r in tables.messages.values() if r.thread_id == thread_id), default=0)
        batch = []
        for speaker, words, expires in turns:
            seq += gap
            counter[0] += 1
            batch.append(
                message(f"m{counter[0]}", seq, words, speaker, thread_id=thread_id, expires_at=expires)
            )
        if len(batch) == 1:
            store.write(lambda r: r.add(batch[0]))
        else:
            store.write(lambda r: r.add_many(batch))
        return
    ids = sorted(tables.messages)
    if op[0] == "purge":
        store.write(lambda r: r.purge_expired(NOW))
    elif ids and op[0] == "delete":
        store.write(lambda r: r.delete(ids[op[1] % len(ids)]))
    elif ids and op[0] == "update":
        message_id = ids[op[1] % len(ids)]
        row = tables.messages[message_id]
        edited = message(message_id, row.seq, op[3], op[2], thread_id=row.thread_id, expires_at=op[4])
        store.write(lambda r: r.update(edited))


@settings(max_examples=120, deadline=None)
@given(OPS)
def test_any_sequence_of_appends_edits_deletes_and_purges_keeps_every_chunk_text_current(
    ops: list[tuple[Any, ...]],
) -> None:
    store = Store()
    counter = [0]
    for op in ops:
        _apply(store, op, counter)
        store.check()


@pytest.mark.parametrize("speaker", ["Ann", None])
def test_an_empty_stored_content_reads_as_empty_text(speaker: str | None) -> None:
    # Oracle stores '' as NULL: the message after it reads "Ann: " (or nothing, when unnamed).
    store = Store()
    store.write(lambda r: r.add(message("m1", 1, "", speaker)))
    store.write(lambda r: r.add(message("m2", 2, "hello", "Bob")))
    assert store.tables.texts()["m2"] == ("Ann: \nBob: hello" if speaker else "Bob: hello")
    store.check()
