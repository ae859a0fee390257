"""Adapters layer (OpenAI-compatible): the model errors, a small subtree of the library's one error tree.

::

    AgentMemoryError                      (palimpsest.domain.errors)
    └── ModelError (RuntimeError)         a model request failed or its answer was unusable
        ├── ModelOutputError              the answer was not JSON, or broke the expected schema
        ├── ModelUnavailableError         429 / 5xx / timeouts outlasted every retry (or asked a too long wait)
        └── ModelRequestsDisabledError    ``ALLOW_MODEL_REQUESTS`` is False; nothing was sent

Authentication failures, unknown models and similar misconfigurations are not model errors:
they surface as :class:`~palimpsest.domain.errors.ConfigurationError`. The SDK's exception is
always chained as ``__cause__``; no ``openai`` exception escapes these adapters.
"""

from __future__ import annotations

from palimpsest.domain.errors import AgentMemoryError

__all__ = ["ModelError", "ModelOutputError", "ModelRequestsDisabledError", "ModelUnavailableError"]


class ModelError(AgentMemoryError, RuntimeError):
    """A model request failed or returned something unusable."""


class ModelOutputError(ModelError):
    """The model answered, but not with JSON matching the expected schema. ``raw`` keeps the text."""

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class ModelUnavailableError(ModelError):
    """Rate limits, server errors or timeouts lasted longer than the retry budget, or the
    server asked for a longer wait than the client's ``max_retry_wait``. ``retry_after`` is the
    wait in seconds the last response asked for (``None`` when it named none)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelRequestsDisabledError(ModelError):
    """``palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS`` is False, so no request was sent."""
