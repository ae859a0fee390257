"""Application layer: ``Principal``, who a call is made for (ARCHITECTURE.md D44).

A driving adapter (the HTTP API, the MCP server) learns the principal from a credential, never
from a request's body; :class:`~palimpsest.application.access.ScopedMemory` then forces its user
(and agent, when it has one) onto every request. The record services take a principal as the
owner of a call (as they take a thread handle's thread): a record, thread or link of anyone
else is then not found.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import check_id, check_optional_id

__all__ = ["AccessScope", "Principal"]


class AccessScope(str, enum.Enum):
    """What a principal may do; ordered: ``read`` < ``write`` < ``admin`` (each grants the ones below)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def grants(self, needed: AccessScope) -> bool:
        """Whether a principal with this scope may do what ``needed`` guards."""
        return self.rank >= needed.rank

    @classmethod
    def parse(cls, value: object) -> AccessScope:
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValidationError("scope must be one of: read, write, admin.") from None


_RANK = {AccessScope.READ: 0, AccessScope.WRITE: 1, AccessScope.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a call is made for: a user (required), optionally one agent of theirs, and a scope.

    A principal with an ``agent_id`` reads and writes that agent's records of the user only;
    without one, every record of the user (any agent, or none)."""

    user_id: str
    agent_id: str | None = None
    scope: AccessScope = AccessScope.READ

    def __post_init__(self) -> None:
        check_id(self.user_id, "user_id")
        check_optional_id(self.agent_id, "agent_id")
        object.__setattr__(self, "scope", AccessScope.parse(self.scope))

    def may(self, needed: AccessScope) -> bool:
        """Whether this principal's scope grants ``needed``."""
        return self.scope.grants(needed)

    def owns(self, user_id: str | None, agent_id: str | None) -> bool:
        """Whether a record or thread with this user and agent is this principal's."""
        return user_id == self.user_id and (self.agent_id is None or agent_id == self.agent_id)
