"""The composition root: backend selection from the registry, fakes through provider overrides,
and the lifetime of what the root opens (closed by ``AgentMemory.close()``, store before pool)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters import clock as adapter_clock
from palimpsest.adapters.backends import (
    BACKENDS,
    ConnectionSettings,
    OracleSettings,
    choose_backend,
    parse_store_location,
)
from palimpsest.adapters.bootstrap import PORTS, Container, build_container, open_client
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.application.clock import SystemClock
from palimpsest.domain import ConfigurationError, StoreClosedError

START = datetime(2030, 5, 5, tzinfo=UTC)


class _RecordingStore(InMemoryStore):
    """An in-memory store that writes "store closed" to a shared event list when closed."""

    def __init__(self, events: list[str], **options: Any) -> None:
        super().__init__(**options)
        self._events = events

    def close(self) -> None:
        self._events.append("store closed")
        super().close()


def _fake_pooled_table(events: list[str]) -> dict[str, Any]:
    """The registry with the Oracle row's driver calls replaced by recording fakes: the pool
    is an opaque token and the store an in-memory one, so no SQL runs; only the lifetime wiring
    of the real container (store resource on top of the pool resource) is exercised."""

    def open_pool(settings: ConnectionSettings) -> str:
        events.append(f"pool opened for {settings.target}")
        return "the pool"

    def close_pool(pool: str) -> None:
        events.append(f"{pool} closed")

    def open_store(*, pool: str, dimension: int | None, **options: Any) -> InMemoryStore:
        events.append(f"store opened on {pool} as {options['memory_store_id']}")
        return _RecordingStore(events, dimension=dimension)

    oracle = dataclasses.replace(
        BACKENDS["oracle"], open_store=open_store, open_pool=open_pool, close_pool=close_pool
    )
    return {**BACKENDS, "oracle": oracle}


ORACLE = OracleSettings("db:1521/FREEPDB1", "scott", "tiger", memory_store_id="ACME")


# --- the registry ------------------------------------------------------------------------------


def test_the_container_has_one_store_branch_per_registered_backend() -> None:
    assert set(Container().store.providers) == set(BACKENDS) == {"memory", "embedded", "oracle", "postgres"}
    assert [name for name, backend in BACKENDS.items() if backend.pooled] == ["oracle", "postgres"]
    assert {name for name, backend in BACKENDS.items() if backend.persistent} == {"embedded", "oracle", "postgres"}


def test_the_backend_follows_from_the_location_unless_named(tmp_path: Path) -> None:
    assert choose_backend().name == "memory"
    assert choose_backend(location=parse_store_location(tmp_path / "m.db")).name == "embedded"
    assert choose_backend(location=parse_store_location(ORACLE)).name == "oracle"
    assert choose_backend("memory").name == "memory"
    assert choose_backend("embedded", parse_store_location("m.db")).name == "embedded"


@pytest.mark.parametrize(
    "arguments",
    [
        {"backend": "cloud"},
        {"backend": "embedded"},  # no path
        {"backend": "oracle"},  # no connection settings
        {"path": "m.db", "oracle": ORACLE},
        {"location": "m.db", "oracle": ORACLE},
        {"location": "m.db", "path": "n.db"},
        {"backend": "embedded", "path": "m.db", "oracle": ORACLE},
        {"backend": "oracle", "location": "m.db"},
        {"backend": "memory", "location": "oracle://scott:tiger@db:1521/FREEPDB1"},
        {"backend": "embedded", "location": ":memory:"},
        {"location": "oracle://scott:tiger@db:1521/FREEPDB1?memory_store_id=ACME&colour=blue"},
        {"backend": "embedded", "location": "postgresql://scott:tiger@db:5432/memory"},
        {"oracle": "db:1521/FREEPDB1"},  # not an OracleSettings
    ],
)
def test_a_request_that_does_not_fit_a_backend_is_a_configuration_error_and_opens_nothing(
    arguments: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    oracledb = pytest.importorskip("oracledb")
    connects: list[dict[str, Any]] = []
    monkeypatch.setattr(oracledb, "create_pool", lambda **kwargs: connects.append(kwargs))
    with pytest.raises(ConfigurationError):
        open_memory(**arguments)
    assert list(tmp_path.iterdir()) == []  # no store file
    assert connects == []  # no pool


def test_an_unknown_profile_or_port_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="profile"):
        build_container(profile="admin")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="reranker"):
        build_container(overrides={"reranker": None})
    with pytest.raises(ConfigurationError, match="embedder_choice"):
        build_container(profile="inspect", embedder_choice="bert")


# --- providers tests override ------------------------------------------------------------------


def test_every_model_default_and_the_clock_are_providers_a_test_overrides() -> None:
    container = build_container()
    embedder, clock = HashingEmbedder(16), ManualClock(START, tick=timedelta(0))
    container.embedder.override(providers.Object(embedder))
    container.clock.override(providers.Object(clock))
    container.summariser.override(providers.Object(None))
    container.link_resolver.override(providers.Object(None))
    container.extractor.override(providers.Object(None))
    with open_client(container) as memory:
        memory.add_memory("Fixed time.", user_id="u")
        assert memory.list_memories(user_id="u")[0].created_at == START
        assert memory.search_strategy == "hybrid"  # the overriding embedder is the client's
        assert isinstance(memory.store, InMemoryStore)  # the memory backend, by default
    for name in PORTS:  # every port the root wires is a provider that can be overridden
        assert isinstance(getattr(container, name), providers.Provider)


def test_without_an_extractor_the_root_turns_extraction_off() -> None:
    container = build_container(overrides={"extractor": None})
    assert container.memory_extraction_config() == MemoryExtractionConfig(extract_memories=False)
    assert build_container().memory_extraction_config() is None  # the heuristic extractor runs


def test_the_inspect_profile_is_passive_and_follows_the_stores_model(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashingEmbedder(32)) as memory:
        memory.add_memory("Prefers sourdough pizza.", user_id="u1")
    container = build_container(path, profile="inspect")
    with open_client(container) as inspecting:
        assert container.extractor() is None
        assert container.link_resolver() is None
        assert container.memory_extraction_config() == MemoryExtractionConfig(extract_memories=False)
        chosen = container.store_embedder()
        assert isinstance(chosen.embedder, HashingEmbedder) and chosen.embedder.dimension == 32
        assert container.embedder() is chosen.embedder
        assert inspecting.search("sourdough", user_id="u1")[0].content == "Prefers sourdough pizza."


# --- lifetime: what the root opened, close() closes ---------------------------------------------


def test_close_closes_a_store_the_root_opened(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", embedder=HashingEmbedder())
    store = memory.store
    assert isinstance(store, EmbeddedStore)
    memory.add_memory("Kept.", user_id="u")
    memory.close()
    with pytest.raises(StoreClosedError):
        store.reading().__enter__()
    memory.close()  # idempotent: nothing is closed twice


def test_close_leaves_a_store_passed_in_open() -> None:
    store = InMemoryStore()
    memory = open_memory(store=store, clock=ManualClock(START, tick=timedelta(0)))
    memory.add_memory("Fixed time.", user_id="u")
    assert memory.list_memories(user_id="u")[0].created_at == START
    memory.close()
    with store.reading() as uow:  # still open
        assert len(uow.records.list(now=START, limit=None)) == 1
    store.close()


def test_a_pool_is_opened_before_its_store_and_closed_after_it() -> None:
    events: list[str] = []
    container = build_container(oracle=ORACLE, overrides={"embedder": None, "extractor": None})
    container.backends.override(providers.Object(_fake_pooled_table(events)))
    memory = open_client(container)
    assert events == ["pool opened for db:1521/FREEPDB1", "store opened on the pool as ACME"]
    memory.close()
    memory.close()
    assert events[2:] == ["store closed", "the pool closed"]  # once each, the store first


def test_a_pool_is_not_opened_for_a_backend_without_one() -> None:
    events: list[str] = []
    container = build_container(overrides={"embedder": None})
    container.backends.override(providers.Object(_fake_pooled_table(events)))
    open_client(container).close()
    assert events == []


def test_a_client_that_cannot_be_built_closes_what_the_root_opened() -> None:
    events: list[str] = []
    table = _fake_pooled_table(events)
    container = build_container(oracle=ORACLE, overrides={"embedder": None, "extractor": None})
    container.backends.override(providers.Object(table))
    with pytest.raises(ConfigurationError, match="needs an embedder"):
        open_client(container, search_strategy="vector")
    assert events[-2:] == ["store closed", "the pool closed"]


def test_on_close_belongs_to_the_root() -> None:
    with pytest.raises(ConfigurationError, match="on_close"):
        open_client(build_container(), on_close=lambda: None)


def test_every_client_close_runs_on_close_once_after_the_store() -> None:
    events: list[str] = []
    store = _RecordingStore(events)
    memory = AgentMemory(store=store, close_store=True, on_close=lambda: events.append("on_close"))
    memory.close()
    memory.close()
    assert events == ["store closed", "on_close"]
    with pytest.raises(ConfigurationError, match="on_close"):
        AgentMemory(store=InMemoryStore(), on_close="not callable")  # type: ignore[arg-type]


# --- one clock ---------------------------------------------------------------------------------


def test_the_root_and_a_client_built_directly_share_one_system_clock() -> None:
    assert adapter_clock.SystemClock is SystemClock
    assert isinstance(Container().clock(), SystemClock)
    with AgentMemory(store=InMemoryStore()) as memory:  # no clock given: the system clock
        memory.add_memory("Now.", user_id="u")
        record = memory.list_memories(user_id="u")[0]
    assert record.created_at.tzinfo is not None and record.created_at.utcoffset() == UTC.utcoffset(None)


# --- open_memory's public behaviour --------------------------------------------------------------


def test_without_a_path_open_memory_runs_on_the_in_memory_store_and_closes_it() -> None:
    memory = open_memory()
    store = memory.store
    assert isinstance(store, InMemoryStore)
    record_id = memory.add_memory("Remember the milk.", user_id="u")
    assert memory.list_memories(user_id="u")[0].id == record_id
    memory.close()
    with pytest.raises(StoreClosedError):
        memory.list_memories(user_id="u")


def test_open_memory_gives_a_client_on_the_embedded_store_that_closes_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with open_memory(path) as memory:
        thread = memory.create_thread(user_id="u1")
        thread.add_messages([{"role": "user", "content": "My name is Maya and I love hiking."}])
        memory.wait_for_memory_extraction()
        memory.add_memory("Prefers sourdough pizza.", memory_type="preference", user_id="u1")
        found = memory.search("pizza", user_id="u1", record_types=["preference"])
        assert found[0].content == "Prefers sourdough pizza."
        # The offline heuristic extractor drew memories from the message.
        extracted = [m.content for m in memory.list_memories(user_id="u1") if m.thread_id == thread.thread_id]
        assert any("Maya" in text for text in extracted)
        stored = len(memory.list_memories(user_id="u1"))
    assert path.exists()
    with pytest.raises(StoreClosedError):
        memory.search("pizza", user_id="u1")
    with open_memory(path) as reopened:  # everything acknowledged is still there
        assert len(reopened.list_memories(user_id="u1")) == stored


def test_open_memory_creates_the_folder_of_a_relative_store_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_memory("store/memory.db") as memory:
        memory.add_memory("Kept in a folder that did not exist.", user_id="u1")
    assert (tmp_path / "store" / "memory.db").is_file()
    with open_memory("store/memory.db") as reopened:
        stored = [m.content for m in reopened.list_memories(user_id="u1")]
    assert stored == ["Kept in a folder that did not exist."]


def test_open_memory_on_a_path_that_cannot_hold_a_store_names_it(tmp_path: Path) -> None:
    in_the_way = tmp_path / "store"
    in_the_way.write_text("a file, not a folder")
    with pytest.raises(ConfigurationError, match=r"cannot create the folder .*store"):
        open_memory(in_the_way / "memory.db")
    assert in_the_way.read_text() == "a file, not a folder"


def test_a_store_and_a_path_together_are_a_configuration_error() -> None:
    store = InMemoryStore()
    with pytest.raises(ConfigurationError, match="not both"):
        open_memory("m.db", store=store)
    store.close()


def test_the_shared_root_client_fixture_builds_through_the_container(
    root_client: Callable[..., AgentMemory],
) -> None:
    memory = root_client()
    assert isinstance(memory.store, InMemoryStore)
    assert memory.search_strategy == "hybrid"  # the hashing embedder
    memory.add_memory("Fixed.", user_id="u")
    assert memory.list_memories(user_id="u")[0].created_at.year == 2030  # the manual clock
