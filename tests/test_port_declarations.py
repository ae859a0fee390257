"""Adapters name the ports they implement as base classes, so that mypy checks each signature
against the port (structural matching alone checks only where an adapter is passed as a port),
and declaring a port changes nothing else about an adapter."""

from __future__ import annotations

import importlib

import pytest
from palimpsest.application import ports as app_ports
from palimpsest.domain import ports as domain_ports

_REPOSITORIES = ("Thread", "Message", "Record", "Link", "Summary", "Job", "Settings")

# (module, optional third-party package it needs, {adapter class: port})
_DECLARATIONS: list[tuple[str, str | None, dict[str, type]]] = [
    ("palimpsest.adapters.clock", None, {"SystemClock": domain_ports.Clock}),
    ("palimpsest.adapters.inmemory.clock", None, {"ManualClock": domain_ports.Clock}),
    (
        "palimpsest.adapters.inmemory.store",
        None,
        {
            "InMemoryStore": domain_ports.MemoryStore,
            "InMemoryUnitOfWork": domain_ports.UnitOfWork,
            **{f"InMemory{r}Repository": getattr(domain_ports, f"{r}Repository") for r in _REPOSITORIES},
        },
    ),
    (
        "palimpsest.adapters.sql.repositories",
        None,
        {f"Sql{r}Repository": getattr(domain_ports, f"{r}Repository") for r in _REPOSITORIES},
    ),
    ("palimpsest.adapters.sql.unit_of_work", None, {"SqlUnitOfWork": domain_ports.UnitOfWork}),
    ("palimpsest.adapters.sql.store", None, {"SqlStore": domain_ports.MemoryStore}),
    ("palimpsest.adapters.embedded.store", None, {"EmbeddedStore": domain_ports.MemoryStore}),
    ("palimpsest.adapters.embedded.unit_of_work", None, {"SqliteUnitOfWork": domain_ports.UnitOfWork}),
    (
        "palimpsest.adapters.embedded.repositories",
        None,
        {"SqliteMessageRepository": domain_ports.MessageRepository},
    ),
    ("palimpsest.adapters.oracle.store", "oracledb", {"OracleStore": domain_ports.MemoryStore}),
    ("palimpsest.adapters.oracle.unit_of_work", "oracledb", {"OracleUnitOfWork": domain_ports.UnitOfWork}),
    (
        "palimpsest.adapters.oracle.repositories",
        "oracledb",
        {
            f"Oracle{r}Repository": getattr(domain_ports, f"{r}Repository")
            for r in ("Thread", "Message", "Record")
        },
    ),
    (
        "palimpsest.adapters.postgres.store",
        "psycopg",
        {"PostgresStore": domain_ports.MemoryStore, "PostgresUnitOfWork": domain_ports.UnitOfWork},
    ),
    (
        "palimpsest.adapters.heuristic",
        None,
        {
            "HeuristicExtractor": app_ports.Extractor,
            "RuleLinkResolver": app_ports.LinkResolver,
            "LexicalReranker": app_ports.Reranker,
            "TextRankSummariser": app_ports.Summariser,
        },
    ),
    ("palimpsest.adapters.minilm", None, {"MiniLMEmbedder": app_ports.Embedder}),
    ("palimpsest.adapters.hashing", None, {"HashingEmbedder": app_ports.Embedder}),
    ("palimpsest.adapters.langgraph.embeddings", "langchain_core", {"LangChainEmbedder": app_ports.Embedder}),
    (
        "palimpsest.application.testing",
        None,
        {
            "ScriptedExtractor": app_ports.Extractor,
            "ScriptedLinkResolver": app_ports.LinkResolver,
            "ScriptedSummariser": app_ports.Summariser,
        },
    ),
    (
        "palimpsest.adapters.openai",
        "openai",
        {
            "OpenAIEmbedder": app_ports.Embedder,
            "LlmExtractor": app_ports.Extractor,
            "LlmSummariser": app_ports.Summariser,
            "LlmLinkResolver": app_ports.LinkResolver,
            "LlmReranker": app_ports.Reranker,
        },
    ),
]

_CASES = [
    pytest.param(module, needs, name, port, id=name)
    for module, needs, classes in _DECLARATIONS
    for name, port in classes.items()
]


def _adapter(module: str, needs: str | None, name: str) -> type:
    if needs is not None:
        pytest.importorskip(needs)
    adapter: type = getattr(importlib.import_module(module), name)
    return adapter


@pytest.mark.parametrize(("module", "needs", "name", "port"), _CASES)
def test_adapter_declares_its_port(module: str, needs: str | None, name: str, port: type) -> None:
    assert port in _adapter(module, needs, name).__mro__


def test_chat_models_declare_the_json_model_port() -> None:
    pytest.importorskip("openai")
    from palimpsest.adapters.openai import OpenAIChatModel
    from palimpsest.adapters.openai.llm import JsonModel
    from palimpsest.adapters.openai.testing import FunctionChatModel, ScriptedChatModel

    for model in (OpenAIChatModel, FunctionChatModel, ScriptedChatModel):
        assert JsonModel in model.__mro__


_SLOTTED = [
    *(("palimpsest.adapters.sql.repositories", None, f"Sql{r}Repository") for r in _REPOSITORIES),
    ("palimpsest.adapters.embedded.repositories", None, "SqliteMessageRepository"),
    *(
        ("palimpsest.adapters.oracle.repositories", "oracledb", f"Oracle{r}Repository")
        for r in ("Thread", "Message", "Record")
    ),
]


@pytest.mark.parametrize(("module", "needs", "name"), _SLOTTED)
def test_slotted_repositories_stay_slotted(module: str, needs: str | None, name: str) -> None:
    """The repository ports declare empty ``__slots__``: an adapter's slots keep its instances
    free of a ``__dict__`` (a Protocol base without them would add one)."""
    instance = object.__new__(_adapter(module, needs, name))
    with pytest.raises(AttributeError):
        instance.unexpected = 1  # type: ignore[attr-defined]


def test_declared_ports_keep_plain_construction() -> None:
    """A class inheriting a Protocol gets the Protocol's placeholder ``__init__`` when it defines
    none: construction must still work and read the adapter's own state."""
    from palimpsest.adapters.clock import SystemClock
    from palimpsest.adapters.inmemory import InMemoryStore, ManualClock

    assert SystemClock().now().tzinfo is not None
    clock = ManualClock()
    assert clock.now() < clock.now()
    store = InMemoryStore()
    with store.unit_of_work() as uow:
        assert uow.threads.list() == []
    assert store.dimension is None
