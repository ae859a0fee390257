"""Application layer: the store-wide settings every client of a store must share (the retention
policy, the embedding model the vectors were made with, the message index text), their keys,
and how a client opening the store reads, checks and (when needed) persists them."""

from __future__ import annotations

from typing import Any, Final

from palimpsest.domain.errors import ConfigurationError, EmbeddingMismatchError
from palimpsest.domain.ports import MemoryStore, UnitOfWork

from .config import MemoryRetentionConfig
from .indexing import INDEX_CONTEXT_SETTING
from .ports import Embedder, LearnsDimension

__all__ = [
    "EMBEDDING_MODEL_SETTING",
    "INDEX_CONTEXT_SETTING",
    "RETENTION_SETTING",
    "stored_retention",
    "sync_store_settings",
]

RETENTION_SETTING = "memory_retention_config"
EMBEDDING_MODEL_SETTING = "embedding_model"


def stored_retention(value: object) -> MemoryRetentionConfig:
    """The policy a store's ``memory_retention_config`` setting holds (``None``: no policy), or
    a :class:`ConfigurationError` naming the setting when it does not parse."""
    if value is None:
        return MemoryRetentionConfig()
    try:
        return MemoryRetentionConfig.from_json(value)
    except ConfigurationError as exc:
        raise ConfigurationError(f"setting {RETENTION_SETTING!r}: {exc}") from None


_REMEDY: Final = "open it with allow_embedding_model_change=True and call reembed() to replace them."


def sync_store_settings(
    store: MemoryStore,
    embedder: Embedder | None,
    retention: MemoryRetentionConfig | None,
    *,
    check_model: bool = True,
    index_context: tuple[str, ...] = (),
) -> MemoryRetentionConfig:
    """Persist or read the store-wide settings; refuse an embedder the vectors don't fit
    (unless a model change was allowed, to be followed by :meth:`AgentMemory.reembed`).

    The settings are read without the write lock; only when something must be stored (a
    first model, a changed retention) are they checked again and written in a unit of work,
    so opening a client never waits for another process's writer when nothing changes."""

    def settle(uow: UnitOfWork) -> tuple[MemoryRetentionConfig, dict[str, Any]]:
        writes: dict[str, Any] = {}
        if embedder is not None and check_model:
            stored_model = uow.settings.get(EMBEDDING_MODEL_SETTING)
            if isinstance(stored_model, str) and isinstance(embedder, LearnsDimension):
                embedder.adopt_recorded_model(stored_model)  # no server call for a size the store knows
            if store.dimension is not None and store.dimension != embedder.dimension:
                raise EmbeddingMismatchError(
                    f"The store holds {store.dimension}-dimensional vectors but the embedder makes "
                    f"{embedder.dimension}-dimensional ones",
                    _REMEDY if stored_model is None else f"open it with {stored_model!r}, or {_REMEDY}",
                )
            if stored_model is not None and stored_model != embedder.model_id:
                raise EmbeddingMismatchError(
                    f"The store's vectors were made by {stored_model!r}, not {embedder.model_id!r}", _REMEDY
                )
            stored_context = tuple(uow.settings.get(INDEX_CONTEXT_SETTING) or ())
            if stored_model is not None and stored_context != index_context:
                raise EmbeddingMismatchError(
                    f"The store's message vectors were made with index_context={stored_context!r}, not "
                    f"{index_context!r}",
                    _REMEDY,
                )
            if stored_model is None:
                writes[EMBEDDING_MODEL_SETTING] = embedder.model_id
                if index_context:
                    writes[INDEX_CONTEXT_SETTING] = list(index_context)
        if retention is None:
            try:
                return stored_retention(uow.settings.get(RETENTION_SETTING)), writes
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"The store's {exc} Pass memory_retention_config=... to replace it."
                ) from None
        wanted = retention.to_json()
        if uow.settings.get(RETENTION_SETTING) != wanted:
            writes[RETENTION_SETTING] = wanted
        return retention, writes

    with store.reading() as uow:
        settled, writes = settle(uow)
    if not writes:
        return settled
    with store.unit_of_work() as uow:
        settled, writes = settle(uow)  # again under the write lock: another client may have written
        for key, value in writes.items():
            uow.settings.set(key, value)
        uow.commit()
    return settled
