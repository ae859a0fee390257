"""``open_memory`` on a PostgreSQL location: the composition root opens the postgres row's pool
and store, a client writes and searches through it, and closing the client closes both."""

from __future__ import annotations

import getpass
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.backends import BACKENDS, ConnectionSettings, parse_store_location
from palimpsest.adapters.postgres.store import PostgresStore
from palimpsest.domain.errors import ConfigurationError, StoreClosedError
from postgres_server import PostgresTarget
from psycopg import conninfo


@pytest.fixture
def settings(postgres_target: PostgresTarget) -> Iterator[ConnectionSettings]:
    """The session's server as connection settings of a fresh store, dropped afterwards."""
    params = conninfo.conninfo_to_dict(postgres_target.url)
    user = str(params.pop("user", None) or getpass.getuser())
    password = str(params.pop("password", None) or "")
    store_id = f"O{uuid.uuid4().hex[:12]}"
    yield ConnectionSettings(
        "postgres", conninfo.make_conninfo(**params), user, password, memory_store_id=store_id
    )
    with psycopg.connect(postgres_target.url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "palimpsest_{store_id.lower()}" CASCADE')


def test_open_memory_on_postgres_settings_writes_and_searches_on_the_server(settings: ConnectionSettings) -> None:
    with open_memory(settings, embedder=HashingEmbedder()) as memory:
        store = memory.store
        assert isinstance(store, PostgresStore)
        assert store.schema == f"palimpsest_{settings.memory_store_id}".lower()
        memory.add_memory("Green tea in Kyoto.", user_id="u")
        thread = memory.create_thread(user_id="u")
        thread.add_messages([{"role": "user", "content": "I drink oolong every morning."}])
        assert memory.search("kyoto", user_id="u")[0].content == "Green tea in Kyoto."
    with pytest.raises(StoreClosedError):
        store.unit_of_work()
    with open_memory(settings, embedder=HashingEmbedder()) as again:  # the same store, reopened
        assert [r.content for r in again.search("tea kyoto", user_id="u")][:1] == ["Green tea in Kyoto."]


def test_a_postgresql_url_names_the_store_the_settings_name() -> None:
    location = parse_store_location("postgresql://scott:tiger@db:5432/memory?memory_store_id=acme")
    assert location.backend == "postgres" and BACKENDS["postgres"].pooled
    assert location.connection is not None and location.connection.memory_store_id == "acme"


def test_a_store_required_to_exist_is_refused_until_it_is_installed(settings: ConnectionSettings) -> None:
    location = parse_store_location(settings).requiring_existing()
    with pytest.raises(ConfigurationError, match="no PostgreSQL memory store"):
        open_memory(location, embedder=HashingEmbedder())
    open_memory(settings, embedder=HashingEmbedder()).close()  # installs it
    with open_memory(location, embedder=HashingEmbedder()) as memory:
        assert isinstance(memory.store, PostgresStore)
