"""Adapters layer (OpenAI-compatible): the model errors these adapters raise, re-exported.

The classes are defined in :mod:`palimpsest.domain.errors`, in the library's one error tree::

    AgentMemoryError
    └── ModelError (RuntimeError)         a model request failed or its answer was unusable
        ├── ModelOutputError              the answer was not JSON, or broke the expected schema
        ├── ModelUnavailableError         429 / 5xx / timeouts outlasted every retry (or asked a too long wait)
        └── ModelRequestsDisabledError    ``ALLOW_MODEL_REQUESTS`` is False; nothing was sent

These adapters translate the SDK's exceptions into them (authentication failures, unknown
models and similar misconfigurations surface as
:class:`~palimpsest.domain.errors.ConfigurationError`). The SDK's exception is always chained
as ``__cause__``; no ``openai`` exception escapes these adapters.
"""

from __future__ import annotations

from palimpsest.domain.errors import (
    ModelError,
    ModelOutputError,
    ModelRequestsDisabledError,
    ModelUnavailableError,
)

__all__ = ["ModelError", "ModelOutputError", "ModelRequestsDisabledError", "ModelUnavailableError"]
