"""Fixtures shared by every test folder: clients from the composition root, and the Oracle
database of the optional Oracle-backed tests.

``root_client`` builds clients the way every client is built (``clients.build_client``: the
composition root with its providers overridden), defaulting to an in-memory store, the
hashing embedder, a ``ManualClock`` and extraction off; each keyword replaces one default.

``oracle_pool`` gives a python-oracledb pool on ``ORACLE_DSN`` or on a container started once per
session when a Docker engine answers; otherwise the test asking for it is skipped at once, with
one reason. Nothing connects or builds a container at import or collection time.

``postgres_target`` is the PostgreSQL server of the session (``tests/postgres_server.py``):
``PALIMPSEST_POSTGRES_URL``, else a private server started in a temporary folder, else a container;
started when a test first asks for it, stopped and deleted at the end of the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import oracle_database
import postgres_server
import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.bootstrap import NO_EXTRACTION
from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
from palimpsest.application import AgentMemory

ROOT_CLOCK_START = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def root_client() -> Iterator[Callable[..., AgentMemory]]:
    """``root_client(**overrides)``: a client from the composition root on a fresh in-memory
    store, with the hashing embedder, a manual clock and extraction off unless overridden;
    every client (and the store the fixture made) is closed after the test."""
    made: list[AgentMemory] = []
    stores: list[InMemoryStore] = []

    def build(**overrides: Any) -> AgentMemory:
        options: dict[str, Any] = {
            "embedder": HashingEmbedder(),
            "clock": ManualClock(ROOT_CLOCK_START),
            "memory_extraction_config": NO_EXTRACTION,
        }
        options.update(overrides)
        if "store" not in options and "path" not in options and "backend" not in options:
            stores.append(InMemoryStore())
            options["store"] = stores[-1]
        client = build_client(**options)
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()
    for store in stores:
        store.close()


@pytest.fixture(scope="session")
def oracle_target() -> Iterator[oracle_database.OracleTarget]:
    """The Oracle database of this session (ORACLE_DSN, else a container), or a skip."""
    target = oracle_database.target_from_environment()
    if target is not None:
        yield target
        return
    if not oracle_database.docker_engine_answers():
        pytest.skip(oracle_database.SKIP_REASON)
    yield from oracle_database.container_target()


@pytest.fixture(scope="session")
def oracle_pool(oracle_target: oracle_database.OracleTarget) -> Iterator[Any]:
    pool = oracle_target.create_pool()
    try:
        yield pool
    finally:
        pool.close(force=True)


@pytest.fixture(scope="session")
def postgres_target() -> Iterator[postgres_server.PostgresTarget]:
    """The PostgreSQL server of this session (see tests/postgres_server.py)."""
    yield from postgres_server.session_target()


@pytest.fixture(scope="session")
def postgres_pool(postgres_target: postgres_server.PostgresTarget) -> Iterator[Any]:
    """A pool on the session's PostgreSQL server, shared by the stores of the contract suite.

    Full from the start: a pool that grows during a test draws from the global ``random``
    (psycopg_pool jitters each new connection's lifetime) in its own thread, which Hypothesis
    reports as randomness inside a strategy when it lands during a draw."""
    from palimpsest.adapters.postgres import PostgresDatabase

    database = PostgresDatabase(postgres_target.url, min_size=8, max_size=8)
    database._pool.wait(timeout=60)  # type: ignore[union-attr]
    try:
        yield database
    finally:
        database.close()
