"""Fixtures of the reliability tests: ``store_spec``, the store a crash or concurrency test runs
on, once per backend that keeps a store across processes: an embedded file in the test's
folder, and a fresh PostgreSQL store (its own ``memory_store_id``) on the session's server
(``postgres_target``), dropped afterwards; ``postgres_store_spec`` is the latter alone, for a
test of PostgreSQL's own behaviour. Specs are described in ``reliability_stores``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_stores import drop, postgres_spec

BACKENDS = ("embedded", pytest.param("postgres", marks=pytest.mark.postgres))


def _postgres(request: pytest.FixtureRequest) -> Iterator[str]:
    target = request.getfixturevalue("postgres_target")
    spec = postgres_spec(target.url, f"rel{uuid.uuid4().hex[:12]}")
    try:
        yield spec
    finally:
        drop(spec)


@pytest.fixture(params=BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "embedded":
        yield str(tmp_path / "store.db")
        return
    yield from _postgres(request)


@pytest.fixture
def postgres_store_spec(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from _postgres(request)
