"""The one store fixture of the contract suite, parametrised over every backend.

Every contract test takes ``store`` (an empty store of dimension 4) and so runs once per row
of the backend registry (``palimpsest.adapters.backends.BACKENDS``, the table the composition
root opens stores with), each store opened by that row's own ``open_store``. A pooled backend
is marked with its name and runs on its session pool (``<name>_pool`` in ``tests/conftest.py``):
PostgreSQL on the session's server (``tests/postgres_server.py``: ``PALIMPSEST_POSTGRES_URL``,
else a private server, in the default run too), Oracle on ``ORACLE_DSN`` or a container on a
Docker engine, and otherwise skips at once with one reason (``tests/oracle_database.py``); each
of its stores is a fresh ``memory_store_id``, dropped afterwards by the row's own
``drop_stores`` hook, except that a PostgreSQL store of a given dimension is emptied and given to
a later test instead when it is still exactly what a new store is (:class:`PostgresStock`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from palimpsest.adapters.backends import BACKENDS
from palimpsest.domain.errors import AgentMemoryError
from palimpsest.domain.ports import MemoryStore

from .builders import DIMENSION


class StoreFactory:
    """Opens stores of one adapter; closes all of them at teardown.

    ``persistent`` adapters can :meth:`reopen` a store (same location, new instance) and
    :meth:`open_again` a second live instance on the same location.
    """

    def __init__(self, adapter: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> None:
        self.adapter = adapter
        self._tmp_path = tmp_path
        self._opened: list[MemoryStore] = []
        self._locations: dict[int, Any] = {}
        self._count = 0
        backend = BACKENDS[adapter]
        self.persistent = backend.persistent
        self._open: Callable[[Any, int | None], MemoryStore]
        self._stock: PostgresStock | None = None
        self._dimensions: dict[Any, int | None] = {}
        if backend.pooled:
            assert request is not None
            pool = request.getfixturevalue(f"{adapter}_pool")  # skips when no database answers
            self._pool = pool
            self._open = lambda store_id, dimension: backend.open_store(
                pool=pool, memory_store_id=store_id, dimension=dimension
            )
            if adapter == "postgres":
                self._stock = request.getfixturevalue("postgres_stock")
        elif backend.location == "path":
            self._open = lambda location, dimension: backend.open_store(path=location, dimension=dimension)
        else:
            self._open = lambda _location, dimension: backend.open_store(dimension=dimension)

    def _location(self) -> Any:
        self._count += 1
        if BACKENDS[self.adapter].location == "memory_store_id":
            return f"T{uuid.uuid4().hex[:12].upper()}"  # a fresh memory_store_id per store
        return self._tmp_path / f"store{self._count}.db"

    def _track(self, store: MemoryStore, location: Any) -> MemoryStore:
        self._opened.append(store)
        self._locations[id(store)] = location
        return store

    def new(self, dimension: int | None = DIMENSION) -> MemoryStore:
        """A new, empty store."""
        if self._stock is not None and dimension is not None:
            emptied = self._stock.take(dimension)
            if emptied is not None:  # an emptied store of the same dimension: as a new one, without the DDL
                self._dimensions[emptied] = dimension
                return self._track(self._open(emptied, dimension), emptied)
        location = self._location()
        store = self._open(location, dimension)
        if self._stock is not None:
            self._dimensions[location] = dimension
            if dimension is not None:
                self._stock.learn(location, dimension)
        return self._track(store, location)

    def open_again(self, store: MemoryStore, dimension: int | None = DIMENSION) -> MemoryStore:
        """A second live instance on the same location as ``store`` (persistent adapters)."""
        if not self.persistent:
            pytest.skip(f"the {self.adapter} adapter keeps its data in one instance only")
        location = self._locations[id(store)]
        return self._track(self._open(location, dimension), location)

    def reopen(self, store: MemoryStore, dimension: int | None = DIMENSION) -> MemoryStore:
        """Close ``store`` and open its location again (persistent adapters)."""
        if not self.persistent:
            pytest.skip(f"the {self.adapter} adapter does not persist across instances")
        store.close()
        return self.open_again(store, dimension)

    def close_all(self) -> None:
        for store in reversed(self._opened):
            store.close()
        locations = sorted(set(self._locations.values()))
        if self._stock is not None:
            locations = [store_id for store_id in locations if not self._stock.give_back(store_id, self._dimensions.get(store_id))]
        drop_stores = BACKENDS[self.adapter].drop_stores
        if drop_stores is not None and locations:  # a backend whose stores outlive their instances drops its own
            drop_stores(self._pool, locations)


class PostgresStock:
    """Emptied PostgreSQL stores of this session, by dimension, which :meth:`StoreFactory.new`
    takes before it creates a schema (the DDL of a new store costs about 0.2 s; the suite makes
    hundreds). A store is given back only when it is exactly what a new store of its dimension
    is, rows aside: the same tables, columns, indexes and triggers, the same ``schema_version``
    and ``meta`` rows as the first new store of that dimension of the session. Its tables are
    then emptied and the rows a new store starts with (``keyword_totals``) written again, in one
    transaction; anything else (another structure, a lock held, an error) drops it, as before."""

    KEPT = ("schema_version", "meta")  # compared, not emptied

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._free: dict[int, list[str]] = {}
        self._reference: dict[int, tuple[Any, dict[str, list[tuple[Any, ...]]]]] = {}

    def _read(
        self, conn: Any, store_id: str, only: tuple[str, ...] | None = None
    ) -> tuple[Any, dict[str, list[tuple[Any, ...]]]]:
        """The schema's structure, and the rows of its tables (of ``only`` when given)."""
        from palimpsest.adapters.postgres.schema import schema_name
        from psycopg import sql

        schema = schema_name(store_id)
        structure = (
            conn.execute(
                "SELECT c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull"
                " FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0"
                " AND NOT a.attisdropped WHERE c.relnamespace = %s::regnamespace ORDER BY 1, 3",
                (schema,),
            ).fetchall(),
            [
                (name, definition.replace(schema, "<schema>"))
                for name, definition in conn.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s ORDER BY 1", (schema,)
                ).fetchall()
            ],
            conn.execute(
                "SELECT c.relname, t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON t.tgrelid = c.oid"
                " WHERE c.relnamespace = %s::regnamespace AND NOT t.tgisinternal ORDER BY 1, 2",
                (schema,),
            ).fetchall(),
        )
        tables = [name for name, kind, *_ in structure[0] if kind in ("r", "p")]
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for table in dict.fromkeys(tables):
            if only is not None and table not in only:
                continue
            found = conn.execute(
                sql.SQL("SELECT * FROM {} ORDER BY 1").format(sql.Identifier(schema, table))
            ).fetchall()
            if table == "schema_version":
                found = [row[:2] for row in found]  # the time each step was applied differs
            rows[table] = found
        return structure, rows

    def learn(self, store_id: str, dimension: int) -> None:
        """Take a new store's structure and rows as the reference of its dimension (the first one)."""
        if dimension in self._reference:
            return
        with self._pool.connection() as conn:
            self._reference[dimension] = self._read(conn, store_id)

    def drop_all(self) -> None:
        drop_stores = BACKENDS["postgres"].drop_stores
        assert drop_stores is not None
        free = sorted(store_id for ids in self._free.values() for store_id in ids)
        self._free.clear()
        if free:
            drop_stores(self._pool, free)

    def take(self, dimension: int) -> str | None:
        free = self._free.get(dimension)
        return free.pop() if free else None

    def give_back(self, store_id: str, dimension: int | None) -> bool:
        """Empty the store for a later test; ``False``: it must be dropped."""
        from palimpsest.adapters.postgres.schema import schema_name
        from psycopg import sql

        reference = self._reference.get(dimension) if dimension is not None else None
        if reference is None:
            return False
        structure, start_rows = reference
        schema = schema_name(store_id)
        try:
            with self._pool.connection() as conn:
                conn.execute("SET LOCAL lock_timeout = '2s'")
                now_structure, now_rows = self._read(conn, store_id, self.KEPT)
                if now_structure != structure or any(now_rows[t] != start_rows[t] for t in self.KEPT):
                    return False
                emptied = [t for t in start_rows if t not in self.KEPT]
                conn.execute(
                    sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(sql.Identifier(schema, t) for t in emptied))
                )
                for table in emptied:
                    for row in start_rows[table]:
                        conn.execute(
                            sql.SQL("INSERT INTO {} VALUES ({})").format(
                                sql.Identifier(schema, table), sql.SQL(", ").join(sql.Placeholder() * len(row))
                            ),
                            row,
                        )
                conn.commit()
        except (psycopg.Error, AgentMemoryError):
            return False
        assert dimension is not None
        self._free.setdefault(dimension, []).append(store_id)
        return True


ADAPTERS = [
    pytest.param(name, id=name, marks=getattr(pytest.mark, name) if backend.pooled else ())
    for name, backend in BACKENDS.items()
]
"""One parameter per registered backend; a pooled one carries its own marker (``-m oracle``)."""


@pytest.fixture(scope="session")
def postgres_stock(postgres_pool: Any) -> Iterator[PostgresStock]:
    """The session's emptied PostgreSQL stores, dropped at its end (on a server the session did
    not start too)."""
    stock = PostgresStock(postgres_pool)
    try:
        yield stock
    finally:
        stock.drop_all()


@pytest.fixture(params=ADAPTERS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of stores of one adapter (new, reopen, open_again)."""
    factory = StoreFactory(request.param, tmp_path, request)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture
def store(stores: StoreFactory) -> MemoryStore:
    """An empty store of dimension 4, closed after the test."""
    return stores.new(DIMENSION)
