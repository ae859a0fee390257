"""Typed errors of the Postgres store on a real server: a server that is down or on another
port, a connection lost mid-call, refused credentials, a missing ``vector`` extension."""

from __future__ import annotations

import socket
import uuid

import psycopg
import pytest
from palimpsest.adapters.postgres import PostgresDatabase, PostgresStoreCore
from palimpsest.domain.errors import ConfigurationError, StorageError, StoreBusyError, StoreUnavailableError
from postgres_server import PASSWORD, PASSWORD_ROLE
from psycopg import sql

from .conftest import StoreFactory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_does_not_answer_on_its_port_is_unavailable() -> None:
    url = f"postgresql://palimpsest:secret@127.0.0.1:{_free_port()}/palimpsest"
    with pytest.raises(StoreUnavailableError, match="cannot be reached") as caught:
        PostgresStoreCore(url)
    assert "secret" not in str(caught.value)  # the message names where, never the password
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)


def test_a_socket_folder_without_a_server_is_unavailable(tmp_path: object) -> None:
    with pytest.raises(StoreUnavailableError):
        PostgresDatabase(f"postgresql://postgres@/postgres?host={tmp_path}")


def test_a_malformed_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="not a PostgreSQL connection URL"):
        PostgresDatabase("postgresql://[not a host")


def test_a_wrong_password_is_a_configuration_error_and_the_right_one_connects(stores: StoreFactory) -> None:
    target = stores.target
    if not target.password_checked:
        pytest.skip("this server does not check passwords for the test role (its own pg_hba.conf)")
    wrong = target.url_for(user=PASSWORD_ROLE, password="wrong-password")
    with pytest.raises(ConfigurationError, match="refused the credentials") as caught:
        PostgresDatabase(wrong)
    assert not isinstance(caught.value, StorageError)
    assert "wrong-password" not in str(caught.value)
    right = PostgresDatabase(target.url_for(user=PASSWORD_ROLE, password=PASSWORD))
    with right.connection() as conn:
        assert conn.execute("SELECT current_user").fetchone() == (PASSWORD_ROLE,)
    right.close()


def test_an_unknown_database_is_a_configuration_error(stores: StoreFactory) -> None:
    with pytest.raises(ConfigurationError, match="no such database"):
        PostgresDatabase(stores.target.url_for(dbname=f"missing_{uuid.uuid4().hex[:8]}"))


def test_a_connection_lost_mid_call_is_unavailable_and_the_pool_recovers(stores: StoreFactory) -> None:
    core = stores.open()
    with pytest.raises(StoreUnavailableError, match="lost"), core.transaction() as conn:
        pid = conn.info.backend_pid
        with psycopg.connect(stores.url, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        conn.execute("SELECT count(*) FROM records")
    with core.transaction() as conn:  # the broken connection was discarded, not handed out again
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (0,)


def test_a_database_without_pgvector_that_the_role_cannot_create_is_a_configuration_error(
    stores: StoreFactory,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    database, role = f"palimpsest_novector_{suffix}", f"palimpsest_plain_{suffix}"
    try:
        with psycopg.connect(stores.url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(PASSWORD)))
            admin.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(sql.Identifier(database), sql.Identifier(role)))
    except psycopg.errors.InsufficientPrivilege:
        pytest.skip("this server's test role may not create databases and roles")
    try:
        url = stores.target.url_for(user=role, password=PASSWORD, dbname=database)
        with pytest.raises(ConfigurationError, match="CREATE EXTENSION vector") as caught:
            PostgresStoreCore(url)
        assert isinstance(caught.value.__cause__, psycopg.errors.InsufficientPrivilege)
    finally:
        with psycopg.connect(stores.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_a_pool_with_no_free_connection_in_time_is_busy_not_unavailable(stores: StoreFactory) -> None:
    core = stores.open(max_connections=1, pool_timeout=0.5)
    with core.transaction(), pytest.raises(StoreBusyError, match="No free connection"), core.transaction():
        pass
    with core.transaction() as conn:  # the held connection came back
        assert conn.execute("SELECT 1").fetchone() == (1,)
