"""Where a store is: ``parse_store_location`` turns a path, ``":memory:"`` or a URL into a backend
row and its settings, and ``open_memory`` opens what it names. A URL's password never shows in a
``repr``, a description, an error message or a log record."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.backends import (
    BACKENDS,
    URL_OPTIONS,
    ConnectionSettings,
    OracleSettings,
    StoreLocation,
    parse_store_location,
)
from palimpsest.adapters.bootstrap import build_container
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.adapters.oracle import SchemaPolicy
from palimpsest.domain import ConfigurationError
from palimpsest.domain.errors import StorageError
from psycopg import conninfo

SECRET = "s3cr3t-Pw"
URL = f"oracle://scott:{SECRET}@db.example:1521/FREEPDB1"


# --- paths and memory ----------------------------------------------------------------------------


def test_no_location_and_memory_name_the_in_process_store_and_a_path_names_a_store_file(tmp_path: Path) -> None:
    assert parse_store_location(None) == parse_store_location(":memory:") == StoreLocation("memory")
    assert parse_store_location("memory.db") == StoreLocation("embedded", path="memory.db")
    assert parse_store_location(tmp_path / "m.db") == StoreLocation("embedded", path=str(tmp_path / "m.db"))
    assert parse_store_location("C:\\stores\\m.db").backend == "embedded"  # a drive letter is no scheme


def test_open_memory_on_memory_is_the_in_process_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_memory(":memory:", embedder=HashingEmbedder()) as memory:
        assert isinstance(memory.store, InMemoryStore)
        memory.add_memory("Kept in this process.", user_id="u")
        assert memory.search("process", user_id="u")[0].content == "Kept in this process."
    assert list(tmp_path.iterdir()) == []  # no file called ":memory:"


@pytest.mark.parametrize("spell", [str, Path])
def test_open_memory_on_a_path_or_a_path_object_is_the_embedded_store(tmp_path: Path, spell: Any) -> None:
    path = tmp_path / "m.db"
    with open_memory(spell(path), embedder=HashingEmbedder()) as memory:
        assert isinstance(memory.store, EmbeddedStore)
        memory.add_memory("Kept in a file.", user_id="u")
    with open_memory(path=spell(path), embedder=HashingEmbedder()) as reopened:  # the old keyword
        assert [m.content for m in reopened.list_memories(user_id="u")] == ["Kept in a file."]


# --- URLs ----------------------------------------------------------------------------------------


def test_an_oracle_url_gives_the_same_settings_as_oracle_settings() -> None:
    url = f"{URL}?memory_store_id=ACME&schema_policy=require_existing&vector_index=ivf&pool_min=2&pool_max=8"
    location = parse_store_location(url)
    assert location.backend == "oracle" and location.path is None
    expected = ConnectionSettings(
        "oracle",
        "db.example:1521/FREEPDB1",
        "scott",
        SECRET,
        memory_store_id="ACME",
        schema_policy="require_existing",
        vector_index="ivf",
        pool_min=2,
        pool_max=8,
    )
    assert location.connection == expected
    old = OracleSettings(
        "db.example:1521/FREEPDB1",
        "scott",
        SECRET,
        memory_store_id="ACME",
        schema_policy="require_existing",
        vector_index="ivf",
        pool_min=2,
        pool_max=8,
    )
    assert parse_store_location(old) == location
    assert build_container(url).config.connection() == build_container(oracle=old).config.connection() == expected
    assert set(URL_OPTIONS) == {"memory_store_id", "schema_policy", "vector_index", "pool_min", "pool_max"}


def test_url_parts_are_decoded_and_defaults_fill_the_rest() -> None:
    connection = parse_store_location("ORACLE://Scott%40Corp:p%40ss%2Fw%3Ard@[::1]/FREE%20PDB").connection
    assert connection is not None
    assert (connection.user, connection.password, connection.target) == ("Scott@Corp", "p@ss/w:rd", "[::1]/FREE PDB")
    assert (connection.memory_store_id, connection.vector_index, connection.pool_min, connection.pool_max) == (
        None,
        "hnsw",
        1,
        4,
    )
    assert connection.schema_policy == "create_if_necessary"
    no_service = parse_store_location("oracle://scott:x@db:1521").connection
    assert no_service is not None and no_service.target == "db:1521"


def test_a_password_left_out_of_the_url_comes_from_the_rows_environment_variable() -> None:
    location = parse_store_location("oracle://scott@db:1521/FREEPDB1", environ={"ORACLE_PASSWORD": SECRET})
    assert location.connection is not None and location.connection.password == SECRET
    given = parse_store_location(URL, environ={"ORACLE_PASSWORD": "other"})
    assert given.connection is not None and given.connection.password == SECRET  # the URL's wins
    with pytest.raises(ConfigurationError, match=r"no password.*ORACLE_PASSWORD"):
        parse_store_location("oracle://scott@db:1521/FREEPDB1", environ={})


def test_the_environment_is_read_when_no_mapping_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORACLE_PASSWORD", SECRET)
    location = parse_store_location("oracle://scott@db:1521/FREEPDB1")
    assert location.connection is not None and location.connection.password == SECRET


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (f"postgresql://scott:{SECRET}@db:5432/memory?vector_index=ivf", "vector_index must be one of 'hnsw'"),
        (f"postgres://:{SECRET}@db/memory", "names no user"),
        (f"mysql://scott:{SECRET}@db/memory", "no backend opens mysql:// URLs"),
        (f"oracle://scott:{SECRET}@/FREEPDB1", "names no host"),
        (f"oracle://:{SECRET}@db/FREEPDB1", "names no user"),
        (f"oracle://scott:{SECRET}@db:port/FREEPDB1", "malformed"),
        (f"oracle://scott:{SECRET}@db:99999/FREEPDB1", "malformed"),
        (f"{URL}?colour=blue", "unknown parameter 'colour'; it takes memory_store_id, schema_policy"),
        (f"{URL}?password={SECRET}", "unknown parameter 'password'"),
        (f"{URL}?memory_store_id=A&memory_store_id=B", "gives 'memory_store_id' twice"),
        (f"{URL}?memory_store_id=", "gives 'memory_store_id' no value"),
        (f"{URL}?memory_store_id", "malformed query string"),
        (f"{URL}?pool_max=many", "pool_max must be an integer"),
        (f"{URL}?pool_max=0", "pool_max must be an integer of at least 1"),
        (f"{URL}?pool_min=5&pool_max=2", "pool_min must not exceed pool_max"),
        (f"{URL}?schema_policy=drop_everything", "schema_policy must be one of"),
        (f"postgresql://scott:{SECRET}@db/memory?schema_policy=no_check", "takes schema_policy 'require_existing'"),
        (f"{URL}?vector_index=btree", "vector_index must be one of 'hnsw', 'ivf', 'none'"),
        (f"{URL}#{SECRET}", "'#'"),
        ("", "empty"),
        ("   ", "empty"),
        (42, "not int"),
    ],
)
def test_a_location_that_does_not_parse_is_a_configuration_error_without_the_password(
    location: object, message: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_store_location(location, environ={})
    assert message in str(raised.value)
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)
    error: BaseException | None = raised.value
    while error is not None:  # nothing chained to it carries the password either
        assert SECRET not in str(error)
        error = error.__cause__ or error.__context__


def test_the_password_is_in_no_repr_and_no_description() -> None:
    location = parse_store_location(f"{URL}?memory_store_id=ACME")
    assert location.connection is not None
    for text in (repr(location), str(location), repr(location.connection), location.describe()):
        assert SECRET not in text
    assert location.describe() == "oracle scott@db.example:1521/FREEPDB1, memory store 'ACME'"
    assert SECRET not in repr(OracleSettings("db:1521/FREEPDB1", "scott", SECRET))


def test_an_oracle_url_may_ask_for_no_schema_check_and_keeps_it_when_opened_only_if_it_exists() -> None:
    location = parse_store_location(f"{URL}?schema_policy=no_check")
    assert location.connection is not None and location.connection.schema_policy == "no_check"
    assert location.connection.store_options()["schema_policy"] is SchemaPolicy.NO_CHECK
    assert location.requiring_existing() == location  # NO_CHECK creates nothing and reads no schema


def test_opening_a_store_only_if_it_exists_changes_a_database_store_s_policy_only() -> None:
    location = parse_store_location(f"{URL}?schema_policy=recreate")
    existing = location.requiring_existing()
    assert existing.connection is not None and existing.connection.schema_policy == "require_existing"
    assert existing.connection.password == SECRET and existing.backend == "oracle"
    assert parse_store_location("m.db").requiring_existing() == parse_store_location("m.db")


def test_a_postgresql_url_names_the_postgres_row_with_its_settings() -> None:
    """A ``postgresql://`` (or ``postgres://``) URL is the PostgreSQL row's: the driver's address
    without credentials, the user, the password and the store's options."""
    for scheme in ("postgresql", "postgres"):
        location = parse_store_location(f"{scheme}://scott:{SECRET}@db:5433/memory?memory_store_id=ACME&pool_max=3")
        settings = location.connection
        assert location.backend == "postgres" and settings is not None
        assert conninfo.conninfo_to_dict(settings.target) == {"host": "db", "port": "5433", "dbname": "memory"}
        assert (settings.user, settings.password) == ("scott", SECRET)
        assert (settings.memory_store_id, settings.pool_max) == ("ACME", 3)
        assert SECRET not in repr(settings) and SECRET not in location.describe()


def test_a_postgresql_url_may_name_a_unix_socket_directory_as_libpq_does() -> None:
    """``postgresql://USER:PASSWORD@/DATABASE?host=/socket/dir`` (how a private server gives its
    address): the directory is the driver's host, the other parameters are the store's options."""
    location = parse_store_location("postgresql://postgres:@/memory?host=/run/pg%20sock&memory_store_id=acme")
    settings = location.connection
    assert location.backend == "postgres" and settings is not None
    assert conninfo.conninfo_to_dict(settings.target) == {"host": "/run/pg sock", "dbname": "memory"}
    assert (settings.user, settings.password, settings.memory_store_id) == ("postgres", "", "acme")


def test_a_postgresql_url_without_a_password_takes_pgpassword() -> None:
    location = parse_store_location("postgresql://scott@db/memory", environ={"PGPASSWORD": SECRET})
    assert location.connection is not None and location.connection.password == SECRET


@pytest.mark.parametrize(
    ("url", "user", "environ"),
    [
        ("postgresql://scott@/memory?host=/var/run/postgresql", "scott", {}),
        ("postgres://scott@:5433/memory?host=/var/run/postgresql&memory_store_id=ACME", "scott", {}),
        ("postgresql:///memory?host=/var/run/postgresql", "pguser", {"PGUSER": "pguser"}),
        ("postgresql://%2Fvar%2Frun%2Fpostgresql/memory", "pguser", {"PGUSER": "pguser"}),
        (f"postgresql://scott:{SECRET}@%2Fvar%2Frun%2Fpostgresql:5433/memory", "scott", {}),
    ],
)
def test_a_postgresql_url_may_name_a_unix_socket_folder_as_libpq_does(
    url: str, user: str, environ: dict[str, str]
) -> None:
    """libpq's spellings of a Unix socket: ``?host=FOLDER`` with no host before the path, or the
    folder percent-encoded as the host (its case kept); a URL with no ``user@`` takes PGUSER."""
    location = parse_store_location(url, environ=environ)
    settings = location.connection
    assert location.backend == "postgres" and settings is not None
    params = conninfo.conninfo_to_dict(settings.target)
    assert params["host"] == "/var/run/postgresql" and params["dbname"] == "memory"
    assert params.get("port") in (None, "5433")
    assert settings.user == user
    assert SECRET not in repr(settings) and SECRET not in location.describe()


def test_a_postgresql_url_without_a_password_leaves_it_to_libpq_and_without_a_user_takes_the_login_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Peer and trust authentication need no password, and libpq reads ~/.pgpass itself: a
    PostgreSQL URL may give none (Oracle's still must)."""
    location = parse_store_location("postgresql://scott@db/memory", environ={})
    assert location.connection is not None and location.connection.password == ""
    monkeypatch.setattr("getpass.getuser", lambda: "login-name")
    anonymous = parse_store_location("postgresql://db/memory", environ={})
    assert anonymous.connection is not None and anonymous.connection.user == "login-name"


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("oracle://scott:x@db:1521/FREEPDB1?host=/var/run/oracle", "unknown parameter 'host'"),
        (f"postgresql://scott:{SECRET}@db/memory?host=/var/run/postgresql", "names its host twice"),
        (f"postgresql://scott:{SECRET}@%2Ftmp/memory?host=/var/run/postgresql", "names its host twice"),
        (f"postgresql://scott:{SECRET}@/memory?host=", "gives 'host' no value"),
        (f"postgresql://scott:{SECRET}@/memory?host=/a&host=/b", "gives 'host' twice"),
        (f"postgresql://scott:{SECRET}@/memory", "names no host: postgresql://USER@HOST:PORT/DATABASE or"),
        (f"postgresql://:{SECRET}@/memory?host=/var/run/postgresql", "names no user"),
    ],
)
def test_host_is_a_query_parameter_of_the_postgres_row_only(location: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_store_location(location, environ={})
    assert message in str(raised.value)
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)


def test_an_oracle_url_opens_its_pool_with_the_urls_settings_and_never_logs_the_password(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    oracledb = pytest.importorskip("oracledb")
    calls: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise oracledb.Error("DPY-6005: cannot connect to database.\nmore detail")

    monkeypatch.setattr(oracledb, "create_pool", refuse)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(StorageError) as raised:
        open_memory(f"{URL}?memory_store_id=ACME&pool_min=2&pool_max=3")
    assert str(raised.value) == "cannot connect to Oracle at db.example:1521/FREEPDB1: DPY-6005: cannot connect to database."
    assert calls == [
        {"user": "scott", "password": SECRET, "dsn": "db.example:1521/FREEPDB1", "min": 2, "max": 3, "increment": 1}
    ]
    assert SECRET not in caplog.text


# --- the table ----------------------------------------------------------------------------------


def test_every_pooled_row_says_how_a_url_names_its_stores_and_how_tests_drop_them() -> None:
    from palimpsest.adapters.backends import _PLANNED_SCHEMES

    schemes = [scheme for backend in BACKENDS.values() for scheme in backend.schemes]
    assert len(schemes) == len(set(schemes)), "a URL scheme belongs to one row"
    assert set(_PLANNED_SCHEMES).isdisjoint(schemes), "a row that landed takes its scheme out of the planned ones"
    for backend in BACKENDS.values():
        if backend.pooled:
            assert backend.schemes and backend.url_target and backend.drop_stores and backend.vector_indexes
        else:
            assert not backend.schemes and backend.drop_stores is None


def test_the_oracle_row_accepts_the_vector_indexes_its_schema_builds() -> None:
    from palimpsest.adapters.oracle.schema import VECTOR_INDEX_KINDS

    assert BACKENDS["oracle"].vector_indexes == VECTOR_INDEX_KINDS
