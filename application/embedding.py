"""Application layer: ``EmbeddingHelper``, the one place that turns texts into stored vectors.

Memories are embedded as they are; a message is embedded as its *index text* under the client's
``index_context`` recipe (:func:`~palimpsest.application.indexing.message_index_text`). Without
an embedder every vector is ``None`` (keyword search only).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .indexing import message_index_text
from .ports import Embedder

__all__ = ["EmbeddingHelper", "Vector"]

Vector = tuple[float, ...]


class EmbeddingHelper:
    """Document vectors for records and messages, from an optional ``Embedder``."""

    def __init__(self, embedder: Embedder | None, index_context: tuple[str, ...] = ()) -> None:
        self._embedder = embedder
        self._index_context = index_context

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    @property
    def index_context(self) -> tuple[str, ...]:
        return self._index_context

    def documents(self, texts: Sequence[str]) -> list[Vector | None]:
        """One vector per text (``None`` each without an embedder)."""
        if self._embedder is None or not texts:
            return [None] * len(texts)
        return [tuple(map(float, v)) for v in self._embedder.embed(list(texts), is_query=False)]

    def messages(self, messages: Sequence[tuple[str, str, datetime | None, str | None]]) -> list[Vector | None]:
        """Vectors of messages given as (content, role, timestamp, speaker): their index text
        under the configured ``index_context`` (the content, after its speaker when named, by
        default)."""
        context = self._index_context
        return self.documents([message_index_text(c, r, t, context, s) for c, r, t, s in messages])
