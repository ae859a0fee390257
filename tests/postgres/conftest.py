"""Fixtures of the PostgreSQL suite: stores (one fresh schema each) on the session's server.

Every test of this folder runs against the real server of ``postgres_target`` (see
``tests/postgres_server.py``); ``stores`` opens :class:`PostgresStoreCore` instances on fresh
``memory_store_id`` values and drops their schemas after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from palimpsest.adapters.postgres import PostgresStoreCore
from postgres_server import PostgresTarget
from psycopg import sql


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/postgres/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.postgres)


class StoreFactory:
    def __init__(self, target: PostgresTarget) -> None:
        self.target = target
        self.url = target.url
        self._opened: list[PostgresStoreCore] = []
        self._schemas: set[str] = set()

    def new_id(self) -> str:
        return f"t{uuid.uuid4().hex[:12]}"

    def open(self, memory_store_id: str | None = None, **options: Any) -> PostgresStoreCore:
        store_id = memory_store_id or self.new_id()
        self._schemas.add(f"palimpsest_{store_id.lower()}")
        core = PostgresStoreCore(self.url, memory_store_id=store_id, **options)
        self._opened.append(core)
        return core

    def close_all(self) -> None:
        for core in self._opened:
            core.close()
        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema in self._schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def stores(postgres_target: PostgresTarget) -> Iterator[StoreFactory]:
    factory = StoreFactory(postgres_target)
    try:
        yield factory
    finally:
        factory.close_all()
