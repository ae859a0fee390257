"""Application layer: API keys, who calls a server (ARCHITECTURE.md D44).

A key reads ``pal_<key id>_<secret>``: the key id (16 hex digits, public, listed) finds the
stored entry without a scan; the secret is 32 random bytes (URL-safe base64, 43 characters).
Only ``sha256(key id ":" secret)`` is stored: the secret has full entropy (256 bits), so no
salt or slow hash is needed against guessing, and the key id in the digest keeps two entries'
digests apart. The entries live in the store-wide settings (one entry, ``api_keys``), written
under the store's write lock and read from the store at every verification (no cache), so a
revocation holds at once for every process sharing the store.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from palimpsest.domain.errors import AuthenticationError, NotFoundError
from palimpsest.domain.model import check_id, check_optional_id
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork

from .arguments import parse_timestamp
from .principal import AccessScope, Principal

__all__ = ["API_KEYS_SETTING", "ApiKeyInfo", "ApiKeys", "CreatedApiKey"]

API_KEYS_SETTING: Final = "api_keys"
_PREFIX: Final = "pal"
_KEY = re.compile(r"^pal_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_INVALID: Final = "invalid API key."


def _digest(key_id: str, secret: str) -> str:
    return hashlib.sha256(f"{key_id}:{secret}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """One stored key, without its secret: what ``keys list`` shows."""

    key_id: str
    user_id: str
    agent_id: str | None
    scope: AccessScope
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @property
    def principal(self) -> Principal:
        return Principal(self.user_id, self.agent_id, self.scope)


@dataclass(frozen=True, slots=True)
class CreatedApiKey:
    """A new key: ``key`` is its plaintext, shown once and never stored."""

    key: str
    info: ApiKeyInfo


def _time(value: object, what: str) -> datetime:
    parsed = parse_timestamp(value, what)
    assert parsed is not None
    return parsed


def _info(key_id: str, entry: Mapping[str, Any]) -> ApiKeyInfo:
    revoked = entry.get("revoked_at")
    return ApiKeyInfo(
        key_id=key_id,
        user_id=entry["user_id"],
        agent_id=entry.get("agent_id"),
        scope=AccessScope.parse(entry["scope"]),
        created_at=_time(entry["created_at"], "created_at"),
        revoked_at=None if revoked is None else _time(revoked, "revoked_at"),
    )


class ApiKeys:
    """Create, list, revoke and verify API keys, stored hashed in the store's settings.

    Reach it as ``memory.admin.api_keys`` (ARCHITECTURE.md D36, D44)."""

    def __init__(self, store: MemoryStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    @staticmethod
    def _entries(uow: UnitOfWork) -> dict[str, Any]:
        value = uow.settings.get(API_KEYS_SETTING)
        return dict(value) if isinstance(value, Mapping) else {}

    def create(
        self, user_id: str, *, agent_id: str | None = None, scope: AccessScope | str = AccessScope.WRITE
    ) -> CreatedApiKey:
        """A new key for ``user_id`` (and ``agent_id``) with ``scope``; its plaintext is in the
        result only. Bad arguments write nothing."""
        principal = Principal(user_id, agent_id, AccessScope.parse(scope))
        secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        now = self._clock.now()
        with self._store.unit_of_work() as uow:
            entries = self._entries(uow)
            key_id = secrets.token_hex(8)
            while key_id in entries:  # pragma: no cover - 64 random bits
                key_id = secrets.token_hex(8)
            entries[key_id] = {
                "digest": _digest(key_id, secret),
                "user_id": principal.user_id,
                "agent_id": principal.agent_id,
                "scope": principal.scope.value,
                "created_at": now.isoformat(),
                "revoked_at": None,
            }
            uow.settings.set(API_KEYS_SETTING, entries)
            uow.commit()
        return CreatedApiKey(f"{_PREFIX}_{key_id}_{secret}", _info(key_id, entries[key_id]))

    def list(self, *, user_id: str | None = None, include_revoked: bool = True) -> list[ApiKeyInfo]:
        """The stored keys (never their secrets), oldest first; ``user_id`` keeps that user's."""
        check_optional_id(user_id, "user_id")
        with self._store.reading() as uow:
            entries = self._entries(uow)
        infos = [_info(key_id, entry) for key_id, entry in entries.items()]
        infos = [
            i for i in infos if (user_id is None or i.user_id == user_id) and (include_revoked or i.active)
        ]
        return sorted(infos, key=lambda i: (i.created_at, i.key_id))

    def revoke(self, key_id: str) -> bool:
        """Revoke a key at once for every client of the store: ``True``, or ``False`` when it
        was already revoked. An unknown key id is a ``NotFoundError``."""
        check_id(key_id, "key_id")
        with self._store.unit_of_work() as uow:
            entries = self._entries(uow)
            entry = entries.get(key_id)
            if entry is None:
                raise NotFoundError(f"No API key with id {key_id!r}.")
            if entry.get("revoked_at") is not None:
                return False
            entries[key_id] = {**entry, "revoked_at": self._clock.now().isoformat()}
            uow.settings.set(API_KEYS_SETTING, entries)
            uow.commit()
        return True

    def verify(self, key: object) -> Principal:
        """The principal ``key`` stands for; a malformed, unknown or revoked key is an
        ``AuthenticationError`` (one message for all: nothing tells them apart). The digest is
        compared in constant time; the store is read every time (no cache: revocation holds at once)."""
        match = _KEY.match(key) if isinstance(key, str) else None
        if match is None:
            raise AuthenticationError(_INVALID)
        key_id, secret = match.group(1), match.group(2)
        with self._store.reading() as uow:
            entry = self._entries(uow).get(key_id)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("digest"), str):
            hmac.compare_digest(_digest(key_id, secret), _digest(key_id, ""))  # the same work as a known id
            raise AuthenticationError(_INVALID)
        expected: str = entry["digest"]
        if not hmac.compare_digest(expected, _digest(key_id, secret)) or entry.get("revoked_at") is not None:
            raise AuthenticationError(_INVALID)
        return _info(key_id, entry).principal
