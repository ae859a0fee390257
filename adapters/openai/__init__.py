"""Adapters layer: the OpenAI-compatible model adapters (chat JSON model, extractor, summariser, link resolver, reranker, embedder).

Every adapter receives its SDK client from outside (``openai.OpenAI(base_url=..., api_key=...)``)
so any OpenAI-compatible server works (OpenAI, vLLM, Ollama, LM Studio...). The
:func:`client_from_env` helper reads ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``OPENAI_MODEL`` only when called; importing this package reads nothing and sends nothing.

Set ``palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS = False`` (as test suites should) and
every adapter raises :class:`ModelRequestsDisabledError` instead of sending a request.
"""

from __future__ import annotations

import os

import openai
from palimpsest.domain.errors import ConfigurationError

from .chat import OpenAIChatModel, parse_json_object
from .embedder import OpenAIEmbedder
from .errors import ModelError, ModelOutputError, ModelRequestsDisabledError, ModelUnavailableError
from .llm import LlmExtractor, LlmLinkResolver, LlmSummariser
from .reranker import LlmReranker
from .usage import TokenCounts, TokenUsage

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "LlmExtractor",
    "LlmLinkResolver",
    "LlmReranker",
    "LlmSummariser",
    "ModelError",
    "ModelOutputError",
    "ModelRequestsDisabledError",
    "ModelUnavailableError",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "TokenCounts",
    "TokenUsage",
    "client_from_env",
    "parse_json_object",
]

ALLOW_MODEL_REQUESTS: bool = True
"""When False, every adapter of this package refuses to send a request (read at call time)."""


def client_from_env(**client_kwargs: object) -> tuple[openai.OpenAI, str | None]:
    """``(client, model)`` built from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL``.

    ``OPENAI_API_KEY`` is required (local servers accept any placeholder); the base URL defaults
    to the SDK's; the model is ``None`` when ``OPENAI_MODEL`` is unset. Extra keyword arguments
    go to ``openai.OpenAI`` (e.g. ``timeout``).
    """
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ConfigurationError("OPENAI_API_KEY is not set; local servers accept any placeholder value.")
    base_url = os.environ.get("OPENAI_BASE_URL") or None
    model = os.environ.get("OPENAI_MODEL") or None
    client = openai.OpenAI(base_url=base_url, api_key=api_key, **client_kwargs)  # type: ignore[arg-type]
    return client, model
