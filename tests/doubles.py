"""Test doubles that several test modules share, so each is defined once.

Where the doubles live:

* ``palimpsest.application.testing`` — the shipped scripted doubles of the model ports
  (``ScriptedExtractor``, ``ScriptedSummariser``, ``ScriptedLinkResolver``);
* ``palimpsest.adapters.HashingEmbedder`` — the shipped model-free embedder;
* ``palimpsest.adapters.inmemory`` — ``InMemoryStore`` and ``ManualClock``;
* this module — small scripts for those doubles that more than one test module uses, and
  ``CountingEmbedder``, which records every ``embed`` call of the embedder it wraps;
* next to their tests, the fakes of one technology: ``tests/oracle_sql/fakes.py`` (a DB-API
  connection), ``tests/openai/fake_openai_server.py`` (an HTTP server),
  ``tests/langgraph_integration/lg_doubles.py`` (a chat model and LangChain embeddings).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from palimpsest.application import Embedder, ExtractedMemory, ExtractionRequest
from palimpsest.domain import RecordType

__all__ = ["CountingEmbedder", "EmbedCall", "fact_per_message"]


def fact_per_message(request: ExtractionRequest) -> list[ExtractedMemory]:
    """An extraction script for ``ScriptedExtractor``: one FACT "Fact: <content>" per target message."""
    return [ExtractedMemory(RecordType.FACT, f"Fact: {m.content}") for m in request.target_messages]


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """One ``embed`` call a :class:`CountingEmbedder` received."""

    texts: tuple[str, ...]
    is_query: bool


class CountingEmbedder(Embedder):
    """Wraps an embedder and records every ``embed`` call in :attr:`calls` (in order)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: list[EmbedCall] = []

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Sequence[Sequence[float]]:
        with self._lock:
            self.calls.append(EmbedCall(tuple(texts), is_query))
        return self._inner.embed(texts, is_query=is_query)

    def texts(self, *, is_query: bool) -> list[str]:
        """Every text embedded as a query (or as a document), in order."""
        with self._lock:
            return [t for call in self.calls if call.is_query is is_query for t in call.texts]
