"""Adapters layer (Oracle): validated, prefixed and quoted names of a store's database objects.

Only identifiers produced here are ever placed into SQL text; values always travel as binds.
A ``memory_store_id`` (at most 16 characters, ``[A-Za-z][A-Za-z0-9_]*``) is upper-cased and
prefixed onto every object name as ``<ID>_<BASE>``; the default store (no id) has no prefix.
The registry table is shared by every store of a schema and is never prefixed.
"""

from __future__ import annotations

import re
from typing import Final

from palimpsest.domain.errors import ConfigurationError

__all__ = [
    "BASE_NAMES",
    "DEFAULT_STORE_NAME",
    "MAX_STORE_ID_LENGTH",
    "REGISTRY_TABLE",
    "StoreNames",
    "quote",
]

MAX_STORE_ID_LENGTH: Final = 16
REGISTRY_TABLE: Final = "PALIMPSEST_STORES"
DEFAULT_STORE_NAME: Final = "__DEFAULT__"
_STORE_ID: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_IDENTIFIER: Final = re.compile(r"[A-Z][A-Z0-9_$#]*")
MAX_IDENTIFIER_BYTES: Final = 128

# Base names of every object a store owns (tables, indexes, constraints, graph, triggers).
BASE_NAMES: Final = frozenset({
    # tables
    "THREAD", "MESSAGE", "MEMORY", "MEMORY_LINK", "THREAD_SUMMARY", "RECORD_CHUNKS",
    "EXTRACTION_JOB", "STORE_SETTING", "IMAGE", "CHECKPOINT", "CHECKPOINT_BLOB", "CHECKPOINT_WRITE",
    # property graph
    "MEMORY_GRAPH",
    # indexes
    "THREAD_CREATED_I", "THREAD_USER_I", "MESSAGE_THREAD_ORDER_I", "MESSAGE_EXPIRES_I",
    "MEMORY_CREATED_I", "MEMORY_USER_I", "MEMORY_THREAD_I", "MEMORY_EXPIRES_I",
    "MEMORY_LINK_SOURCE_I", "MEMORY_LINK_TARGET_I", "THREAD_SUMMARY_THREAD_I",
    "EXTRACTION_JOB_THREAD_I", "EXTRACTION_JOB_FAILED_I", "RECORD_CHUNKS_SCOPE_I",
    "RECORD_CHUNKS_THREAD_I", "RECORD_CHUNKS_EMBEDDING_VEC_I", "RECORD_CHUNKS_CHUNK_TEXT_TXT_I",
    "IMAGE_MESSAGE_I", "CHECKPOINT_RUN_I",
    # constraints
    "THREAD_PK", "MESSAGE_PK", "MESSAGE_THREAD_FK", "MESSAGE_THREAD_ORDER_UQ",
    "MEMORY_PK", "MEMORY_THREAD_FK", "MEMORY_TYPE_CK", "MEMORY_STATUS_CK",
    "MEMORY_LINK_PK", "MEMORY_LINK_UQ", "MEMORY_LINK_SOURCE_FK", "MEMORY_LINK_TARGET_FK",
    "MEMORY_LINK_NOT_SELF_CK", "THREAD_SUMMARY_PK", "THREAD_SUMMARY_THREAD_FK",
    "THREAD_SUMMARY_REVISION_UQ", "THREAD_SUMMARY_STATUS_CK", "EXTRACTION_JOB_PK",
    "EXTRACTION_JOB_THREAD_FK", "STORE_SETTING_PK", "RECORD_CHUNKS_PK", "RECORD_CHUNKS_SOURCE_UQ",
    "RECORD_CHUNKS_STATUS_CK", "IMAGE_PK", "IMAGE_MEMORY_FK", "IMAGE_MIME_TYPE_CK",
    "CHECKPOINT_PK", "CHECKPOINT_BLOB_PK", "CHECKPOINT_WRITE_PK",
    # Oracle Text preferences
    "RECORD_CHUNKS_LEXER",
})


def quote(identifier: str) -> str:
    """``identifier`` (already upper case and validated) in double quotes."""
    if not _IDENTIFIER.fullmatch(identifier) or len(identifier.encode()) > MAX_IDENTIFIER_BYTES:
        raise ConfigurationError(f"{identifier!r} is not a valid Oracle identifier for this adapter.")
    return f'"{identifier}"'


class StoreNames:
    """The object names of one store.

    ``names.table("MEMORY")`` is the quoted, prefixed name for SQL text; ``names.raw("MEMORY")``
    the unquoted one, for binds against the data dictionary (``USER_TABLES.TABLE_NAME = :name``).
    """

    __slots__ = ("prefix", "store_id")

    def __init__(self, memory_store_id: str | None = None) -> None:
        if memory_store_id is None:
            self.store_id: str | None = None
            self.prefix = ""
            return
        if not isinstance(memory_store_id, str):
            raise ConfigurationError("memory_store_id must be a string or None.")
        if len(memory_store_id) > MAX_STORE_ID_LENGTH or not _STORE_ID.fullmatch(memory_store_id):
            raise ConfigurationError(
                f"memory_store_id must be 1 to {MAX_STORE_ID_LENGTH} characters, a letter followed by "
                "letters, digits or underscores."
            )
        self.store_id = memory_store_id.upper()
        self.prefix = f"{self.store_id}_"

    @property
    def registry_name(self) -> str:
        """This store's key in the registry table."""
        return self.store_id if self.store_id is not None else DEFAULT_STORE_NAME

    def raw(self, base: str) -> str:
        if base not in BASE_NAMES:
            raise KeyError(f"unknown object base name {base!r}")
        return f"{self.prefix}{base}"

    def table(self, base: str) -> str:
        """The quoted, prefixed name of any object of the store (table, index, graph...)."""
        return quote(self.raw(base))

    __call__ = table

    @property
    def registry(self) -> str:
        return quote(REGISTRY_TABLE)

    def placeholders(self) -> dict[str, str]:
        """``{BASE: quoted name}`` for every object, to fill ``{BASE}`` placeholders of DDL files."""
        return {base: self.table(base) for base in BASE_NAMES} | {"REGISTRY": self.registry}

    def __repr__(self) -> str:
        return f"StoreNames({self.store_id!r})"
