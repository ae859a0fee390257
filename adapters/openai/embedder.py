"""Adapters layer (OpenAI-compatible): ``OpenAIEmbedder``, the ``Embedder`` port over the embeddings API."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import openai
from palimpsest.application.observability import observed_embedder
from palimpsest.application.ports import Embedder, LearnsDimension
from palimpsest.domain.errors import AgentMemoryError, ArgumentTypeError, ConfigurationError

from ._transport import RetryPolicy, ensure_requests_allowed
from .errors import ModelOutputError
from .usage import TokenUsage

__all__ = ["OpenAIEmbedder"]

_MAX_BATCH = 2048


class OpenAIEmbedder(Embedder, LearnsDimension):
    """Implements the ``Embedder`` port with ``client.embeddings.create``.

    Texts are sent in batches of ``batch_size``; each vector is checked (finite, expected
    length) and L2-normalised. ``dimension`` may be given (and, with ``request_dimension=True``,
    sent as the API's ``dimensions`` parameter for models that can shorten vectors); otherwise
    it is taken from the model id a store records for this model (a client offers it at open,
    :meth:`adopt_recorded_model`), else learned from one probe request the first time it is
    needed; a probe that fails raises a one-line ``ConfigurationError`` naming ``dimension=``
    (opening a client on a new store needs the size: with the server down, pass it). ``model_id`` is
    ``"<model>@<dimension>"`` so stores never mix vectors of different models or sizes.
    ``query_prefix``/``document_prefix`` serve asymmetric models. Retries and errors behave as
    in :class:`~palimpsest.adapters.openai.chat.OpenAIChatModel`; usage is recorded under
    ``"embed"`` in :attr:`usage`.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        dimension: int | None = None,
        request_dimension: bool = False,
        batch_size: int = 256,
        query_prefix: str = "",
        document_prefix: str = "",
        max_retries: int = 3,
        timeout: float | None = 60.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_retry_wait: float = 60.0,
        sleep: Callable[[float], None] | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError("model must be a non-empty model name.")
        if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
            raise ConfigurationError("dimension must be a positive integer.")
        if request_dimension and dimension is None:
            raise ConfigurationError("request_dimension=True needs a dimension.")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= _MAX_BATCH:
            raise ConfigurationError(f"batch_size must be an integer between 1 and {_MAX_BATCH}.")
        self._client = client.with_options(max_retries=0, timeout=timeout) if timeout else client.with_options(
            max_retries=0
        )
        self.model = model
        self._dimension = dimension
        self._request_dimension = request_dimension
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        policy_kwargs: dict[str, Any] = {"max_retries": max_retries, "backoff_base": backoff_base,
                                         "backoff_cap": backoff_cap, "max_wait": max_retry_wait}
        if sleep is not None:
            policy_kwargs["sleep"] = sleep
        self._retry = RetryPolicy(**policy_kwargs)
        self._lock = threading.Lock()
        self.usage = usage if usage is not None else TokenUsage()

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            try:
                probe = self._embed_batch(["dimension probe"])[0]
            except AgentMemoryError as exc:  # down, refused, or a bad answer: say what to pass
                reason = " ".join(str(exc).split())
                raise ConfigurationError(
                    f"OpenAIEmbedder({self.model!r}) needs its vector size and could not ask the model "
                    f"server ({type(exc).__name__}: {reason}); pass dimension=N, the size of the model's "
                    "vectors (1536 for OpenAI's text-embedding-3-small), to open without asking it."
                ) from None
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(probe)
        return self._dimension

    def adopt_recorded_model(self, model_id: str) -> bool:
        """Take the vector size from a store's recorded ``"<model>@<dimension>"`` when it is
        this embedder's model (a size given or learned already stays); ``True`` if the size is
        known afterwards. The store then opens without asking the server."""
        model, _, size = model_id.rpartition("@")
        with self._lock:
            if self._dimension is None and model == self.model and size.isdigit() and int(size) > 0:
                self._dimension = int(size)
            return self._dimension is not None

    @property
    def model_id(self) -> str:
        return f"{self.model}@{self.dimension}"

    @observed_embedder
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if isinstance(texts, str):
            raise ArgumentTypeError("embed() takes a sequence of texts, not one string.")
        items = list(texts)
        if not all(isinstance(t, str) for t in items):
            raise ArgumentTypeError("embed() takes strings only.")
        if not items:
            return []
        prefix = self._query_prefix if is_query else self._document_prefix
        # Empty inputs are rejected by the API; one space embeds as "nothing".
        prepared = [(prefix + t) or " " for t in items]
        vectors: list[list[float]] = []
        for start in range(0, len(prepared), self._batch_size):
            vectors.extend(self._embed_batch(prepared[start : start + self._batch_size]))
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        ensure_requests_allowed()
        kwargs: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self._request_dimension:
            kwargs["dimensions"] = self._dimension
        response = self._retry.run("embed", lambda: self._client.embeddings.create(**kwargs))
        usage = getattr(response, "usage", None)
        self.usage.record(
            "embed",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            total_tokens=int(getattr(usage, "total_tokens", 0) or 0) if usage is not None else 0,
        )
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise ModelOutputError(f"embed: asked for {len(batch)} vectors, received {len(data)}.")
        return [self._normalise(item.embedding) for item in data]

    def _normalise(self, raw: Sequence[float]) -> list[float]:
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ModelOutputError("embed: the server returned a non-float embedding (base64?).")
        vector = [float(x) for x in raw]
        expected = self._dimension
        if expected is not None and len(vector) != expected:
            raise ConfigurationError(
                f"embed: model {self.model!r} returned {len(vector)}-d vectors, but the embedder is set to {expected}."
            )
        if not all(math.isfinite(x) for x in vector):
            raise ModelOutputError("embed: the server returned a non-finite vector.")
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            raise ModelOutputError("embed: the server returned a zero vector.")
        return [x / norm for x in vector]

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, dimension={self._dimension})"
