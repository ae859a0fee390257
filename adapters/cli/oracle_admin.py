"""Adapters layer (command line): ``palimpsest oracle install|check|upgrade``, the Oracle schema by hand.

Each action opens one connection to ``--oracle-dsn`` and hands it to the Oracle adapter's
``SchemaManager`` (with the session set up as the store's own leases do):

* ``install`` applies ``CREATE_IF_NECESSARY``: the registry table, then every missing object of
  the store (``--memory-store-id`` selects it), then the vector index once the dimension is known;
* ``check`` applies ``REQUIRE_EXISTING``: validates, creates nothing, and fails with the list of
  what is missing or a version that needs an upgrade;
* ``upgrade`` reads the registered schema version and applies ``CREATE_IF_NECESSARY``, which runs
  the upgrades from that version to this library's (and repairs missing objects).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Literal

from palimpsest.domain.errors import SchemaVersionError

from .context import CliError, CliSettings

__all__ = ["NO_DSN_MESSAGE", "OracleAction", "run_action"]

OracleAction = Literal["install", "check", "upgrade"]

NO_DSN_MESSAGE: Final = (
    "the oracle commands need a database: pass --oracle-dsn DSN (or set ORACLE_DSN) with "
    "--oracle-user and --oracle-password."
)


@contextmanager
def _connection(settings: CliSettings) -> Iterator[Any]:
    if settings.oracle_dsn is None:
        raise CliError(NO_DSN_MESSAGE)
    if settings.store is not None:
        raise CliError("the oracle commands work on --oracle-dsn; drop --store.")
    try:
        import oracledb
    except ImportError:
        raise CliError("python-oracledb is not installed: pip install 'palimpsest-memory[oracle]'.") from None
    if not settings.oracle_user:
        raise CliError("Oracle needs a user: pass --oracle-user (or set ORACLE_USER).")
    if settings.oracle_password is None:
        raise CliError("Oracle needs a password: pass --oracle-password (or set ORACLE_PASSWORD).")
    try:
        connection = oracledb.connect(
            user=settings.oracle_user, password=settings.oracle_password, dsn=settings.oracle_dsn
        )
    except oracledb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CliError(f"cannot connect to Oracle at {settings.oracle_dsn}: {first}") from exc
    try:
        from palimpsest.adapters.oracle.connection import ConnectionSource

        source = ConnectionSource(connection=connection)
        with source.lease() as leased:
            yield leased
    finally:
        connection.close()


def _describe(dimension: int | None, vector_index: str, has_index: bool) -> str:
    size = f"dimension {dimension}" if dimension is not None else "dimension set by the first vector"
    if vector_index == "none":
        index = "no vector index (exact search)"
    else:
        index = f"{vector_index} vector index {'built' if has_index else 'not built yet'}"
    return f"{size}, {index}"


def run_action(
    settings: CliSettings,
    action: OracleAction,
    *,
    dimension: int | None = None,
    vector_index: str = "hnsw",
) -> str:
    """Run ``action`` on the configured Oracle store; returns the one-line report."""
    with _connection(settings) as connection:
        # Imported once connected: the adapter's modules need the driver, which _connection checked.
        from palimpsest.adapters.oracle.errors import translate
        from palimpsest.adapters.oracle.names import StoreNames
        from palimpsest.adapters.oracle.schema import SCHEMA_VERSION, SchemaManager
        from palimpsest.adapters.oracle.sql import fetch_one
        from palimpsest.application import SchemaPolicy

        names = StoreNames(settings.memory_store_id)
        manager = SchemaManager(names, vector_index=vector_index)
        label = (
            "the default Oracle memory store"
            if names.store_id is None
            else f"the Oracle memory store {names.store_id!r}"
        )
        with translate(names):
            if action == "check":
                config = manager.ensure(connection, SchemaPolicy.REQUIRE_EXISTING, dimension=None)
                details = _describe(
                    config.dimension, config.vector_index, manager.has_vector_index(connection)
                )
                return f"{label} is installed: schema v{config.schema_version}, {details}."
            if action == "install":
                before = manager.present_objects(connection)
                config = manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=dimension)
                created = len(manager.present_objects(connection) - before)
                details = _describe(
                    config.dimension, config.vector_index, manager.has_vector_index(connection)
                )
                what = f"created {created} object(s)" if created else "every object was already there"
                return f"{label} is installed ({what}): schema v{config.schema_version}, {details}."
            registry = fetch_one(connection, manager.registry_exists_statement())
            row = fetch_one(connection, manager.select_config()) if registry is not None else None
            if row is None:
                raise SchemaVersionError(f"{label} is not installed; run 'palimpsest oracle install' first.")
            stored = int(row[1])
            config = manager.ensure(connection, SchemaPolicy.CREATE_IF_NECESSARY, dimension=dimension)
            if stored == SCHEMA_VERSION:
                return (
                    f"{label} is already at schema v{SCHEMA_VERSION}; nothing to upgrade "
                    "(missing objects, if any, were created)."
                )
            return f"{label} upgraded from schema v{stored} to v{config.schema_version}."
