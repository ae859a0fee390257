"""Adapters layer (command line): ``palimpsest oracle install|check|upgrade``, the Oracle schema by hand.

Each action opens one connection to ``--oracle-dsn`` and hands it to the Oracle adapter's
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
        yield connection
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
        from palimpsest.adapters.oracle import administer_schema, registered_version, store_label

        store_id = settings.memory_store_id
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
