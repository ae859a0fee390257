"""Global options and error handling: one line and exit code 1, tracebacks only with --debug,
store/Oracle option conflicts, the embedder choice, and the oracle commands' argument handling."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from palimpsest.adapters.minilm import find_model_folder

from .conftest import Invoke, Seeded
from .helpers import one_line_error, store_dimension


def _minilm_installed() -> bool:
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401

        find_model_folder(None)
    except Exception:  # noqa: BLE001 - any reason means "not here"
        return False
    return True


def test_no_store_is_a_one_line_error(invoke: Invoke) -> None:
    result = invoke("threads")
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == (
        "error: no store given: pass --store PATH or URL (or set PALIMPSEST_STORE), e.g. --store memory.db or "
        "--store postgresql://USER@HOST:PORT/DATABASE."
    )


def test_the_store_can_come_from_the_environment(
    invoke: Invoke, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALIMPSEST_STORE", seeded.store)
    result = invoke("threads")
    assert result.exit_code == 0 and "2 thread(s)" in result.stdout


def test_a_folder_is_not_a_store(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("--store", str(tmp_path), "threads")
    assert result.exit_code == 1
    assert "is a folder, not a store file" in one_line_error(result.stderr)


def test_debug_prints_the_traceback(invoke: Invoke, seeded: Seeded) -> None:
    quiet = invoke("--store", seeded.store, "messages", "nope")
    loud = invoke("--debug", "--store", seeded.store, "messages", "nope")
    assert quiet.exit_code == loud.exit_code == 1
    assert "Traceback" not in quiet.output
    assert loud.stderr.startswith("Traceback (most recent call last):")
    assert "ThreadNotFoundError: No thread found with id 'nope'." in loud.stderr
    assert "get_thread" in loud.stderr


def test_store_and_oracle_options_conflict_unless_one_comes_from_the_environment(
    invoke: Invoke, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = invoke("--store", seeded.store, "--oracle-dsn", "db:1521/FREEPDB1", "threads")
    assert both.exit_code == 1
    assert "either --store" in one_line_error(both.stderr)

    monkeypatch.setenv("ORACLE_DSN", "db:1521/FREEPDB1")
    store_wins = invoke("--store", seeded.store, "threads")  # the command line beats the environment
    assert store_wins.exit_code == 0, store_wins.output

    monkeypatch.delenv("ORACLE_DSN")
    monkeypatch.setenv("PALIMPSEST_STORE", seeded.store)
    oracle_wins = invoke("--oracle-dsn", "db:1521/FREEPDB1", "threads")
    assert oracle_wins.exit_code == 1
    assert (
        one_line_error(oracle_wins.stderr)
        == "error: Oracle needs a user: pass --oracle-user (or set ORACLE_USER)."
    )

    monkeypatch.delenv("PALIMPSEST_STORE")
    alone = invoke("--store", seeded.store, "--memory-store-id", "ACME", "threads")
    assert "--memory-store-id applies to stores in a database (a URL), not to store file" in one_line_error(
        alone.stderr
    )


@pytest.mark.parametrize("action", ["install", "check", "upgrade"])
def test_oracle_commands_without_a_dsn_are_a_one_line_error(invoke: Invoke, action: str) -> None:
    result = invoke("oracle", action)
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == (
        "error: the oracle commands need an Oracle store: pass --store oracle://USER@HOST:PORT/SERVICE (the "
        "password in the URL or in ORACLE_PASSWORD), or the deprecated --oracle-dsn DSN with --oracle-user and "
        "--oracle-password."
    )


def test_oracle_commands_check_their_credentials_before_connecting(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = ("--oracle-dsn", "db:1521/FREEPDB1")
    no_user = invoke(*dsn, "oracle", "check")
    assert (
        one_line_error(no_user.stderr)
        == "error: Oracle needs a user: pass --oracle-user (or set ORACLE_USER)."
    )
    no_password = invoke(*dsn, "--oracle-user", "scott", "oracle", "check")
    assert "Oracle needs a password" in one_line_error(no_password.stderr)
    with_store = invoke(*dsn, "--store", "x.db", "oracle", "check")
    assert with_store.exit_code == 1
    assert "--store" in one_line_error(with_store.stderr)


def test_an_unreachable_oracle_database_is_a_one_line_error(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    oracledb = pytest.importorskip("oracledb")
    seen: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        seen.append(kwargs)
        raise oracledb.Error("DPY-6005: cannot connect to database.\nmore detail on a second line")

    monkeypatch.setattr(oracledb, "connect", refuse)
    monkeypatch.setattr(oracledb, "create_pool", refuse)
    monkeypatch.setenv("ORACLE_PASSWORD", "tiger")
    options = ("--oracle-dsn", "db:1521/FREEPDB1", "--oracle-user", "scott")
    for command in (["oracle", "check"], ["oracle", "install", "--dimension", "384"], ["threads"]):
        result = invoke(*options, *command)
        assert result.exit_code == 1
        assert one_line_error(result.stderr) == (
            "error: cannot connect to Oracle at db:1521/FREEPDB1: DPY-6005: cannot connect to database."
        )
        assert "tiger" not in result.output
    assert all(call["user"] == "scott" and call["password"] == "tiger" for call in seen)
    assert {call["dsn"] for call in seen} == {"db:1521/FREEPDB1"}


def test_oracle_install_validates_its_options(invoke: Invoke) -> None:
    assert invoke("oracle", "install", "--vector-index", "btree").exit_code == 2
    assert invoke("oracle", "install", "--dimension", "0").exit_code == 2


def test_an_unavailable_embedder_is_a_one_line_error(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "--embedder", "openai", "search", "pizza", "--user", "u1")
    assert result.exit_code == 1
    assert "OPENAI_API_KEY is not set" in one_line_error(result.stderr)


def test_an_embedder_that_does_not_fit_the_store_is_refused(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "--embedder", "minilm", "search", "pizza", "--user", "u1")
    assert result.exit_code == 1
    message = one_line_error(result.stderr)
    assert "64-dimensional" in message or "MiniLM embedder is not available" in message


def test_without_an_embedder_search_is_keyword_only(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke(
        "--store", seeded.store, "--embedder", "none", "search", "sourdough", "--user", "u1", "--xml"
    )
    assert result.exit_code == 0, result.output
    assert "<record_id>m-sour</record_id>" in result.stdout


def test_reembed_with_the_stores_own_model(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "reembed")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "re-embedded 9 record(s) and message(s) with hashing-v1-64"


def test_reembed_needs_an_embedder(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "--embedder", "none", "reembed")
    assert result.exit_code == 1
    assert "reembed needs an embedder" in one_line_error(result.stderr)


@pytest.mark.skipif(not _minilm_installed(), reason="the MiniLM weights are not installed")
def test_reembed_switches_models_only_when_allowed(invoke: Invoke, seeded: Seeded) -> None:
    refused = invoke("--store", seeded.store, "--embedder", "minilm", "reembed")
    assert refused.exit_code == 1
    assert "64-dimensional" in one_line_error(refused.stderr)
    switched = invoke("--store", seeded.store, "--embedder", "minilm", "reembed", "--allow-model-change")
    assert switched.exit_code == 0, switched.output
    assert switched.stdout.strip().endswith("with sentence-transformers/all-MiniLM-L6-v2@numpy")
    assert store_dimension(seeded.path) == 384
    # --embedder auto now follows the new model.
    found = invoke("--store", seeded.store, "search", "sourdough pizza", "--user", "u1", "--xml", "-k", "1")
    assert found.exit_code == 0, found.output
    assert "<record_id>" in found.stdout


def test_without_the_oracle_driver_oracle_options_are_a_one_line_error(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "oracledb", None)  # importing it now raises ImportError
    options = ("--oracle-dsn", "db:1521/FREEPDB1", "--oracle-user", "scott", "--oracle-password", "tiger")
    for command in (["threads"], ["oracle", "check"], ["oracle", "upgrade"]):
        result = invoke(*options, *command)
        assert result.exit_code == 1, command
        assert "python-oracledb is not installed" in one_line_error(result.stderr)
    doctor = invoke(*options, "doctor")
    assert doctor.exit_code == 1
    assert "python-oracledb is not installed" in doctor.stdout
