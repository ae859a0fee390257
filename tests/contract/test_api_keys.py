"""API keys (ARCHITECTURE.md D44) on every store: created, listed without their secrets,
verified, revoked at once for a second instance on the same store, hashed at rest."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AccessScope, ApiKeys, Principal
from palimpsest.application.api_keys import API_KEYS_SETTING
from palimpsest.domain.errors import AuthenticationError, NotFoundError, ValidationError
from palimpsest.domain.ports import MemoryStore

from .conftest import StoreFactory

START = datetime(2031, 5, 1, tzinfo=UTC)


def _keys(store: MemoryStore) -> ApiKeys:
    return ApiKeys(store, ManualClock(START))


def _stored(store: MemoryStore) -> str:
    with store.reading() as uow:
        return json.dumps(uow.settings.get(API_KEYS_SETTING))


def test_a_created_key_verifies_to_its_principal_and_is_stored_hashed(store: MemoryStore) -> None:
    keys = _keys(store)
    made = keys.create("alice", agent_id="bot", scope="read")
    assert made.key.startswith(f"pal_{made.info.key_id}_")
    assert keys.verify(made.key) == Principal("alice", "bot", AccessScope.READ)
    secret = made.key.split("_", 2)[2]
    assert secret not in _stored(store) and made.key not in _stored(store)
    listed = keys.list()
    assert [(i.key_id, i.user_id, i.agent_id, i.scope, i.created_at, i.active) for i in listed] == [
        (made.info.key_id, "alice", "bot", AccessScope.READ, START, True)
    ]
    assert secret not in repr(listed)


def test_keys_are_listed_oldest_first_and_by_user(store: MemoryStore) -> None:
    clock = ManualClock(START)
    keys = ApiKeys(store, clock)
    first = keys.create("alice")
    clock.advance(timedelta(seconds=1))
    second = keys.create("bob", scope=AccessScope.ADMIN)
    assert [i.key_id for i in keys.list()] == [first.info.key_id, second.info.key_id]
    assert [i.key_id for i in keys.list(user_id="bob")] == [second.info.key_id]
    assert keys.verify(second.key).scope is AccessScope.ADMIN
    assert keys.verify(first.key).scope is AccessScope.WRITE  # the default


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "pal_",
        "not a key",
        "pal_0123456789abcdef_short",
        "pal_0123456789abcdef_" + "A" * 43,  # well formed, unknown id
        None,
        12,
    ],
)
def test_a_malformed_or_unknown_key_is_an_authentication_error(store: MemoryStore, bad: object) -> None:
    keys = _keys(store)
    keys.create("alice")
    with pytest.raises(AuthenticationError, match="invalid API key"):
        keys.verify(bad)


def test_a_wrong_secret_for_a_known_id_is_refused(store: MemoryStore) -> None:
    keys = _keys(store)
    made = keys.create("alice")
    prefix, key_id, secret = made.key.split("_", 2)
    forged = f"{prefix}_{key_id}_{('B' if secret[0] != 'B' else 'C')}{secret[1:]}"
    with pytest.raises(AuthenticationError):
        keys.verify(forged)


def test_revoking_holds_at_once_for_another_instance_on_the_same_store(stores: StoreFactory) -> None:
    first = stores.new()
    second = stores.open_again(first)
    made = _keys(first).create("alice")
    other = _keys(second)
    assert other.verify(made.key).user_id == "alice"  # the second instance sees the new key
    assert _keys(first).revoke(made.info.key_id) is True
    with pytest.raises(AuthenticationError):
        other.verify(made.key)  # no cache: refused at once
    assert other.revoke(made.info.key_id) is False  # already revoked
    (info,) = other.list()
    assert not info.active and info.revoked_at == START
    assert other.list(include_revoked=False) == []


def test_bad_arguments_write_nothing(store: MemoryStore) -> None:
    keys = _keys(store)
    with pytest.raises(ValidationError):
        keys.create("alice", scope="root")
    with pytest.raises(ValidationError):
        keys.create("")
    with pytest.raises(NotFoundError):
        keys.revoke("0123456789abcdef")
    assert keys.list() == []
    with store.reading() as uow:
        assert uow.settings.get(API_KEYS_SETTING) is None
