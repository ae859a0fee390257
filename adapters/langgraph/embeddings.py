"""Adapters layer (LangGraph): ``LangChainEmbedder``, any LangChain ``Embeddings`` as palimpsest's ``Embedder`` port.

LangGraph stores are configured with LangChain embeddings (``index={"embed": ...}``); palimpsest
embeds through its own port, owned by the client. This adapter lets one model serve both: pass
``open_memory(embedder=LangChainEmbedder(embeddings, dimension=...))``. Vectors are L2-normalised
(the port promises unit vectors) and their length is checked against ``dimension``.

A model that cannot be reached (a refused connection, a timeout, a rate limit or a server error,
as the LangChain integrations' own clients raise them after their retries) is reported as
``ModelUnavailableError``, so the client stores what it was writing and embeds it later
(ARCHITECTURE.md D43) instead of failing the write; any other error is raised as it came.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from palimpsest.application.observability import observed_embedder
from palimpsest.application.ports import Embedder
from palimpsest.domain.errors import ConfigurationError, ModelUnavailableError, VectorDimensionError

__all__ = ["LangChainEmbedder"]

_UNAVAILABLE_NAMES = frozenset({
    "APIConnectionError",  # openai, anthropic, and clients generated like them
    "APITimeoutError",
    "InternalServerError",
    "RateLimitError",
    "ServiceUnavailableError",
    "TransportError",  # httpx: connect, read and write failures and timeouts
    "TimeoutException",
    "ConnectionError",  # requests (not a builtin subclass)
    "Timeout",
})


def _unavailable(exc: BaseException) -> bool:
    """Does ``exc`` say the model could not be reached, rather than that the call was wrong?"""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return True
    return any(cls.__name__ in _UNAVAILABLE_NAMES for cls in type(exc).__mro__)


class LangChainEmbedder(Embedder):
    """Implements the ``Embedder`` port with a LangChain ``Embeddings`` object.

    ``model_id`` is stored with the vectors, so name the model (and its settings) honestly:
    a store refuses an embedder whose ``model_id`` differs from the one that made its vectors.
    """

    def __init__(self, embeddings: Any, *, dimension: int, model_id: str | None = None) -> None:
        if not (hasattr(embeddings, "embed_documents") and hasattr(embeddings, "embed_query")):
            raise ConfigurationError(
                "embeddings must be a LangChain Embeddings (embed_documents, embed_query)."
            )
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise ConfigurationError("dimension must be a positive integer.")
        self._embeddings = embeddings
        self._dimension = dimension
        self._model_id = (
            model_id or f"langchain:{type(embeddings).__module__}.{type(embeddings).__qualname__}:{dimension}"
        )

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_id(self) -> str:
        return self._model_id

    @observed_embedder
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string.")
        items = list(texts)
        if not items:
            return []
        try:
            if is_query:
                vectors = [self._embeddings.embed_query(text) for text in items]
            else:
                vectors = self._embeddings.embed_documents(items)
        except Exception as exc:
            if _unavailable(exc):
                raise ModelUnavailableError(
                    f"the LangChain embeddings could not be reached ({type(exc).__name__}: {exc})."
                ) from exc
            raise
        if len(vectors) != len(items):
            raise VectorDimensionError("the embeddings returned a different number of vectors than texts.")
        return [self._normalised(v) for v in vectors]

    def _normalised(self, vector: Sequence[float]) -> list[float]:
        values = [float(x) for x in vector]
        if len(values) != self._dimension:
            raise VectorDimensionError(f"expected {self._dimension}-dimensional vectors, got {len(values)}.")
        norm = math.sqrt(sum(x * x for x in values))
        if norm == 0.0 or not math.isfinite(norm):
            # A zero vector has no direction; give it a fixed one so cosine stays defined.
            return [1.0] + [0.0] * (self._dimension - 1)
        return [x / norm for x in values]
