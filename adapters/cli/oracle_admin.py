"""Adapters layer (command line): ``palimpsest oracle install|check|upgrade``, the Oracle schema by hand.

Each action opens one connection to the Oracle store that ``--store oracle://...`` names (or
the deprecated ``--oracle-dsn``; both parsed as every command parses them) and hands it to the
Oracle adapter's
public ``administer_schema`` (which sets the session up as the store's own leases do and
applies the store's ``SchemaManager``); this module only connects and words the report:

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

from palimpsest.adapters.backends import ConnectionSettings
from palimpsest.domain.errors import SchemaVersionError

from .context import CliError, CliSettings

__all__ = ["NO_DSN_MESSAGE", "OracleAction", "run_action"]

OracleAction = Literal["install", "check", "upgrade"]

NO_DSN_MESSAGE: Final = (
    "the oracle commands need an Oracle store: pass --store oracle://USER@HOST:PORT/SERVICE (the password "
    "in the URL or in ORACLE_PASSWORD), or the deprecated --oracle-dsn DSN with --oracle-user and --oracle-password."
)


def _oracle_connection(settings: CliSettings) -> ConnectionSettings:
    if not settings.names_a_store:
        raise CliError(NO_DSN_MESSAGE)
    connection = settings.location().connection
    if connection is None or connection.backend != "oracle":
        raise CliError(NO_DSN_MESSAGE)
    return connection


@contextmanager
def _connection(settings: CliSettings) -> Iterator[tuple[Any, ConnectionSettings]]:
    target = _oracle_connection(settings)
    try:
        import oracledb
    except ImportError:
        raise CliError("python-oracledb is not installed: pip install 'palimpsest-memory[oracle]'.") from None
    try:
        connection = oracledb.connect(user=target.user, password=target.password, dsn=target.target)
    except oracledb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CliError(f"cannot connect to Oracle at {target.target}: {first}") from exc
    try:
        yield connection, target
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
    with _connection(settings) as (connection, target):
        # Imported once connected: the adapter's modules need the driver, which _connection checked.
        from palimpsest.adapters.oracle import administer_schema, registered_version, store_label

        store_id = target.memory_store_id
        label = store_label(store_id)
        if action == "upgrade" and registered_version(connection, memory_store_id=store_id) is None:
            raise SchemaVersionError(f"{label} is not installed; run 'palimpsest oracle install' first.")
        report = administer_schema(
            connection,
            action,
            memory_store_id=store_id,
            dimension=None if action == "check" else dimension,
            vector_index=vector_index,
        )
    details = _describe(report.dimension, report.vector_index, report.has_vector_index)
    if action == "check":
        return f"{label} is installed: schema v{report.schema_version}, {details}."
    if action == "install":
        what = f"created {report.created} object(s)" if report.created else "every object was already there"
        return f"{label} is installed ({what}): schema v{report.schema_version}, {details}."
    if not report.upgraded:
        return (
            f"{label} is already at schema v{report.schema_version}; nothing to upgrade "
            "(missing objects, if any, were created)."
        )
    return f"{label} upgraded from schema v{report.previous_version} to v{report.schema_version}."
