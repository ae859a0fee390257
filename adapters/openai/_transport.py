"""Adapters layer (OpenAI-compatible): the request gate, bounded retries with jittered backoff, and SDK error translation."""

from __future__ import annotations

import importlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import openai
from palimpsest.domain.errors import ConfigurationError

from .errors import ModelError, ModelRequestsDisabledError, ModelUnavailableError

log = logging.getLogger("palimpsest.adapters.openai")

T = TypeVar("T")

_RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)
_MISCONFIGURED = (
    openai.AuthenticationError,
    openai.PermissionDeniedError,
    openai.NotFoundError,
)


def ensure_requests_allowed() -> None:
    """Raise unless ``palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS`` is true (read at call time)."""
    package = importlib.import_module("palimpsest.adapters.openai")
    if not getattr(package, "ALLOW_MODEL_REQUESTS", True):
        raise ModelRequestsDisabledError(
            "model requests are disabled (palimpsest.adapters.openai.ALLOW_MODEL_REQUESTS is False)."
        )


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, _RETRYABLE):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


@dataclass(slots=True)
class RetryPolicy:
    """``max_retries`` extra attempts after the first; delay = min(cap, base * 2**n) * jitter in [0.5, 1]."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = field(default=random.random)

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigurationError("max_retries must be a non-negative integer.")
        if self.backoff_base < 0 or self.backoff_cap < 0:
            raise ConfigurationError("backoff delays must be non-negative.")

    def delay(self, attempt: int) -> float:
        return min(self.backoff_cap, self.backoff_base * (2**attempt)) * (0.5 + 0.5 * self.jitter())

    def run(self, operation: str, call: Callable[[], T]) -> T:
        """Run ``call`` with retries on 429/5xx/timeouts/connection errors; translate SDK errors."""
        attempt = 0
        while True:
            ensure_requests_allowed()
            try:
                return call()
            except openai.OpenAIError as exc:
                if is_retryable(exc) and attempt < self.max_retries:
                    wait = self.delay(attempt)
                    log.warning("%s: %s; retry %d/%d in %.2fs", operation, _describe(exc), attempt + 1,
                                self.max_retries, wait)
                    attempt += 1
                    self.sleep(wait)
                    continue
                raise translate(exc, operation, attempts=attempt + 1) from exc


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")


def translate(exc: openai.OpenAIError, operation: str, *, attempts: int = 1) -> Exception:
    """The library error for an SDK error (the caller chains the original)."""
    if is_retryable(exc):
        return ModelUnavailableError(f"{operation}: the model server stayed unavailable after {attempts} "
                                     f"attempt(s): {_describe(exc)}.")
    if isinstance(exc, _MISCONFIGURED):
        return ConfigurationError(f"{operation}: the model server rejected the configuration "
                                  f"(credentials or model name): {_describe(exc)}: {_message(exc)}")
    return ModelError(f"{operation}: the model request failed: {_describe(exc)}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "…"
