"""Adapters layer: the one table of storage backends (name → how to open a store, what it needs),
and where a store is: a path, ``":memory:"`` or a URL, parsed once for every caller.

:data:`BACKENDS` is read by the composition root (``bootstrap.Container`` has one store
branch per row), by the command line and by the contract suite, which runs every contract test
once per row. A new store adapter is added here, once: its row says which URL schemes name its
stores, how to open its pool and its store, and how tests drop the stores they made.

:func:`parse_store_location` turns what a user gives (``open_memory(location)``, the command
line's ``--store``) into a :class:`StoreLocation`: no location or ``":memory:"`` is the
``memory`` backend, a path (``str`` or ``os.PathLike``) the ``embedded`` one, and a URL
``scheme://user:password@host:port/database?option=value`` the pooled row that lists its scheme,
with :class:`ConnectionSettings` parsed from it. The query string carries the store options
(:data:`URL_OPTIONS`) and the connection parameters of the row's ``url_params`` (PostgreSQL's
``host``, as in libpq: ``postgresql://user@/db?host=/var/run/postgresql`` names a Unix socket's
folder, as does a percent-encoded host, ``postgresql://%2Fvar%2Frun%2Fpostgresql/db``); any other
parameter is a ``ConfigurationError``. A password left out of the URL is read from the row's
environment variable (``ORACLE_PASSWORD`` for ``oracle://``, ``PGPASSWORD`` for ``postgresql://``);
PostgreSQL, as libpq, also connects without one (trust or peer authentication, ``~/.pgpass``) and
takes a user left out (no ``user@``) from ``PGUSER`` or the login name. A password never
appears in a ``repr``, a description or an error message. :class:`OracleSettings` is the old
spelling of Oracle's connection settings (``open_memory(oracle=...)``), kept working.

Each row's ``open_store`` takes keywords only: ``dimension`` always, ``path`` when its
``location`` is ``"path"``, and ``pool`` plus the store options of :class:`ConnectionSettings`
(``memory_store_id``, ``schema_policy``, ``vector_index``) when it is pooled. A pooled row
also says how to open its pool from the connection settings and how to close it; the root
owns that pool as a separate resource and closes it after its store. Driver packages are
imported only when a backend is opened, so reading the table is cheap.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from palimpsest.adapters.oracle.policy import SchemaPolicy
from palimpsest.domain.errors import ConfigurationError, StorageError
from palimpsest.domain.ports import MemoryStore

__all__ = [
    "BACKENDS",
    "MEMORY_LOCATION",
    "URL_OPTIONS",
    "Backend",
    "ConnectionSettings",
    "OracleSettings",
    "StoreLocation",
    "choose_backend",
    "close_oracle_pool",
    "open_oracle_pool",
    "parse_store_location",
    "requested_location",
]

MEMORY_LOCATION: Final = ":memory:"
"""The location of a store that lives in this process only (as no location at all)."""

URL_OPTIONS: Final = ("memory_store_id", "schema_policy", "vector_index", "pool_min", "pool_max")
"""The query parameters a store URL may carry: the store's own options and its pool's size."""

_PLANNED_SCHEMES: Final[dict[str, str]] = {}
"""URL schemes of backends announced but not in this version (no row yet): a clear error, not a guess."""

POSTGRES_DRIVER_MISSING = "psycopg is not installed: pip install 'palimpsest-memory[postgres]'."
ORACLE_DRIVER_MISSING = "python-oracledb is not installed: pip install 'palimpsest-memory[oracle]'."


def _check_pool_sizes(pool_min: object, pool_max: object) -> None:
    for name, value, least in (("pool_min", pool_min, 0), ("pool_max", pool_max, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(f"{name} must be an integer of at least {least}.")
    assert isinstance(pool_min, int) and isinstance(pool_max, int)
    if pool_min > pool_max:
        raise ConfigurationError("pool_min must not exceed pool_max.")


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """How to reach a store of a pooled backend: the row, where, as whom, and the store's options.

    ``target`` is the address the backend's driver connects to, without credentials (for
    Oracle, ``host:port/service`` or any python-oracledb DSN). ``password`` never shows in a
    ``repr``. ``schema_policy`` says what opening does with the schema (the default creates a
    missing store; ``"require_existing"`` refuses one that is not installed). Usually parsed
    from a URL by :func:`parse_store_location`; validated here, before anything connects.
    """

    backend: str
    target: str
    user: str
    password: str = field(repr=False)
    _: KW_ONLY
    memory_store_id: str | None = None
    schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY
    vector_index: str = "hnsw"
    pool_min: int = 1
    pool_max: int = 4

    def __post_init__(self) -> None:
        row = BACKENDS.get(self.backend) if isinstance(self.backend, str) else None
        if row is None or not row.pooled:
            pooled = ", ".join(repr(name) for name, known in BACKENDS.items() if known.pooled)
            raise ConfigurationError(f"connection settings are for a pooled backend ({pooled}), not {self.backend!r}.")
        for name in ("target", "user"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"the {self.backend} {name} must be a non-empty string.")
        if not isinstance(self.password, str):
            raise ConfigurationError(f"the {self.backend} password must be a string.")
        if self.memory_store_id is not None and (not isinstance(self.memory_store_id, str) or not self.memory_store_id):
            raise ConfigurationError("memory_store_id must be a non-empty string or None.")
        try:
            object.__setattr__(self, "schema_policy", SchemaPolicy(self.schema_policy))
        except ValueError:
            names = ", ".join(repr(policy.value) for policy in SchemaPolicy)
            raise ConfigurationError(f"schema_policy must be one of {names}, got {self.schema_policy!r}.") from None
        policy = SchemaPolicy(self.schema_policy)
        if policy not in row.schema_policies:
            names = ", ".join(repr(accepted.value) for accepted in row.schema_policies)
            raise ConfigurationError(f"the {self.backend} store takes schema_policy {names}, not {policy.value!r}.")
        if self.vector_index not in row.vector_indexes:
            names = ", ".join(map(repr, row.vector_indexes))
            raise ConfigurationError(f"vector_index must be one of {names}, got {self.vector_index!r}.")
        _check_pool_sizes(self.pool_min, self.pool_max)

    def store_options(self) -> dict[str, Any]:
        """The keywords of the store itself (the pool's settings are the rest)."""
        return {
            "memory_store_id": self.memory_store_id,
            "schema_policy": self.schema_policy,
            "vector_index": self.vector_index,
        }

    def describe(self) -> str:
        """A short human name for the store (no password)."""
        store = f"memory store {self.memory_store_id!r}" if self.memory_store_id else "the default memory store"
        return f"{self.backend} {self.user}@{self.target}, {store}"


@dataclass(frozen=True, slots=True)
class OracleSettings:
    """The old spelling of Oracle's connection settings (``open_memory(oracle=...)``), kept working.

    ``open_memory("oracle://user:password@host:port/service?memory_store_id=...")`` says the
    same; both become one :class:`ConnectionSettings` (:meth:`connection_settings`).
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
        _check_pool_sizes(self.pool_min, self.pool_max)

    def store_options(self) -> dict[str, Any]:
        """The keywords of the store itself (the pool's settings are the rest)."""
        return self.connection_settings().store_options()

    def connection_settings(self) -> ConnectionSettings:
        """The same settings in the generic form every pooled backend takes."""
        return ConnectionSettings(
            "oracle",
            self.dsn,
            self.user,
            self.password,
            memory_store_id=self.memory_store_id,
            schema_policy=self.schema_policy,
            vector_index=self.vector_index,
            pool_min=self.pool_min,
            pool_max=self.pool_max,
        )


@dataclass(frozen=True, slots=True)
class Backend:
    """One storage backend: its name, what names one store of it, and how to open one."""

    name: str
    summary: str
    location: Literal["path", "memory_store_id"] | None
    """What names one store: a file ``path``, a ``memory_store_id`` in a database, or nothing
    (the store lives in one instance only and cannot be opened again)."""
    open_store: Callable[..., MemoryStore]
    open_pool: Callable[[ConnectionSettings], Any] | None = None
    """For a backend whose stores live on a connection pool: opens the pool from the
    connection settings (the root owns it as a separate resource, closed after its stores)."""
    close_pool: Callable[[Any], None] | None = None
    _: KW_ONLY
    schemes: tuple[str, ...] = ()
    """The URL schemes that name a store of this backend (``oracle`` for ``oracle://...``)."""
    url_target: Callable[[str, int | None, str], str] | None = None
    """Builds the driver's address (``ConnectionSettings.target``) from a URL's host, port and
    database (the path without its leading ``/``)."""
    password_env: str | None = None
    """The environment variable a URL without a password takes it from."""
    password_optional: bool = False
    """Whether a URL may give no password at all (the driver then finds one, or needs none)."""
    default_user: Callable[[Mapping[str, str]], str] | None = None
    """The user of a URL that names none (no ``user@``), from the environment; ``None``: required."""
    url_params: tuple[str, ...] = ()
    """Connection parameters the URL's query string may carry besides :data:`URL_OPTIONS`
    (PostgreSQL's ``host``: a Unix socket's folder); refused by every other row."""
    vector_indexes: tuple[str, ...] = ()
    """The values of the ``vector_index`` store option it accepts."""
    schema_policies: tuple[SchemaPolicy, ...] = tuple(SchemaPolicy)
    """The values of the ``schema_policy`` store option it accepts."""
    drop_stores: Callable[[Any, Sequence[str]], None] | None = None
    """Drops the stores of these ``memory_store_id`` s entirely, on an open pool: how the test
    suites clean up the stores they made (nothing else calls it)."""

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


def open_oracle_pool(settings: ConnectionSettings | OracleSettings) -> Any:
    """A python-oracledb pool for ``settings``; ``StorageError`` when the database does not answer."""
    if isinstance(settings, OracleSettings):
        settings = settings.connection_settings()
    try:
        import oracledb
    except ImportError:
        raise ConfigurationError(ORACLE_DRIVER_MISSING) from None
    try:
        return oracledb.create_pool(
            user=settings.user,
            password=settings.password,
            dsn=settings.target,
            min=settings.pool_min,
            max=settings.pool_max,
            increment=1,
        )
    except oracledb.Error as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise StorageError(f"cannot connect to Oracle at {settings.target}: {first}") from exc


def close_oracle_pool(pool: Any) -> None:
    """Close the pool even if a connection is still out (its store is closed by then)."""
    pool.close(force=True)


def _oracle_target(host: str, port: int | None, database: str) -> str:
    """An Easy Connect address, ``host[:port][/service]`` (an IPv6 host in brackets)."""
    address = f"[{host}]" if ":" in host else host
    if port is not None:
        address += f":{port}"
    return f"{address}/{database}" if database else address


def _drop_oracle_stores(pool: Any, memory_store_ids: Sequence[str]) -> None:
    from .oracle.names import StoreNames
    from .oracle.schema import SchemaManager

    connection = pool.acquire()
    try:
        for store_id in memory_store_ids:
            SchemaManager(StoreNames(store_id)).drop(connection)
    finally:
        pool.release(connection)


def _open_postgres(
    *,
    pool: Any,
    memory_store_id: str | None = None,
    dimension: int | None = None,
    schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
    vector_index: str = "hnsw",
) -> MemoryStore:
    from .postgres.schema import schema_name, schema_state
    from .postgres.store import PostgresStore

    if SchemaPolicy(schema_policy) is SchemaPolicy.REQUIRE_EXISTING:
        with pool.connection() as conn:
            if schema_state(conn, schema_name(memory_store_id)).version is None:
                raise ConfigurationError(
                    f"no PostgreSQL memory store {memory_store_id or 'default'!r} is installed at {pool.location}."
                )
    return PostgresStore(pool, memory_store_id=memory_store_id, dimension=dimension)


def open_postgres_pool(settings: ConnectionSettings) -> Any:
    """A psycopg pool (``PostgresDatabase``) for ``settings``; typed errors when the server cannot be used."""
    try:
        from psycopg import conninfo

        from .postgres.connection import PostgresDatabase
    except ImportError:
        raise ConfigurationError(POSTGRES_DRIVER_MISSING) from None
    # No password given: libpq's own sources apply (PGPASSWORD, ~/.pgpass), or none is needed.
    url = conninfo.make_conninfo(settings.target, user=settings.user, password=settings.password or None)
    return PostgresDatabase(url, min_size=settings.pool_min, max_size=settings.pool_max)


def close_postgres_pool(pool: Any) -> None:
    pool.close()


def _postgres_target(host: str, port: int | None, database: str) -> str:
    """A libpq connection string without credentials: ``host=... port=... dbname=...`` (a host
    that starts with ``/`` is the folder of the server's Unix socket)."""
    from psycopg import conninfo

    return conninfo.make_conninfo(host=host, port=port, dbname=database or None)


def _postgres_user(environ: Mapping[str, str]) -> str:
    """libpq's user when a URL names none: ``PGUSER``, else the login name."""
    return environ.get("PGUSER") or getpass.getuser()


def _drop_postgres_stores(pool: Any, memory_store_ids: Sequence[str]) -> None:
    from psycopg import sql

    from .postgres.schema import schema_name

    with pool.connection() as conn:
        for store_id in memory_store_ids:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema_name(store_id)))
            )
        conn.commit()


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
                schemes=("oracle",),
                url_target=_oracle_target,
                password_env="ORACLE_PASSWORD",
                vector_indexes=("hnsw", "ivf", "none"),
                drop_stores=_drop_oracle_stores,
            ),
            Backend(
                "postgres",
                "PostgreSQL with pgvector through a psycopg pool",
                "memory_store_id",
                _open_postgres,
                open_pool=open_postgres_pool,
                close_pool=close_postgres_pool,
                schemes=("postgresql", "postgres"),
                url_target=_postgres_target,
                password_env="PGPASSWORD",
                password_optional=True,
                default_user=_postgres_user,
                url_params=("host",),
                vector_indexes=("hnsw",),
                # It checks and migrates its schema whenever it opens: nothing to skip.
                schema_policies=tuple(p for p in SchemaPolicy if p is not SchemaPolicy.NO_CHECK),
                drop_stores=_drop_postgres_stores,
            ),
        )
    }
)
"""Every storage backend, by name."""


# --- where a store is --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where one store is: the backend row, and its ``path`` or its ``connection`` settings."""

    backend: str
    path: str | None = None
    connection: ConnectionSettings | None = None

    def describe(self) -> str:
        """A short human name for the store (no password)."""
        if self.connection is not None:
            return self.connection.describe()
        if self.path is not None:
            return f"store file {self.path}"
        return "a store in this process only"

    def requiring_existing(self) -> StoreLocation:
        """The same location, opened only if its store is already installed (a pooled store's
        schema policy becomes ``REQUIRE_EXISTING``, unless it is ``NO_CHECK``, which creates
        nothing either and must not read the schema; a file is left to its caller to check)."""
        if self.connection is None or self.connection.schema_policy is SchemaPolicy.NO_CHECK:
            return self
        return replace(self, connection=replace(self.connection, schema_policy=SchemaPolicy.REQUIRE_EXISTING))


def _row_named_by(location: Literal["path"] | None) -> Backend:
    return next(backend for backend in BACKENDS.values() if backend.location == location and not backend.pooled)


def _scheme_of(text: str) -> str | None:
    head, separator, _ = text.partition("://")
    if not separator or not head or not head[0].isalpha():
        return None
    if not all(char.isalnum() or char in "+-." for char in head):
        return None
    return head.lower()


def parse_store_location(location: object, *, environ: Mapping[str, str] | None = None) -> StoreLocation:
    """Where a store is, from what a user gives; nothing is opened or connected.

    ``None`` and ``":memory:"`` name a store in this process only; a ``str`` or ``os.PathLike``
    path a store file; a URL (``scheme://...``) a store of the pooled backend whose row lists
    the scheme; a :class:`ConnectionSettings`, :class:`OracleSettings` or :class:`StoreLocation`
    is taken as it is. ``environ`` (default ``os.environ``) supplies a password the URL leaves
    out. Raises ``ConfigurationError`` for anything else, with no password in the message.
    """
    if location is None:
        return StoreLocation(_row_named_by(None).name)
    if isinstance(location, StoreLocation):
        return location
    if isinstance(location, OracleSettings):
        location = location.connection_settings()
    if isinstance(location, ConnectionSettings):
        return StoreLocation(location.backend, connection=location)
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if not isinstance(location, str):
        raise ConfigurationError(
            "a store location is a path, ':memory:', a URL or ConnectionSettings, "
            f"not {type(location).__name__}."
        )
    if not location.strip():
        raise ConfigurationError("the store location is empty: give a path, ':memory:' or a URL.")
    if location == MEMORY_LOCATION:
        return StoreLocation(_row_named_by(None).name)
    scheme = _scheme_of(location)
    if scheme is None:
        return StoreLocation(_row_named_by("path").name, path=location)
    connection = _settings_from_url(location, scheme, os.environ if environ is None else environ)
    return StoreLocation(connection.backend, connection=connection)


def _schemes() -> str:
    return ", ".join(f"{scheme}://" for backend in BACKENDS.values() for scheme in backend.schemes)


def _settings_from_url(url: str, scheme: str, environ: Mapping[str, str]) -> ConnectionSettings:
    row = next((backend for backend in BACKENDS.values() if scheme in backend.schemes), None)
    if row is None:
        planned = _PLANNED_SCHEMES.get(scheme)
        if planned is not None:
            raise ConfigurationError(
                f"{scheme}:// stores need the {planned} backend, which this version of palimpsest does not "
                f"have yet; use a file path, ':memory:' or a URL of {_schemes()}."
            )
        raise ConfigurationError(
            f"no backend opens {scheme}:// URLs; a store location is a file path, ':memory:' or a URL of "
            f"{_schemes()}."
        )
    assert row.url_target is not None, f"the {row.name} row lists URL schemes but builds no target"
    where = f"the {scheme}:// URL"  # never the URL itself: it may hold a password
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ConfigurationError(f"{where} is malformed (its host or port does not parse).") from None
    if parts.fragment:
        raise ConfigurationError(f"{where} has a '#' part; a '#' in a password is written %23.")
    options, params = _url_options(parts.query, where, row)
    sockets = "host" in row.url_params
    if sockets:
        host = _socket_folder(parts.netloc) or host
    if "host" in params:
        if host:
            raise ConfigurationError(f"{where} names its host twice (before the path and in ?host=).")
        host = params["host"]
    usage = f"{scheme}://USER@HOST:PORT/DATABASE" + (f" or {scheme}://USER@/DATABASE?host=/SOCKET/FOLDER" if sockets else "")
    if not host:
        raise ConfigurationError(f"{where} names no host: {usage}.")
    if parts.username:
        user = unquote(parts.username)
    elif "@" not in parts.netloc and row.default_user is not None:
        user = row.default_user(environ)  # libpq's default: no user@ at all
    else:
        raise ConfigurationError(f"{where} names no user: {usage}.")
    password = unquote(parts.password) if parts.password is not None else None
    if password is None and row.password_env is not None:
        password = environ.get(row.password_env)
    if password is None and row.password_optional:
        password = ""  # the driver's own sources, or an authentication that needs none
    if password is None:
        hint = f" or set {row.password_env}" if row.password_env else ""
        raise ConfigurationError(f"{where} has no password: write {scheme}://USER:PASSWORD@...{hint}.")
    return ConnectionSettings(
        row.name,
        row.url_target(host, port, unquote(parts.path.lstrip("/"))),
        user,
        password,
        **options,
    )


def _socket_folder(netloc: str) -> str | None:
    """The Unix socket folder a URL names as its host, percent-encoded (``%2Fvar%2Frun%2Fpostgresql``),
    case kept; ``None`` when the host is not a path."""
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        return None
    folder = unquote(host.partition(":")[0])
    return folder if folder.startswith("/") else None


def _url_options(query: str, where: str, row: Backend) -> tuple[dict[str, Any], dict[str, str]]:
    """The store options of a URL's query string, and the row's connection parameters."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError:
        raise ConfigurationError(f"{where} has a malformed query string (write ?name=value&name=value).") from None
    options: dict[str, Any] = {}
    params: dict[str, str] = {}
    for name, value in pairs:
        if name not in URL_OPTIONS and name not in row.url_params:
            raise ConfigurationError(
                f"{where} has an unknown parameter {name!r}; it takes {', '.join(URL_OPTIONS + row.url_params)}."
            )
        if name in options or name in params:
            raise ConfigurationError(f"{where} gives {name!r} twice.")
        if not value:
            raise ConfigurationError(f"{where} gives {name!r} no value.")
        if name in row.url_params:
            params[name] = value
        elif name in ("pool_min", "pool_max"):
            if not value.isdigit():
                raise ConfigurationError(f"{name} must be an integer, got {value!r}.")
            options[name] = int(value)
        else:
            options[name] = value
    return options, params


def requested_location(location: object = None, *, oracle: object = None) -> StoreLocation | None:
    """The location of ``open_memory(location, oracle=...)``: ``location`` parsed, or the old
    spelling ``oracle=OracleSettings(...)``; ``None`` when neither is given."""
    if oracle is None:
        return None if location is None else parse_store_location(location)
    if not isinstance(oracle, OracleSettings):
        raise ConfigurationError("oracle must be an OracleSettings (or give a URL: oracle://...).")
    if location is not None:
        raise ConfigurationError("pass either a location or oracle=OracleSettings(...), not both.")
    return parse_store_location(oracle)


def choose_backend(backend: str | None = None, location: StoreLocation | None = None) -> Backend:
    """The backend a request names, or the one its location implies; nothing is opened.

    Without ``backend``: the location's backend, or ``"memory"`` without a location. Raises
    ``ConfigurationError`` for an unknown name, or a location that does not fit the backend
    (a path for Oracle, no connection settings for it...).
    """
    name = backend or (location.backend if location is not None else _row_named_by(None).name)
    chosen = BACKENDS.get(name) if isinstance(name, str) else None
    if chosen is None:
        names = ", ".join(repr(known) for known in BACKENDS)
        raise ConfigurationError(f"backend must be one of {names}, got {name!r}.")
    if location is None or location.backend == chosen.name:
        if chosen.location == "path" and (location is None or location.path is None):
            raise ConfigurationError(f"the {chosen.name} backend needs a path for its store file.")
        if chosen.pooled and (location is None or location.connection is None):
            schemes = " or ".join(f"{scheme}://USER:PASSWORD@HOST:PORT/DATABASE" for scheme in chosen.schemes)
            raise ConfigurationError(f"the {chosen.name} backend needs a URL ({schemes}) or its connection settings.")
        return chosen
    raise ConfigurationError(f"the location names {location.describe()}, not a store of the {chosen.name!r} backend.")
