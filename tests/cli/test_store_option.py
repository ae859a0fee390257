"""One ``--store`` (alias ``--dsn``): a path, ``:memory:`` or a URL, parsed by the library's own
``parse_store_location``; the deprecated ``--oracle-*`` options build the same location."""

from __future__ import annotations

import re
from typing import Any

import pytest
from palimpsest.adapters.backends import parse_store_location
from palimpsest.adapters.cli.context import CliError, CliSettings

from .conftest import Invoke, Seeded
from .helpers import one_line_error

SECRET = "s3cr3t-Pw"
URL = f"oracle://scott:{SECRET}@db.example:1521/FREEPDB1"


def _rows(stdout: str) -> dict[str, tuple[str, str]]:
    rows: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        match = re.match(r"^│ (.+?) +│ (OK|WARN|FAIL) +│ (.*?) *│$", line)
        if match:
            rows[match.group(1).strip()] = (match.group(2), match.group(3))
    return rows


def test_store_and_its_dsn_alias_take_a_path(invoke: Invoke, seeded: Seeded) -> None:
    for option in ("--store", "--dsn"):
        result = invoke(option, seeded.store, "threads")
        assert result.exit_code == 0, result.output
        assert "2 thread(s)" in result.stdout


def test_store_takes_memory(invoke: Invoke) -> None:
    result = invoke("--store", ":memory:", "--embedder", "none", "doctor")
    rows = _rows(result.stdout)
    assert rows["store"] == ("OK", "a store in this process only: 0 thread(s), 0 memory record(s), 0 link(s)")


def test_an_oracle_url_that_does_not_connect_is_a_one_line_storage_error_without_the_password(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    oracledb = pytest.importorskip("oracledb")
    calls: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise oracledb.Error("DPY-6005: cannot connect to database.\nmore detail on a second line")

    monkeypatch.setattr(oracledb, "create_pool", refuse)
    monkeypatch.setattr(oracledb, "connect", refuse)
    for command in (["threads"], ["oracle", "check"]):
        result = invoke("--store", f"{URL}?memory_store_id=ACME", *command)
        assert result.exit_code == 1
        assert one_line_error(result.stderr) == (
            "error: cannot connect to Oracle at db.example:1521/FREEPDB1: DPY-6005: cannot connect to database."
        )
        assert SECRET not in result.output
    assert [(call["user"], call["password"], call["dsn"]) for call in calls] == [
        ("scott", SECRET, "db.example:1521/FREEPDB1")
    ] * 2
    doctor = invoke("--store", URL, "doctor")
    assert doctor.exit_code == 1 and _rows(doctor.stdout)["store"][0] == "FAIL"
    assert "cannot connect to Oracle" in doctor.stdout and SECRET not in doctor.output


def test_a_url_without_its_password_takes_it_from_oracle_password(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    oracledb = pytest.importorskip("oracledb")
    calls: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise oracledb.Error("DPY-6005: cannot connect to database.")

    monkeypatch.setattr(oracledb, "create_pool", refuse)
    missing = invoke("--store", "oracle://scott@db:1521/FREEPDB1", "threads")
    assert missing.exit_code == 1 and "ORACLE_PASSWORD" in one_line_error(missing.stderr)
    assert calls == []
    monkeypatch.setenv("ORACLE_PASSWORD", SECRET)
    result = invoke("--store", "oracle://scott@db:1521/FREEPDB1", "threads")
    assert "cannot connect to Oracle at db:1521/FREEPDB1" in one_line_error(result.stderr)
    assert calls[0]["password"] == SECRET and SECRET not in result.output


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (f"postgresql://scott:{SECRET}@db:5432/memory?vector_index=ivf", "vector_index must be one of 'hnsw'"),
        (f"{URL}?colour=blue", "unknown parameter 'colour'"),
        (f"mysql://scott:{SECRET}@db/memory", "no backend opens mysql:// URLs"),
    ],
)
def test_a_location_that_does_not_parse_is_a_one_line_configuration_error(
    invoke: Invoke, location: str, message: str
) -> None:
    result = invoke("--store", location, "threads")
    assert result.exit_code == 1
    assert message in one_line_error(result.stderr)
    assert SECRET not in result.output
    doctor = invoke("--store", location, "doctor")
    status, detail = _rows(doctor.stdout)["store"]
    assert status == "FAIL" and message in detail and SECRET not in doctor.output


def test_the_deprecated_oracle_options_build_the_same_location_as_the_url() -> None:
    deprecated = CliSettings(
        oracle_dsn="db.example:1521/FREEPDB1", oracle_user="scott", oracle_password=SECRET, memory_store_id="ACME"
    )
    url = CliSettings(store=f"{URL}?memory_store_id=ACME")
    assert deprecated.location() == url.location() == parse_store_location(f"{URL}?memory_store_id=ACME")
    assert CliSettings(store=URL, memory_store_id="ACME").location() == url.location()
    with pytest.raises(CliError, match="differ"):
        CliSettings(store=f"{URL}?memory_store_id=ACME", memory_store_id="OTHER").location()
    assert SECRET not in repr(deprecated) and SECRET not in deprecated.describe_store()
    assert SECRET not in CliSettings(store=f"{URL}?colour=blue").describe_store()


def test_the_oracle_commands_refuse_a_store_that_is_not_oracle(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "oracle", "check")
    assert result.exit_code == 1
    assert "the oracle commands need an Oracle store" in one_line_error(result.stderr)


def test_the_help_names_the_one_store_option_and_the_deprecated_ones(invoke: Invoke) -> None:
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", invoke("--help").stdout).split())
    assert "--store" in text and "--dsn" in text
    assert "oracle://USER@HOST:PORT/SERVICE" in text
    assert "postgresql://USER@HOST:PORT/DATABASE" in text and "PGPASSWORD" in text
    assert "postgresql://USER@/DATABASE?host=/SOCKET/FOLDER" in text
    assert "Deprecated options" in text and "Deprecated: use --store oracle://" in text
