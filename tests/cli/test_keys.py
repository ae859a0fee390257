"""keys create / list / revoke (ARCHITECTURE.md D44): the key printed once, listed without its
secret, verified and revoked through another client of the same store file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from clients import build_client
from palimpsest.application import AccessScope, Principal
from palimpsest.domain.errors import AuthenticationError

from .conftest import Invoke, Seeded
from .helpers import one_line_error


def test_keys_create_list_revoke_round_trip(invoke: Invoke, seeded: Seeded) -> None:
    made = invoke("--store", seeded.store, "keys", "create", "--user", "u1", "--agent", "a1", "--scope", "read")
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    assert key.startswith("pal_") and len(made.stdout.splitlines()) == 1
    key_id = key.split("_")[1]
    assert key_id in made.stderr and "not shown again" in made.stderr

    client = build_client(path=seeded.path)
    try:
        assert client.admin.api_keys.verify(key) == Principal("u1", "a1", AccessScope.READ)
        listed = invoke("--store", seeded.store, "keys", "list", "--json")
        rows = [json.loads(line) for line in listed.stdout.splitlines()]
        assert [(r["key_id"], r["user_id"], r["agent_id"], r["scope"], r["revoked_at"]) for r in rows] == [
            (key_id, "u1", "a1", "read", None)
        ]
        secret = key.split("_", 2)[2]
        assert secret not in listed.stdout
        assert secret not in invoke("--store", seeded.store, "keys", "list").stdout
        with sqlite3.connect(seeded.path) as db:  # hashed at rest: the secret is nowhere in the file's settings
            assert all(secret not in str(row) for row in db.execute("SELECT * FROM settings"))

        revoked = invoke("--store", seeded.store, "keys", "revoke", key_id)
        assert revoked.exit_code == 0 and f"revoked {key_id}" in revoked.stdout
        with pytest.raises(AuthenticationError):
            client.admin.api_keys.verify(key)  # the open client refuses it at once
        again = invoke("--store", seeded.store, "keys", "revoke", key_id)
        assert "already revoked" in again.stdout
        assert "revoked" in invoke("--store", seeded.store, "keys", "list").stdout
    finally:
        client.close()


def test_keys_errors_are_one_line(invoke: Invoke, seeded: Seeded) -> None:
    unknown = invoke("--store", seeded.store, "keys", "revoke", "0123456789abcdef")
    assert unknown.exit_code == 1
    assert "No API key with id" in one_line_error(unknown.stderr)
    bad_scope = invoke("--store", seeded.store, "keys", "create", "--user", "u1", "--scope", "root")
    assert bad_scope.exit_code != 0
    assert invoke("--store", seeded.store, "keys", "list", "--json").stdout.strip() == ""


def test_the_first_key_creates_a_missing_store_file(invoke: Invoke, tmp_path: Path) -> None:
    """A newcomer serving a store starts with ``keys create`` (README, "HTTP API"): the store
    file does not exist yet, and the key made in it verifies."""
    path = tmp_path / "fresh" / "memory.db"
    made = invoke("--store", str(path), "keys", "create", "--user", "me")
    assert made.exit_code == 0, made.output
    assert path.is_file()
    client = build_client(path=path)
    try:
        assert client.admin.api_keys.verify(made.stdout.strip()) == Principal("me", None, AccessScope.WRITE)
    finally:
        client.close()
