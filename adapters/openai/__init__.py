"""Adapters layer: the OpenAI-compatible model adapters (chat JSON model, extractor, summariser, link resolver, reranker, embedder).

Every adapter receives its SDK client from outside (``openai.OpenAI(base_url=..., api_key=...)``)
so any OpenAI-compatible server works (OpenAI, vLLM, Ollama, LM Studio...). The
:func:`client_from_env` and :func:`model_from_env` helpers read ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``OPENAI_MODEL`` only when called; importing this package reads nothing
and sends nothing.

Set ``palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS = False`` (as test suites should) and
every adapter raises :class:`ModelRequestsDisabledError` instead of sending a request.
"""

from __future__ import annotations

import os

import openai
from palimpsest.domain.errors import ConfigurationError

from .captioner import OpenAIImageCaptioner
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
    "OpenAIImageCaptioner",
    "TokenCounts",
    "TokenUsage",
    "client_from_env",
    "model_from_env",
    "parse_json_object",
]

ALLOW_MODEL_REQUESTS: bool = True
"""When False, every adapter of this package refuses to send a request (read at call time)."""


def client_from_env(**client_kwargs: object) -> openai.OpenAI:
    """An ``openai.OpenAI`` client built from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.

    ``OPENAI_API_KEY`` is required (local servers accept any placeholder); the base URL defaults
    to the SDK's. Extra keyword arguments go to ``openai.OpenAI`` (e.g. ``timeout``). The model
    name is :func:`model_from_env`'s.
    """
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ConfigurationError("OPENAI_API_KEY is not set; local servers accept any placeholder value.")
    base_url = os.environ.get("OPENAI_BASE_URL") or None
    return openai.OpenAI(base_url=base_url, api_key=api_key, **client_kwargs)  # type: ignore[arg-type]


def model_from_env(default: str | None = None) -> str | None:
    """``OPENAI_MODEL`` when set (and not empty), else ``default``."""
    return os.environ.get("OPENAI_MODEL") or default
