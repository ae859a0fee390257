"""Application layer: ``EmbeddingHelper``, the one place that turns texts into stored vectors.

Memories are embedded as they are; a message is embedded as its *index text* under the client's
``index_context`` recipe (:func:`~palimpsest.application.indexing.message_index_text`). Without
an embedder every vector is ``None`` (keyword search only).

The helper remembers the vectors of the last messages it embedded, by index text, so a lookup
by a message's own text (the past memories of a one-message extraction pass) reuses the vector
stored with the message instead of embedding the same text again.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from palimpsest.domain.model import speaker_of

from .indexing import message_index_text, turn_before
from .ports import Embedder

__all__ = ["RECENT_MESSAGES", "EmbeddingHelper", "IndexedMessage", "RecentVectors", "Vector"]

Vector = tuple[float, ...]

RECENT_MESSAGES: Final = 256
"""How many message vectors the helper remembers (the newest), for lookups by their own text."""


class RecentVectors:
    """A bounded, thread-safe map of recently embedded texts to their vectors (least recently
    used first out)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, array[float]] = OrderedDict()  # doubles: the same floats back
        self._lock = threading.Lock()

    def get(self, text: str) -> tuple[float, ...] | None:
        with self._lock:
            vector = self._items.get(text)
            if vector is None:
                return None
            self._items.move_to_end(text)
        return tuple(vector)

    def put(self, text: str, vector: tuple[float, ...]) -> None:
        with self._lock:
            self._items[text] = array("d", vector)
            self._items.move_to_end(text)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class IndexedMessage(Protocol):
    """What a message's index text is made from (a stored ``Message`` or one being appended)."""

    @property
    def content(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def timestamp(self) -> datetime | None: ...

    @property
    def metadata(self) -> Mapping[str, Any] | None: ...


class EmbeddingHelper:
    """Document vectors for records and messages, from an optional ``Embedder``."""

    def __init__(self, embedder: Embedder | None, index_context: tuple[str, ...] = ()) -> None:
        self._embedder = embedder
        self._index_context = index_context
        self._recent = RecentVectors(RECENT_MESSAGES)  # index text -> vector

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

    def messages(
        self, messages: Sequence[IndexedMessage], before: Sequence[IndexedMessage | None] | None = None
    ) -> list[Vector | None]:
        """Vectors of ``messages``: their index text under the configured ``index_context``,
        each read after the message just before it in its thread (``before``, aligned; see
        :func:`~palimpsest.application.indexing.turn_before`)."""
        context = self._index_context
        befores = before if before is not None else [None] * len(messages)
        texts = [
            message_index_text(
                m.content, m.role, m.timestamp, context, speaker_of(m.metadata), turn_before(m, previous)
            )
            for m, previous in zip(messages, befores)
        ]
        vectors = self.documents(texts)
        for text, vector in zip(texts[-RECENT_MESSAGES:], vectors[-RECENT_MESSAGES:]):
            if vector is not None:
                self._recent.put(text, vector)
        return vectors

    def message_vector(self, text: str) -> Vector | None:
        """The vector of one of the last messages embedded whose index text is ``text``, or
        ``None`` (not among them, or no embedder)."""
        return self._recent.get(text)
