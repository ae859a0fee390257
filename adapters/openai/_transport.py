"""Adapters layer (OpenAI-compatible): the request gate, bounded retries (the server's
``Retry-After`` when it names a wait, jittered backoff otherwise), and SDK error translation."""

from __future__ import annotations

import email.utils
import importlib
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, TypeVar

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


def retry_after(exc: BaseException, now: float) -> float | None:
    """The wait in seconds a failed response asks for, or ``None`` when it names none.

    ``retry-after-ms`` (milliseconds, the OpenAI extension) wins over ``Retry-After``, which is
    either delay-seconds or an HTTP-date (RFC 9110), counted from ``now`` (Unix time). A date
    in the past is a wait of 0; a value that is neither is ignored.
    """
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _seconds(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP-date is in GMT anyway
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _seconds(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


@dataclass(slots=True)
class RetryPolicy:
    """``max_retries`` extra attempts after the first. The wait before a retry is what the
    response asked for (``Retry-After`` / ``retry-after-ms``, see :func:`retry_after`) when it
    asks for more than 0 s, else min(cap, base * 2**n) * jitter in [0.5, 1]. An ask longer than
    ``max_wait`` seconds is not waited for: the call fails at once with
    :class:`~palimpsest.adapters.openai.errors.ModelUnavailableError` naming the wait."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    max_wait: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = field(default=random.random)
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigurationError("max_retries must be a non-negative integer.")
        if self.backoff_base < 0 or self.backoff_cap < 0:
            raise ConfigurationError("backoff delays must be non-negative.")
        if not (isinstance(self.max_wait, (int, float)) and not isinstance(self.max_wait, bool)
                and math.isfinite(self.max_wait) and self.max_wait >= 0):
            raise ConfigurationError("max_retry_wait must be a non-negative number of seconds.")

    def delay(self, attempt: int) -> float:
        grown: float = self.backoff_base * (2**attempt)  # int ** int is typed Any (a negative power is a float)
        return min(self.backoff_cap, grown) * (0.5 + 0.5 * self.jitter())

    def run(self, operation: str, call: Callable[[], T]) -> T:
        """Run ``call`` with retries on 429/5xx/timeouts/connection errors; translate SDK errors."""
        attempt = 0
        while True:
            ensure_requests_allowed()
            try:
                return call()
            except openai.OpenAIError as exc:
                if not is_retryable(exc):
                    raise translate(exc, operation, attempts=attempt + 1) from exc
                asked = retry_after(exc, self.clock())
                if asked is not None and asked > self.max_wait:
                    raise ModelUnavailableError(
                        f"{operation}: the model server asked to retry after {asked:g} s, longer than "
                        f"the {self.max_wait:g} s this client waits (max_retry_wait): {_describe(exc)}.",
                        retry_after=asked,
                    ) from exc
                if attempt >= self.max_retries:
                    raise translate(exc, operation, attempts=attempt + 1, retry_after=asked) from exc
                wait = asked or self.delay(attempt)
                # INFO: the caller reports the call that fails in the end (an extraction attempt's
                # one WARNING line), so a server that is down does not print a line per request.
                log.info("%s: %s; retry %d/%d in %.2fs%s", operation, _describe(exc), attempt + 1,
                            self.max_retries, wait, " (as the server asked)" if asked else "")
                attempt += 1
                self.sleep(wait)


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")


def translate(
    exc: openai.OpenAIError, operation: str, *, attempts: int = 1, retry_after: float | None = None
) -> Exception:
    """The library error for an SDK error (the caller chains the original)."""
    if is_retryable(exc):
        return ModelUnavailableError(f"{operation}: the model server stayed unavailable after {attempts} "
                                     f"attempt(s): {_describe(exc)}.", retry_after=retry_after)
    if isinstance(exc, _MISCONFIGURED):
        return ConfigurationError(f"{operation}: the model server rejected the configuration "
                                  f"(credentials or model name): {_describe(exc)}: {_message(exc)}")
    return ModelError(f"{operation}: the model request failed: {_describe(exc)}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:300] + "…"
