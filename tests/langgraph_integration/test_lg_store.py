"""``PalimpsestStore`` against LangGraph's own store behaviour tests, ported, plus the mapping onto palimpsest.

The ported tests come from LangGraph's ``libs/checkpoint/tests/test_store.py`` (the in-memory
store) and ``libs/checkpoint-sqlite/tests/test_store.py`` (the SQLite store): batches, get/put/
delete, search with filters and pagination, namespace listing with prefixes, suffixes, wildcards
and depth, vector search with LangGraph's character-frequency test embeddings (plugged into the
palimpsest client through ``LangChainEmbedder``), and namespace-label edge cases. They run on the
in-memory and the embedded (SQLite file) palimpsest store. Assertions are LangGraph's, except
where a test pins a SQL implementation detail (left out) or per-field max pooling (adapted and
said so: palimpsest embeds an item's indexed fields as one text).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from clients import build_client

pytest.importorskip(
    "langgraph.store.base", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from lg_doubles import CharacterEmbeddings
from palimpsest.adapters import open_memory
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.adapters.langgraph import LangChainEmbedder, PalimpsestStore
from palimpsest.adapters.langgraph.store import STORE_METADATA_KEY
from palimpsest.domain.errors import ConfigurationError

DIMS = 500


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=DIMS)


@contextmanager
def create_vector_store(
    fake_embeddings: CharacterEmbeddings,
    text_fields: list[str] | None = None,
    conn_type: str = "memory",
    tmp_path: Path | None = None,
) -> Iterator[PalimpsestStore]:
    """A ``PalimpsestStore`` on a fresh client embedding with ``fake_embeddings``."""
    path = None
    if conn_type == "file":
        assert tmp_path is not None
        path = tmp_path / f"store-{uuid.uuid4().hex}.db"
    memory = open_memory(path, embedder=LangChainEmbedder(fake_embeddings, dimension=DIMS))
    try:
        yield PalimpsestStore(memory, index={"dims": DIMS, "fields": text_fields} if text_fields else None)
    finally:
        memory.close()


@pytest.fixture(params=["memory", "file"])
def store(
    request: pytest.FixtureRequest, fake_embeddings: CharacterEmbeddings, tmp_path: Path
) -> Iterator[PalimpsestStore]:
    with create_vector_store(fake_embeddings, conn_type=request.param, tmp_path=tmp_path) as made:
        yield made


# -- batches (checkpoint-sqlite) ------------------------------------------------------------


def test_batch_order(store: PalimpsestStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})

    ops = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    results = store.batch(cast(Iterable[GetOp | PutOp | SearchOp | ListNamespacesOp], ops))
    assert len(results) == 5
    assert isinstance(results[0], Item)
    assert results[0].value == {"data": "value1"}
    assert results[0].key == "key1"
    assert results[0].namespace == ("test", "foo")
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert results[2][0].key == "key1" and results[2][0].value == {"data": "value1"}
    assert isinstance(results[3], list)
    assert ("test", "foo") in results[3] and ("test", "bar") in results[3]
    assert results[4] is None

    ops_reordered = [
        SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
        GetOp(namespace=("test", "bar"), key="key2"),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
        GetOp(namespace=("test", "foo"), key="key1"),
    ]
    results = store.batch(cast(Iterable[GetOp | PutOp | SearchOp | ListNamespacesOp], ops_reordered))
    assert len(results) == 5
    assert isinstance(results[0], list) and len(results[0]) >= 2
    assert isinstance(results[1], Item) and results[1].value == {"data": "value2"}
    assert results[1].namespace == ("test", "bar")
    assert isinstance(results[2], list) and len(results[2]) > 0
    assert results[3] is None
    assert isinstance(results[4], Item) and results[4].value == {"data": "value1"}
    item3 = store.get(("test",), "key3")
    assert item3 is not None and item3.value == {"data": "value3"}


def test_batch_get_ops(store: PalimpsestStore) -> None:
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test",), key="key1"),
            GetOp(namespace=("test",), key="key2"),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert len(results) == 3
    assert results[0] is not None and results[0].key == "key1"
    assert results[1] is not None and results[1].key == "key2"
    assert results[2] is None


def test_batch_put_ops(store: PalimpsestStore) -> None:
    results = store.batch(
        [
            PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
            PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
            PutOp(namespace=("test",), key="key3", value=None),
        ]
    )
    assert results == [None, None, None]
    item1, item2 = store.get(("test",), "key1"), store.get(("test",), "key2")
    assert item1 and item1.value == {"data": "value1"}
    assert item2 and item2.value == {"data": "value2"}
    assert store.get(("test",), "key3") is None


def test_batch_search_ops(store: PalimpsestStore) -> None:
    for namespace, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(namespace, key, value)
    results = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(results[0]) == 2 and all(item.value["tag"] == "a" for item in results[0])
    assert len(results[1]) == 2
    assert len(results[2]) == 1 and results[2][0].namespace == ("test", "foo")


def test_batch_list_namespaces_ops(store: PalimpsestStore) -> None:
    test_data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    results = store.batch(
        [
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
            ListNamespacesOp(
                match_conditions=(MatchCondition("suffix", ("public",)),), max_depth=None, limit=10, offset=0
            ),
        ]
    )
    assert len(results[0]) == len(test_data)
    assert all(len(ns) <= 2 for ns in results[1])
    assert all(ns[-1] == "public" for ns in results[2])


# -- basic operations -----------------------------------------------------------------------


def test_basic_store_ops(store: PalimpsestStore) -> None:
    namespace = ("test", "documents")
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(namespace, "doc1", item_value)
    item = store.get(namespace, "doc1")
    assert item and item.namespace == namespace and item.key == "doc1" and item.value == item_value

    updated_value = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(namespace, "doc1", updated_value)
    updated = store.get(namespace, "doc1")
    assert updated is not None and updated.value == updated_value
    assert updated.updated_at >= item.updated_at
    assert updated.created_at == item.created_at

    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


def test_basic_store_operations(fake_embeddings: CharacterEmbeddings) -> None:
    with create_vector_store(fake_embeddings, text_fields=["key0", "key1", "key3"]) as store:
        uid = uuid.uuid4().hex
        namespace = (uid, "test", "documents")
        item_value = {"title": "Test Document", "content": "Hello, World!"}
        assert store.search((uid,)) == []

        store.put(namespace, "doc1", item_value)
        item = store.get(namespace, "doc1")
        assert item is not None
        assert item.namespace == namespace and item.key == "doc1" and item.value == item_value
        assert item.created_at is not None and item.updated_at is not None

        updated_value = {"title": "Updated Test Document", "content": "Hello, LangGraph!"}
        store.put(namespace, "doc1", updated_value)
        updated_item = store.get(namespace, "doc1")
        assert updated_item is not None
        assert updated_item.value == updated_value
        assert updated_item.updated_at >= item.updated_at
        assert store.get((uid, "test", "other_documents"), "doc1") is None

        store.put(namespace, "doc2", {"title": "Another Document", "content": "Greetings!"})
        items = store.search((uid, "test"), limit=10)
        assert {i.key for i in items} == {"doc1", "doc2"}
        assert (uid, "test", "documents") in store.list_namespaces(prefix=(uid, "test"))

        store.delete(namespace, "doc1")
        store.delete(namespace, "doc2")
        assert store.get(namespace, "doc1") is None
        assert store.get(namespace, "doc2") is None
        assert store.search((uid, "test"), limit=10) == []


def test_search(store: PalimpsestStore) -> None:
    test_data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)

    assert len(store.search(["test"])) == 3  # type: ignore[arg-type]  # LangGraph's tests pass lists
    docs_items = store.search(("test", "docs"))
    assert len(docs_items) == 2 and all(item.namespace == ("test", "docs") for item in docs_items)
    alice_items = store.search(("test",), filter={"author": "Alice"})
    assert len(alice_items) == 2 and all(item.value["author"] == "Alice" for item in alice_items)
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1


def test_search_items(fake_embeddings: CharacterEmbeddings) -> None:
    base = "test_search_items"
    namespaces = [
        (base, "documents", "user1"),
        (base, "documents", "user2"),
        (base, "reports", "department1"),
        (base, "reports", "department2"),
    ]
    items = [
        {"title": "Doc 1", "author": "John Doe", "tags": ["important"]},
        {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]},
        {"title": "Report A", "author": "John Doe", "tags": ["final"]},
        {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]},
    ]
    with create_vector_store(fake_embeddings, text_fields=["key0", "key1", "key3"]) as store:
        for ns, item in zip(namespaces, items):
            store.put(ns, f"item_{ns[-1]}", item)
        docs = store.search((base, "documents"))
        assert len(docs) == 2 and all(i.namespace[1] == "documents" for i in docs)
        reports = store.search((base, "reports"))
        assert len(reports) == 2 and all(i.namespace[1] == "reports" for i in reports)
        first_page = store.search((base,), limit=2, offset=0)
        second_page = store.search((base,), limit=2, offset=2)
        assert len(first_page) == 2 and len(second_page) == 2
        assert {i.key for i in first_page}.isdisjoint({i.key for i in second_page})
        assert len(store.search((base,))) == 4
        john = store.search((base,), filter={"author": "John Doe"})
        assert len(john) == 2 and all(i.value["author"] == "John Doe" for i in john)
        drafts = store.search((base,), filter={"tags": ["draft"]})
        assert len(drafts) == 2 and all("draft" in i.value["tags"] for i in drafts)


# -- namespaces (checkpoint) ----------------------------------------------------------------


def test_list_namespaces_basic(store: PalimpsestStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(prefix=("a", "b"))) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: PalimpsestStore) -> None:
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination(store: PalimpsestStore) -> None:
    for i in range(20):
        store.put(
            namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}", value={"data": f"value_{i:02d}"}
        )
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=0) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)
    ]


def test_list_namespaces_max_depth(store: PalimpsestStore) -> None:
    for i, ns in enumerate(
        [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")]
    ):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_list_namespaces_no_conditions_and_empty_store(store: PalimpsestStore) -> None:
    assert store.list_namespaces() == []
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == sorted(namespaces)


def test_list_namespaces_operations(fake_embeddings: CharacterEmbeddings) -> None:
    with create_vector_store(fake_embeddings, text_fields=["key0", "key1", "key3"]) as store:
        p = str(uuid.uuid4())
        namespaces = [
            (p, "test", "documents", "public", p),
            (p, "test", "documents", "private", p),
            (p, "test", "images", "public", p),
            (p, "test", "images", "private", p),
            (p, "prod", "documents", "public", p),
            (p, "prod", "documents", "some", "nesting", "public", p),
            (p, "prod", "documents", "private", p),
        ]
        for namespace in namespaces:
            store.put(namespace, "dummy", {"content": "dummy"})

        prefix_result = store.list_namespaces(prefix=(p, "test"))
        assert len(prefix_result) == 4 and all(ns[1] == "test" for ns in prefix_result)
        specific = store.list_namespaces(prefix=(p, "test", "documents"))
        assert len(specific) == 2 and all(ns[1:3] == ("test", "documents") for ns in specific)
        suffix_result = store.list_namespaces(suffix=("public", p))
        assert len(suffix_result) == 4 and all(ns[-2] == "public" for ns in suffix_result)
        both = store.list_namespaces(prefix=(p, "test"), suffix=("public", p))
        assert len(both) == 2 and all(ns[1] == "test" and ns[-2] == "public" for ns in both)
        wildcard_prefix = store.list_namespaces(prefix=(p, "*", "documents"))
        assert len(wildcard_prefix) == 5 and all(ns[2] == "documents" for ns in wildcard_prefix)
        wildcard_suffix = store.list_namespaces(suffix=("*", "public", p))
        assert len(wildcard_suffix) == 4 and all(ns[-2] == "public" for ns in wildcard_suffix)
        assert store.list_namespaces(suffix=("some", "*", "public", p)) == [
            (p, "prod", "documents", "some", "nesting", "public", p)
        ]
        assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
        depth4 = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
        assert len(set(depth4)) == len(depth4) == 5
        assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
        assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(namespaces) - 3
        assert set(store.list_namespaces(prefix=(p,))) == set(namespaces)
        for namespace in namespaces:
            store.delete(namespace, "dummy")
        assert store.list_namespaces(prefix=(p,)) == []


def test_cannot_put_empty_namespace(store: PalimpsestStore) -> None:
    doc = {"foo": "bar"}

    async def scenario() -> None:
        for bad in [(), ("the", "thing.about"), ("some", "fun", "")]:
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "foo", doc)
            with pytest.raises(InvalidNamespaceError):
                await store.aput(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            store.put(("langgraph", "foo"), "bar", doc)
        with pytest.raises(InvalidNamespaceError):
            await store.aput(("langgraph", "foo"), "bar", doc)

        await store.aput(("foo", "langgraph", "foo"), "bar", doc)
        found = await store.aget(("foo", "langgraph", "foo"), "bar")
        assert found is not None and found.value == doc
        assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
        await store.adelete(("foo", "langgraph", "foo"), "bar")
        assert await store.aget(("foo", "langgraph", "foo"), "bar") is None
        store.put(("foo", "langgraph", "foo"), "bar", doc)
        assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
        store.delete(("foo", "langgraph", "foo"), "bar")
        assert store.get(("foo", "langgraph", "foo"), "bar") is None

        # Past the public put API, the reserved root label is a store's business (allowed).
        await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
        found = await store.aget(("langgraph", "foo"), "bar")
        assert found is not None and found.value == doc
        assert (await store.asearch(("langgraph", "foo")))[0].value == doc
        await store.adelete(("langgraph", "foo"), "bar")
        assert await store.aget(("langgraph", "foo"), "bar") is None
        # Labels are still checked when ops bypass the public methods.
        with pytest.raises(InvalidNamespaceError):
            await store.abatch([PutOp(("a.b",), "k", doc)])

    asyncio.run(scenario())


# -- vector search (checkpoint and checkpoint-sqlite) -----------------------------------------


def test_vector_store_initialization(fake_embeddings: CharacterEmbeddings) -> None:
    with create_vector_store(fake_embeddings, text_fields=["text"]) as store:
        assert store.index_config["dims"] == DIMS
        assert store.index_config["fields"] == ["text"]
    memory = open_memory()
    try:
        with pytest.raises(ConfigurationError):
            PalimpsestStore(memory, index={"dims": DIMS, "embed": fake_embeddings})
    finally:
        memory.close()


@pytest.mark.parametrize("conn_type", ["memory", "file"])
def test_vector_insert_with_auto_embedding(
    fake_embeddings: CharacterEmbeddings, conn_type: str, tmp_path: Path
) -> None:
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]
    with create_vector_store(fake_embeddings, conn_type=conn_type, tmp_path=tmp_path) as store:
        for key, value in docs:
            store.put(("test",), key, value)
        keys = [r.key for r in store.search(("test",), query="long text")]
        assert "doc2" in keys and "doc3" in keys

        async def again() -> list[str]:
            for key, value in docs:
                await store.aput(("again",), key, value)
            return [r.key for r in await store.asearch(("again",), query="long text")]

        keys = asyncio.run(again())
        assert "doc2" in keys and "doc3" in keys


@pytest.mark.parametrize("use_async", [False, True])
def test_vector_update_with_embedding(fake_embeddings: CharacterEmbeddings, use_async: bool) -> None:
    with create_vector_store(fake_embeddings) as store:

        def put(key: str, value: dict[str, Any], **kwargs: Any) -> None:
            if use_async:
                asyncio.run(store.aput(("test",), key, value, **kwargs))
            else:
                store.put(("test",), key, value, **kwargs)

        def search(query: str, **kwargs: Any) -> list[Any]:
            if use_async:
                return asyncio.run(store.asearch(("test",), query=query, **kwargs))
            return store.search(("test",), query=query, **kwargs)

        put("doc1", {"text": "zany zebra Xerxes"})
        put("doc2", {"text": "something about dogs"})
        put("doc3", {"text": "text about birds"})
        initial = search("Zany Xerxes")
        assert initial[0].key == "doc1"
        initial_score = initial[0].score
        assert initial_score is not None

        put("doc1", {"text": "new text about dogs"})
        after_score = next((r.score for r in search("Zany Xerxes") if r.key == "doc1"), 0.0)
        assert after_score is not None and after_score < initial_score
        for r in search("new text about dogs"):
            if r.key == "doc1":
                assert r.score > after_score

        put("doc4", {"text": "new text about dogs"}, index=False)
        assert not any(r.key == "doc4" for r in search("new text about dogs", limit=3))


def test_vector_search_with_filters(store: PalimpsestStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        store.put(("test",), key, value)

    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc1"
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    assert {"doc1", "doc3"} <= {r.key for r in results}
    results = store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert len(results) == 1 and results[0].key == "doc3"


def test_every_filtered_item_is_ranked_even_when_dropped_items_match_better(store: PalimpsestStore) -> None:
    for i in range(6):
        store.put(("test",), f"close{i}", {"text": f"apple pie recipe {i}", "kind": "close"})
    store.put(("test",), "far1", {"text": "quarterly tax form", "kind": "far"})
    store.put(("test",), "far2", {"text": "zebra crossing rules", "kind": "far"})
    results = store.search(("test",), query="apple pie recipe", filter={"kind": "far"})
    assert {r.key for r in results} == {"far1", "far2"}
    assert all(r.score is not None for r in results)
    assert results[0].score >= results[1].score


def test_vector_search_pagination(store: PalimpsestStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert {r.key for r in page1}.isdisjoint({r.key for r in page2})
    assert page1[0].score >= page1[1].score
    assert page2[0].score >= page2[1].score
    all_results = store.search(("test",), query="test", limit=10)
    assert len(all_results) == 5
    assert all_results[0].score >= all_results[2].score


def test_vector_search_edge_cases(store: PalimpsestStore) -> None:
    store.put(("test",), "doc1", {"text": "test document"})
    assert len(store.search(("test",), query="")) == 1
    assert len(store.search(("test",), query=None)) == 1
    assert len(store.search(("test",), query="test " * 100)) == 1
    assert len(store.search(("test",), query="test!@#$%^&*()")) == 1
    assert len(store.search(("test",), query="   ")) == 1


def test_keyword_only_clients_rank_what_matches_and_list_the_rest() -> None:
    """Without an embedder palimpsest searches keywords (BM25): items the query's words do not
    match are not ranked, but a query still never hides an item (they follow, unscored)."""
    memory = build_client(store=InMemoryStore())
    try:
        store = PalimpsestStore(memory)
        store.put(("u",), "cats", {"text": "cats purr"})
        store.put(("u",), "dogs", {"text": "dogs bark"})
        results = store.search(("u",), query="dogs")
        assert [(r.key, r.score is not None) for r in results] == [("dogs", True), ("cats", False)]
        assert [r.key for r in store.search(("u",), query="dogs", offset=1)] == ["cats"]
    finally:
        memory.close()


def test_embed_with_path(fake_embeddings: CharacterEmbeddings) -> None:
    """Adapted: LangGraph keeps one vector per indexed field and max-pools their scores;
    palimpsest embeds an item's indexed fields as one text. Which item matches best still
    follows the indexed fields, and a field left out of the index does not count."""
    with create_vector_store(fake_embeddings, text_fields=["key0", "key1", "key3"]) as store:
        doc1 = {"key1": "xxx", "key2": "yyy", "key3": "zzz"}  # no key0: must not fail
        doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
        store.put(("test",), "doc1", doc1)
        store.put(("test",), "doc2", doc2)

        results = store.search(("test",), query="xxx")
        assert len(results) == 2 and results[0].key != results[1].key
        xxx_best = results[0].score
        results = store.search(("test",), query="uuu")
        assert [r.key for r in results] == ["doc2", "doc1"] and results[0].score > results[1].score
        results = store.search(("test",), query="zzz")
        assert [r.key for r in results] == ["doc1", "doc2"] and results[0].score > results[1].score
        # key2 is not indexed: its text matches neither item better than an indexed one does.
        results = store.search(("test",), query="www")
        assert len(results) == 2 and all(r.score < xxx_best for r in results)
        assert store.memory.list_memories(user_id="test")[0].content in ("xxx\nzzz", "uuu\nvvv\nxxx")


def test_embed_with_path_operation_config(fake_embeddings: CharacterEmbeddings) -> None:
    with create_vector_store(fake_embeddings, text_fields=["key17"]) as store:
        doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
        doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
        store.put(("test",), "doc3", doc3, index=["key0", "key1"])
        store.put(("test",), "doc4", doc4, index=["key1", "key3"])

        results = store.search(("test",), query="aaa")
        assert len(results) == 2 and results[0].key == "doc3" and results[0].score > results[1].score
        results = store.search(("test",), query="ggg")
        assert len(results) == 2 and results[0].key == "doc4" and results[0].score > results[1].score
        results = store.search(("test",), query="bbb")
        assert len(results) == 2 and results[0].key != results[1].key
        assert abs(results[0].score - results[1].score) < 0.1
        results = store.search(("test",), query="ccc")
        assert len(results) == 2 and all(r.score < 0.9 for r in results)

        store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
        assert len(store.search(("test",))) == 3
        results = store.search(("test",), query="hhh")
        assert len(results) == 3
        assert next(r for r in results if r.key == "doc5").score is None


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(fake_embeddings: CharacterEmbeddings, query: str) -> None:
    with create_vector_store(fake_embeddings, text_fields=["key0"]) as store:
        doc = {"key0": "aaa"}
        store.put(("test",), "doc", doc, index=["key0", "key1"])
        results = store.search((), query=query)
        vec0 = fake_embeddings.embed_query(doc["key0"])
        vec1 = fake_embeddings.embed_query(query)
        similarity = sum(a * b for a, b in zip(vec0, vec1)) / (
            sum(a * a for a in vec0) ** 0.5 * sum(b * b for b in vec1) ** 0.5
        )
        assert len(results) == 1
        assert results[0].score == pytest.approx(similarity, abs=1e-3)


def test_non_ascii(store: PalimpsestStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, start=1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, start=1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)
        assert store.get(("user_123", "memories"), str(i)).value == {"text": text}  # type: ignore[union-attr]


# -- filters (checkpoint-sqlite; the values are data, never code) ------------------------------


def test_filter_values_are_literal(store: PalimpsestStore) -> None:
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    store.put(("docs",), "doc3", {"access": "secret", "title": "Secret Document"})
    for malicious in [
        "public' OR '1'='1",
        "public'; --",
        "public' UNION SELECT * FROM store --",
        "public\x00' OR '1'='1",
        "''''",
        "public' OR 'א'='א",
    ]:
        assert store.search(("docs",), filter={"access": malicious}) == []
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    results = store.search(("docs",), filter={"title": "O'Brien's Document"})
    assert len(results) == 1 and results[0].value["title"] == "O'Brien's Document"
    assert (
        store.search(("docs",), filter={"access') = 'public' OR '1'='1' OR json_extract(value, '$.": "x"})
        == []
    )


def test_numeric_filter_safety(store: PalimpsestStore) -> None:
    store.put(("items",), "item1", {"price": 10, "quantity": 5})
    store.put(("items",), "item2", {"price": 20, "quantity": 3})
    store.put(("items",), "item3", {"price": 30, "quantity": 1})
    results = store.search(("items",), filter={"price": {"$gt": 15}})
    assert len(results) == 2 and all(r.value["price"] > 15 for r in results)
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": float("nan")}}) == []
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    results = store.search(("items",), filter={"price": {"$lt": 0}})
    assert [r.key for r in results] == ["item4"]
    assert [
        r.key for r in store.search(("items",), filter={"price": {"$ne": 10}, "quantity": {"$lte": 1}})
    ] == [
        "item4",
        "item3",
    ]


def test_boolean_filter_safety(store: PalimpsestStore) -> None:
    store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    results = store.search(("flags",), filter={"active": True})
    assert len(results) == 2 and all(r.value["active"] is True for r in results)
    results = store.search(("flags",), filter={"active": False})
    assert len(results) == 1 and results[0].value["active"] is False


def test_filter_keys_with_hyphens_digits_and_nested_paths(store: PalimpsestStore) -> None:
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [r.key for r in store.search(("docs",), filter={"access-level": "public"})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"user.access-level": "nested"})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [r.key for r in store.search(("docs",), filter={"user.123abc": "ok2"})] == ["digit"]
    assert [r.key for r in store.search(("docs",), filter={"user": {"123abc": "ok2"}})] == ["digit"]


# -- namespace edge cases (checkpoint-sqlite) -------------------------------------------------


def test_search_namespace_segment_boundary(store: PalimpsestStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
    ]:
        store.put(namespace, "k", {"v": 1})

    def namespaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert namespaces(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert namespaces(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert namespaces(("foo2",)) == {("foo2",)}
    assert namespaces(("fo",)) == set()


def test_search_namespace_wildcard_chars_are_literal(store: PalimpsestStore) -> None:
    for namespace in [
        ("user_1",),
        ("user_1", "child"),
        ("userX1",),
        ("a%b",),
        ("axxb",),
        ("star*",),
        ("starX",),
    ]:
        store.put(namespace, "k", {"v": 1})

    def namespaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert namespaces(("user_1",)) == {("user_1",), ("user_1", "child")}
    assert namespaces(("a%b",)) == {("a%b",)}
    assert namespaces(("star*",)) == {("star*",)}


def test_search_namespace_is_case_sensitive(store: PalimpsestStore) -> None:
    store.put(("Foo",), "k", {"v": "upper"})
    store.put(("foo",), "k", {"v": "lower"})
    assert {item.namespace for item in store.search(("foo",), limit=100)} == {("foo",)}
    assert {item.namespace for item in store.search(("Foo",), limit=100)} == {("Foo",)}


def test_list_namespaces_segment_boundary(store: PalimpsestStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child")}  # type: ignore[arg-type]
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }
    assert set(store.list_namespaces(prefix=("uid", "*", "alice"), limit=100)) == {("uid", "users", "alice")}
    assert set(store.list_namespaces(prefix=("uid",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    }


def test_search_empty_prefix_is_unconstrained(store: PalimpsestStore) -> None:
    for namespace in [("a",), ("b", "c"), ("d", "e", "f")]:
        store.put(namespace, "k", {"v": 1})
    assert {item.namespace for item in store.search((), limit=100)} == {("a",), ("b", "c"), ("d", "e", "f")}


def test_namespace_labels_with_trailing_newline(store: PalimpsestStore) -> None:
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {("users", "alice")}
    assert set(store.list_namespaces(prefix=("users", "alice"), limit=100)) == {("users", "alice")}
    assert store.get(("users", "alice\n"), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_list_namespaces_metacharacter_labels(store: PalimpsestStore) -> None:
    pairs = [
        ("star*", "starX"),
        ("q?m", "qXm"),
        ("br[ack]et", "brXacXket"),
        ("user_1", "userX1"),
        ("a%b", "axxb"),
    ]
    for label, decoy in pairs:
        store.put((label,), "k", {"v": 1})
        store.put((decoy,), "k", {"v": 1})
        store.put((label, "child"), "k", {"v": 1})
    for label, decoy in pairs:
        found = set(store.list_namespaces(prefix=(label,), limit=100))
        assert found == {(label,), (label, "child")}
        assert (decoy,) not in found
        assert set(store.list_namespaces(prefix=(label, "child"), limit=100)) == {(label, "child")}


# -- what the items are in palimpsest ---------------------------------------------------------


def test_namespaces_map_onto_user_and_agent_scopes(store: PalimpsestStore) -> None:
    store.put(("u1", "assistant", "prefs"), "food", {"text": "The user likes ramen.", "stars": 5})
    store.put(("u1",), "profile", {"text": "Ada"})
    records = {r.id: r for r in store.memory.list_memories(user_id="u1")}
    assert len(records) == 2
    by_key = {r.metadata[STORE_METADATA_KEY]["key"]: r for r in records.values()}
    food = by_key["food"]
    assert (food.user_id, food.agent_id, food.thread_id) == ("u1", "assistant", None)
    assert food.record_type.value == "memory"
    assert food.metadata[STORE_METADATA_KEY]["namespace"] == ["u1", "assistant", "prefs"]
    assert food.metadata[STORE_METADATA_KEY]["value"] == {"text": "The user likes ramen.", "stars": 5}
    assert (by_key["profile"].user_id, by_key["profile"].agent_id) == ("u1", None)
    # The items are ordinary palimpsest memories: the client's own search finds them.
    hits = store.memory.search("ramen", user_id="u1", agent_id="assistant")
    assert [h.id for h in hits] == [food.id]
    # Another user's namespace is another user's memory.
    store.put(("u2", "assistant", "prefs"), "food", {"text": "The user likes ramen."})
    assert [r.key for r in store.search(("u1",), query="ramen")] == ["food", "profile"]
    assert {r.namespace[0] for r in store.search((), query="ramen")} == {"u1", "u2"}


def test_namespace_scopes_are_configurable(fake_embeddings: CharacterEmbeddings) -> None:
    memory = open_memory(embedder=LangChainEmbedder(fake_embeddings, dimension=DIMS))
    try:
        by_agent = PalimpsestStore(memory, namespace_scopes=("agent_id",), memory_type="fact")
        by_agent.put(("bot", "notes"), "k", {"text": "fact"})
        unscoped = PalimpsestStore(memory, namespace_scopes=())
        unscoped.put(("shared",), "k", {"text": "shared"})
        facts = memory.list_memories(agent_id="bot")
        assert [(r.user_id, r.agent_id, r.record_type.value) for r in facts] == [(None, "bot", "fact")]
        assert [r.key for r in unscoped.search(("shared",), query="shared")] == ["k"]
        assert by_agent.get(("bot", "notes"), "k").value == {"text": "fact"}  # type: ignore[union-attr]
        with pytest.raises(ConfigurationError):
            PalimpsestStore(memory, namespace_scopes=("user_id", "user_id"))  # type: ignore[arg-type]
    finally:
        memory.close()


def test_ttl_expires_items_and_reads_refresh_it(store: PalimpsestStore) -> None:
    store.put(("u1", "a"), "short", {"text": "soon gone"}, ttl=1.0)
    store.put(("u1", "a"), "forever", {"text": "stays"})
    record = next(
        r
        for r in store.memory.list_memories(user_id="u1")
        if r.metadata[STORE_METADATA_KEY]["key"] == "short"
    )
    assert record.expires_at is not None
    assert timedelta(seconds=50) < record.expires_at - datetime.now(UTC) <= timedelta(minutes=1)
    before = record.expires_at
    item = store.get(("u1", "a"), "short")  # refresh_ttl defaults to true
    assert item is not None
    refreshed = next(r for r in store.memory.list_memories(user_id="u1") if r.id == record.id)
    assert refreshed.expires_at is not None and refreshed.expires_at >= before
    assert refreshed.updated_at == record.updated_at  # a refresh is not an update
    # Expire it by hand: the item disappears from get, search and listings.
    with store.memory.store.unit_of_work() as uow:
        current = uow.records.get(record.id)
        assert current is not None
        from dataclasses import replace

        uow.records.update(replace(current, expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        uow.commit()
    assert store.get(("u1", "a"), "short") is None
    assert [r.key for r in store.search(("u1",))] == ["forever"]
    # Putting it again starts a fresh item.
    store.put(("u1", "a"), "short", {"text": "back"})
    assert store.get(("u1", "a"), "short").value == {"text": "back"}  # type: ignore[union-attr]


def test_items_survive_reopening_the_file(fake_embeddings: CharacterEmbeddings, tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = open_memory(path, embedder=LangChainEmbedder(fake_embeddings, dimension=DIMS))
    PalimpsestStore(memory).put(("u1", "a"), "k", {"text": "durable"})
    memory.close()
    memory = open_memory(path, embedder=LangChainEmbedder(fake_embeddings, dimension=DIMS))
    try:
        store = PalimpsestStore(memory)
        assert store.get(("u1", "a"), "k").value == {"text": "durable"}  # type: ignore[union-attr]
        assert [r.key for r in store.search(("u1",), query="durable")] == ["k"]
    finally:
        memory.close()


def test_records_that_are_not_store_items_are_invisible(store: PalimpsestStore) -> None:
    store.memory.add_memory("A plain palimpsest memory.", user_id="u1", agent_id="a")
    assert store.search(("u1",)) == []
    assert store.list_namespaces() == []
    store.put(("u1", "a"), "k", {"text": "item"})
    assert [i.key for i in store.search(("u1",), query="memory")] == ["k"]


def test_values_are_returned_as_stored_and_are_copies(store: PalimpsestStore) -> None:
    value = {"text": "<b>&</b>", "nested": {"list": [1, 2.5, None, True, "x"]}}
    store.put(("u1",), "k", value)
    item = store.get(("u1",), "k")
    assert item is not None and item.value == value
    item.value["nested"]["list"].append("mutated")
    assert store.get(("u1",), "k").value == value  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.put(("u1",), "bad", {"when": datetime.now(UTC)})  # not JSON
