"""Application layer: ``EmbeddingHelper``, the one place that turns texts into stored vectors,
and ``EmbedderHealth``, what a client knows of its embedder's availability (ARCHITECTURE.md D43).

Memories are embedded as they are; a message is embedded as its *index text* under the client's
``index_context`` recipe (:func:`~palimpsest.application.indexing.message_index_text`). Without
an embedder every vector is ``None`` (keyword search only).

The helper remembers the vectors of the last messages it embedded, by index text, so a lookup
by a message's own text (the past memories of a one-message extraction pass) reuses the vector
stored with the message instead of embedding the same text again.

A user's write never fails because the embedder is unavailable (``ModelUnavailableError``: the
server refused, timed out or kept answering 5xx past the adapter's retries): the ``*_when_up``
methods give ``None`` vectors then, the row is stored without one, and the vector backfill
(:mod:`.vector_backfill`) embeds it when the embedder answers again. A bad input or a model
that answers wrongly still raises.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from palimpsest.domain.errors import ModelUnavailableError
from palimpsest.domain.model import speaker_of

from .indexing import message_index_text, turn_before
from .ports import Embedder

__all__ = ["RECENT_MESSAGES", "EmbedderHealth", "EmbeddingHelper", "IndexedMessage", "RecentVectors", "Vector"]

log = logging.getLogger("palimpsest")

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


class EmbedderHealth:
    """Whether the client's embedder is answering, and whether the store may hold rows that
    wait for their vectors (thread-safe; one per client, shared by its writers and searches).

    An outage is told once: one WARNING line when a call first finds the embedder unavailable,
    one INFO line when it answers again; the calls in between say nothing. ``waiting`` starts
    true (a store opened after a crash or an outage may hold rows without vectors) and turns
    false when a backfill pass finds none left and nothing was stored without a vector since it
    began (``generation``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False
        self._waiting = True
        self._generation = 0

    @property
    def down(self) -> bool:
        """Whether the last call to the embedder found it unavailable."""
        return self._down

    @property
    def waiting(self) -> bool:
        """Whether rows may wait for their vectors (a backfill pass is worth running)."""
        return self._waiting

    @property
    def generation(self) -> int:
        """A counter of the rows stored without a vector (a pass reads it when it starts)."""
        return self._generation

    def unavailable(self, exc: ModelUnavailableError) -> None:
        """A call found the embedder unavailable: the WARNING line if the outage is new."""
        with self._lock:
            new = not self._down
            self._down = True
        if new:
            log.warning(
                "the embedder is unavailable (%s); messages and memories are stored without vectors and "
                "embedded when it answers again, and searches use keyword search meanwhile",
                str(exc).rstrip(". "),
            )

    def answered(self) -> None:
        """A call to the embedder succeeded: the INFO line if it ends an outage."""
        if not self._down:
            return
        with self._lock:
            ended = self._down
            self._down = False
        if ended:
            log.info("the embedder answers again; the rows stored without vectors are being embedded")

    def stored_without_vectors(self) -> None:
        """Rows were committed (or are about to be) without their vectors."""
        with self._lock:
            self._waiting = True
            self._generation += 1

    def caught_up(self, generation: int) -> None:
        """A pass that began at ``generation`` found no row left without a vector."""
        with self._lock:
            if self._generation == generation:
                self._waiting = False


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

    def __init__(
        self, embedder: Embedder | None, index_context: tuple[str, ...] = (), health: EmbedderHealth | None = None
    ) -> None:
        self._embedder = embedder
        self._index_context = index_context
        self._recent = RecentVectors(RECENT_MESSAGES)  # index text -> vector
        self._health = health if health is not None else EmbedderHealth()

    @property
    def health(self) -> EmbedderHealth:
        return self._health

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

    def documents_when_up(self, texts: Sequence[str]) -> list[Vector | None]:
        """:meth:`documents` for a user's write: ``None`` each when the embedder is unavailable
        (the rows are then stored without vectors and embedded later)."""
        return self._when_up(lambda: self.documents(texts), len(texts))

    def messages_when_up(
        self, messages: Sequence[IndexedMessage], before: Sequence[IndexedMessage | None] | None = None
    ) -> list[Vector | None]:
        """:meth:`messages` for a user's write: ``None`` each when the embedder is unavailable."""
        return self._when_up(lambda: self.messages(messages, before), len(messages))

    def _when_up(self, embed: Callable[[], list[Vector | None]], count: int) -> list[Vector | None]:
        if self._embedder is None or count == 0:
            return [None] * count
        try:
            vectors = embed()
        except ModelUnavailableError as exc:
            self._health.unavailable(exc)
            return [None] * count
        self._health.answered()
        return vectors

    def wrote(self, vectors: Sequence[Vector | None]) -> bool:
        """Called after a commit that stored ``vectors``: whether rows went without theirs while
        this client has an embedder (then they are marked waiting for the backfill)."""
        missing = self._embedder is not None and any(v is None for v in vectors)
        if missing:
            self._health.stored_without_vectors()
        return missing

    def message_vector(self, text: str) -> Vector | None:
        """The vector of one of the last messages embedded whose index text is ``text``, or
        ``None`` (not among them, or no embedder)."""
        return self._recent.get(text)
