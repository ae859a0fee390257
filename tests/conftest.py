"""Fixtures shared by every test folder: the Oracle database of the optional Oracle-backed tests.

``oracle_pool`` gives a python-oracledb pool on ``ORACLE_DSN`` or on a container started once per
session when a Docker engine answers; otherwise the test asking for it is skipped at once, with
one reason. Nothing connects or builds a container at import or collection time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import oracle_database
import pytest


@pytest.fixture(scope="session")
def oracle_target() -> Iterator[oracle_database.OracleTarget]:
    """The Oracle database of this session (ORACLE_DSN, else a container), or a skip."""
    target = oracle_database.target_from_environment()
    if target is not None:
        yield target
        return
    if not oracle_database.docker_engine_answers():
        pytest.skip(oracle_database.SKIP_REASON)
    yield from oracle_database.container_target()


@pytest.fixture(scope="session")
def oracle_pool(oracle_target: oracle_database.OracleTarget) -> Iterator[Any]:
    pool = oracle_target.create_pool()
    try:
        yield pool
    finally:
        pool.close(force=True)
