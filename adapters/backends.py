"""Adapters layer: the one table of storage backends (name → how to open a store, what it needs).

:data:`BACKENDS` is read by the composition root (``bootstrap.Container`` has one store
branch per row, and :func:`choose_backend` checks a request against the table), by the
command line (``--store`` selects ``embedded``, ``--oracle-dsn`` selects ``oracle``) and by
the contract suite, which runs every contract test once per row. A new store adapter is
added here, once.

Each row's ``open_store`` takes keywords only: ``dimension`` always, ``path`` when its
``location`` is ``"path"``, and ``pool`` plus the store options of :class:`OracleSettings`
(``memory_store_id``, ``schema_policy``, ``vector_index``) when it is pooled. A pooled row
also says how to open its pool from the connection settings and how to close it; the root
owns that pool as a separate resource and closes it after its store. Driver packages are
imported only when a backend is opened, so reading the table is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from palimpsest.adapters.oracle.policy import SchemaPolicy
from palimpsest.domain.errors import ConfigurationError, StorageError
from palimpsest.domain.ports import MemoryStore

__all__ = [
    "BACKENDS",
    "Backend",
    "OracleSettings",
    "choose_backend",
    "close_oracle_pool",
    "open_oracle_pool",
]

ORACLE_DRIVER_MISSING = "python-oracledb is not installed: pip install 'palimpsest-memory[oracle]'."


@dataclass(frozen=True, slots=True)
class OracleSettings:
    """How to reach an Oracle store: the pool's connection settings and the store's options.

    ``schema_policy`` says what opening does with the schema (the default creates a missing
    store; ``REQUIRE_EXISTING`` refuses one that ``palimpsest oracle install`` has not made).
    """

    dsn: str
    user: str
    password: str = field(repr=False)
    _: KW_ONLY
    memory_store_id: str | None = None
    schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY
    vector_index: str = "hnsw"
    pool_min: int = 1
    pool_max: int = 4

    def __post_init__(self) -> None:
        for name in ("dsn", "user"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"the Oracle {name} must be a non-empty string.")
        if not isinstance(self.password, str):
            raise ConfigurationError("the Oracle password must be a string.")
        for name, least in (("pool_min", 0), ("pool_max", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigurationError(f"{name} must be an integer of at least {least}.")
        if self.pool_min > self.pool_max:
            raise ConfigurationError("pool_min must not exceed pool_max.")

    def store_options(self) -> dict[str, Any]:
        """The keywords of the store itself (the pool's settings are the rest)."""
        return {
            "memory_store_id": self.memory_store_id,
            "schema_policy": self.schema_policy,
            "vector_index": self.vector_index,
        }


@dataclass(frozen=True, slots=True)
class Backend:
    """One storage backend: its name, what names one store of it, and how to open one."""

    name: str
    summary: str
    location: Literal["path", "memory_store_id"] | None
    """What names one store: a file ``path``, a ``memory_store_id`` in a database, or nothing
    (the store lives in one instance only and cannot be opened again)."""
    open_store: Callable[..., MemoryStore]
    open_pool: Callable[[Any], Any] | None = None
    """For a backend whose stores live on a connection pool: opens the pool from the
    connection settings (the root owns it as a separate resource, closed after its stores)."""
    close_pool: Callable[[Any], None] | None = None

    @property
    def pooled(self) -> bool:
        """Whether its stores are opened on a pool (``pool=``) from connection settings."""
        return self.open_pool is not None

    @property
    def persistent(self) -> bool:
        """Whether a closed store can be opened again at the same location."""
        return self.location is not None


def _open_in_memory(*, dimension: int | None = None) -> MemoryStore:
    from .inmemory import InMemoryStore

    return InMemoryStore(dimension=dimension)


def _open_embedded(*, path: str | os.PathLike[str], dimension: int | None = None) -> MemoryStore:
    # Imported lazily: choosing another backend must not load numpy/networkx/sqlite.
    from .embedded import EmbeddedStore

    return EmbeddedStore(path, dimension=dimension)


def _open_oracle(
    *,
    pool: Any,
    memory_store_id: str | None = None,
    dimension: int | None = None,
    schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
    vector_index: str = "hnsw",
) -> MemoryStore:
    from .oracle import OracleStore

    return OracleStore(
        pool,
        memory_store_id=memory_store_id,
        dimension=dimension,
        schema_policy=schema_policy,
        vector_index=vector_index,
    )


def open_oracle_pool(settings: OracleSettings) -> Any:
    """A python-oracledb pool for ``settings``; ``StorageError`` when the database does not answer."""
    try:
        import oracledb
    except ImportError:
        raise ConfigurationError(ORACLE_DRIVER_MISSING) from None
    try:
        return oracledb.create_pool(
            user=settings.user,
            password=settings.password,
            dsn=settings.dsn,
            min=settings.pool_min,
            max=settings.pool_max,
            increment=1,
        )
    except oracledb.Error as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise StorageError(f"cannot connect to Oracle at {settings.dsn}: {first}") from exc


def close_oracle_pool(pool: Any) -> None:
    """Close the pool even if a connection is still out (its store is closed by then)."""
    pool.close(force=True)


BACKENDS: Mapping[str, Backend] = MappingProxyType(
    {
        backend.name: backend
        for backend in (
            Backend("memory", "in this process only (tests, throwaway clients)", None, _open_in_memory),
            Backend("embedded", "one SQLite file with numpy vectors", "path", _open_embedded),
            Backend(
                "oracle",
                "Oracle AI Database through a python-oracledb pool",
                "memory_store_id",
                _open_oracle,
                open_pool=open_oracle_pool,
                close_pool=close_oracle_pool,
            ),
        )
    }
)
"""Every storage backend, by name."""


def choose_backend(
    backend: str | None = None, *, path: object = None, oracle: OracleSettings | None = None
) -> Backend:
    """The backend a request names, or the one its arguments imply; nothing is opened.

    Without ``backend``: ``oracle`` settings select ``"oracle"``, a ``path`` ``"embedded"``,
    neither ``"memory"``. Raises ``ConfigurationError`` for an unknown name or arguments that
    do not fit the backend (a path for Oracle, Oracle settings for a file...).
    """
    if oracle is not None and not isinstance(oracle, OracleSettings):
        raise ConfigurationError("oracle must be an OracleSettings.")
    name = backend or ("oracle" if oracle is not None else "embedded" if path is not None else "memory")
    chosen = BACKENDS.get(name) if isinstance(name, str) else None
    if chosen is None:
        names = ", ".join(repr(known) for known in BACKENDS)
        raise ConfigurationError(f"backend must be one of {names}, got {name!r}.")
    if chosen.location == "path" and path is None:
        raise ConfigurationError(f"the {chosen.name} backend needs a path for its store file.")
    if chosen.pooled and oracle is None:
        raise ConfigurationError(
            f"the {chosen.name} backend needs its connection settings (oracle=OracleSettings(...))."
        )
    if chosen.pooled and path is not None:
        raise ConfigurationError(
            f"the {chosen.name} backend takes no path; its store is named by memory_store_id."
        )
    if not chosen.pooled and oracle is not None:
        raise ConfigurationError(f"Oracle settings go with the 'oracle' backend, not {chosen.name!r}.")
    return chosen
