"""Unix-socket ``postgresql://`` URLs, as libpq spells them, open a store on the session's server
through ``open_memory`` and the command line (the private test server listens on a socket only)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from palimpsest.adapters.postgres.store import PostgresStore
from palimpsest.domain.errors import ConfigurationError
from postgres_server import PASSWORD_ROLE, PostgresTarget
from psycopg import conninfo, sql
from typer.testing import CliRunner


@pytest.fixture
def socket(postgres_target: PostgresTarget) -> tuple[str, str, str]:
    """The session server's socket folder, user and database (skips on a TCP-only server)."""
    params = conninfo.conninfo_to_dict(postgres_target.url)
    folder = str(params.get("host") or "")
    if not folder.startswith("/"):
        pytest.skip("the session's server is not reached through a Unix socket")
    return folder, str(params.get("user") or "postgres"), str(params.get("dbname") or "postgres")


@pytest.fixture
def store_ids(postgres_target: PostgresTarget) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    with psycopg.connect(postgres_target.url, autocommit=True) as conn:
        for store_id in made:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"palimpsest_{store_id.lower()}")))


def _spellings(folder: str, user: str, dbname: str) -> list[str]:
    return [
        f"postgresql://{user}@/{dbname}?host={folder}",
        f"postgres://{user}:@/{dbname}?host={quote(folder)}",
        f"postgresql:///{dbname}?host={folder}",  # the user from PGUSER
        f"postgresql://{user}@{quote(folder, safe='')}/{dbname}",
        f"postgresql://{quote(folder, safe='')}/{dbname}",
    ]


def test_every_libpq_spelling_of_a_socket_url_opens_the_same_store(
    socket: tuple[str, str, str], store_ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, user, dbname = socket
    monkeypatch.setenv("PGUSER", user)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    store_id = f"s{uuid.uuid4().hex[:10]}"
    store_ids.append(store_id)
    for number, url in enumerate(_spellings(folder, user, dbname)):
        separator = "&" if "?" in url else "?"
        with open_memory(f"{url}{separator}memory_store_id={store_id}", embedder=HashingEmbedder()) as memory:
            assert isinstance(memory.store, PostgresStore)
            memory.add_memory(f"Socket note number {number}.", user_id="u", memory_id=f"m{number}")
            found = {result.id for result in memory.search("socket note", user_id="u", max_results=10)}
            assert found == {f"m{n}" for n in range(number + 1)}  # each spelling sees the others' writes


def test_the_command_line_reaches_a_store_through_a_socket_url(
    socket: tuple[str, str, str], store_ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, user, dbname = socket
    monkeypatch.delenv("PALIMPSEST_STORE", raising=False)
    store_id = f"c{uuid.uuid4().hex[:10]}"
    store_ids.append(store_id)
    url = f"postgresql://{user}@/{dbname}?host={folder}&memory_store_id={store_id}"
    with open_memory(url, embedder=HashingEmbedder()) as memory:
        memory.add_memory("The user keeps bees in Ghent.", user_id="u", memory_id="bees")
    result = CliRunner().invoke(app, ["--store", url, "--embedder", "hashing", "search", "bees", "--user", "u"])
    assert result.exit_code == 0, result.output
    assert "bees" in result.output and "Ghent" in result.output


def test_a_wrong_password_over_a_socket_is_a_configuration_error_that_does_not_show_it(
    postgres_target: PostgresTarget, socket: tuple[str, str, str]
) -> None:
    if not postgres_target.password_checked:
        pytest.skip("this server does not check the test role's password")
    folder, _, dbname = socket
    secret = "wrong-Secret-9"
    with pytest.raises(ConfigurationError) as raised:
        open_memory(f"postgresql://{PASSWORD_ROLE}:{secret}@/{dbname}?host={folder}", embedder=HashingEmbedder())
    error: BaseException | None = raised.value
    while error is not None:
        assert secret not in str(error) and secret not in repr(error)
        error = error.__cause__ or error.__context__
