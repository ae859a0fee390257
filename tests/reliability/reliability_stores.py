"""Reliability helpers: the stores the crash and concurrency tests run on, named by one string.

A child process gets its store as one command-line argument, a *spec*:

* an embedded store: the path of its file;
* a PostgreSQL store: the server's URL, ``#``, and the store's ``memory_store_id``
  (``postgresql://user@/db?host=/socket/dir#T1234``).

:func:`location` turns a spec into what the composition root opens (``build_container``, hence
``open_memory``): the path, or :class:`ConnectionSettings` of the ``postgres`` row (a pool of
its own, closed with the client). :func:`drop` removes a PostgreSQL store a test made.
"""

from __future__ import annotations

import os
from typing import Any

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(spec: str) -> bool:
    return spec.startswith(POSTGRES_SCHEMES)


def postgres_spec(url: str, memory_store_id: str) -> str:
    return f"{url}#{memory_store_id}"


def with_connection_options(spec: str, options: str) -> str:
    """A PostgreSQL spec whose connections start with these server settings (libpq ``options``,
    e.g. ``-c lock_timeout=500``)."""
    from urllib.parse import quote

    url, store_id = split(spec)
    return postgres_spec(f"{url}{'&' if '?' in url else '?'}options={quote(options)}", store_id)


def split(spec: str) -> tuple[str, str]:
    """A PostgreSQL spec's server URL and ``memory_store_id``."""
    url, _, store_id = spec.rpartition("#")
    assert url and store_id, f"not a PostgreSQL store spec: {spec!r}"
    return url, store_id


def location(spec: str, **pool: int) -> Any:
    """What ``build_container`` opens for ``spec`` (``pool``: ``pool_min``/``pool_max``)."""
    if not is_postgres(spec):
        return os.fspath(spec)
    from palimpsest.adapters.backends import ConnectionSettings
    from psycopg import conninfo

    url, store_id = split(spec)
    params = conninfo.conninfo_to_dict(url)
    user = str(params.pop("user"))
    password = str(params.pop("password", None) or "")
    return ConnectionSettings(
        "postgres", conninfo.make_conninfo(**params), user, password, memory_store_id=store_id, **pool
    )


def drop(spec: str) -> None:
    """Drop a PostgreSQL store's schema (a no-op for a file: the test's folder goes)."""
    if not is_postgres(spec):
        return
    import psycopg
    from palimpsest.adapters.postgres.schema import schema_name
    from psycopg import sql

    url, store_id = split(spec)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema_name(store_id))))


def open_store(spec: str) -> Any:
    """The store of ``spec``, opened directly (no client): for reading what a process left."""
    if not is_postgres(spec):
        from palimpsest.adapters.embedded import EmbeddedStore

        return EmbeddedStore(spec)
    from palimpsest.adapters.postgres.store import PostgresStore

    url, store_id = split(spec)
    return PostgresStore(url, memory_store_id=store_id, max_connections=2)
