"""How the Oracle-backed tests find (or do not find) a database: environment parsing and the quick skip."""

from __future__ import annotations

import oracle_database
import pytest


def test_a_dsn_with_credentials_is_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORACLE_DSN", "scott/t1ger@db.example:1521/FREEPDB1")
    monkeypatch.delenv("ORACLE_USER", raising=False)
    target = oracle_database.target_from_environment()
    assert target == oracle_database.OracleTarget("scott", "t1ger", "db.example:1521/FREEPDB1")


def test_a_plain_dsn_takes_credentials_from_the_environment_or_the_compose_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ORACLE_DSN", "127.0.0.1:1521/FREEPDB1")
    monkeypatch.delenv("ORACLE_USER", raising=False)
    monkeypatch.setenv("ORACLE_PASSWORD", "secret")
    target = oracle_database.target_from_environment()
    assert target == oracle_database.OracleTarget("palimpsest", "secret", "127.0.0.1:1521/FREEPDB1")
    monkeypatch.delenv("ORACLE_DSN")
    assert oracle_database.target_from_environment() is None


def test_without_an_engine_the_docker_probe_answers_no_without_waiting_for_a_daemon(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'absent.sock'}")
    assert oracle_database.docker_engine_answers() is False
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # discard port: refused at once
    assert oracle_database.docker_engine_answers() is False
