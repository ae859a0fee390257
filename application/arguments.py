"""Application layer: argument parsing shared by the client and thread APIs (times, TTLs,
listing limits, unknown keywords)."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import ZERO_TTL_MESSAGE
from palimpsest.domain.sentinel import NotSetType

from .caller_warnings import warn_caller
from .config import MemoryRetentionConfig

__all__ = [
    "TimeToLiveAnchor",
    "check_ttl_arguments",
    "list_limit",
    "named_arguments",
    "parse_timestamp",
    "reject_unknown_kwargs",
    "resolve_expiry",
]

class TimeToLiveAnchor(str, enum.Enum):
    """What a TTL counts from: the record's creation, or its event ``timestamp``."""

    CREATED_AT = "created_at"
    TIMESTAMP = "timestamp"


def parse_timestamp(value: object, what: str = "timestamp") -> datetime | None:
    """``None``, an aware datetime, or an ISO-8601 string; naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(f"{what} must be an ISO-8601 date/time string, got {value!r}.") from None
    elif isinstance(value, datetime):
        parsed = value
    else:
        raise ValidationError(f"{what} must be an ISO-8601 string or a datetime.")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:59-12:00 lies after the last representable UTC time
        raise ValidationError(f"{what} is out of the representable range, got {value!r}.") from None


def _check_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError("ttl_days must be a number of days or None.")
    if value < 0:
        raise ValidationError("ttl_days must be non-negative.")
    if value == 0:
        # The reference accepts 0 and stores a row no read can see; refusing says so instead.
        raise ValidationError(ZERO_TTL_MESSAGE)
    return float(value)


def resolve_expiry(
    *,
    now: datetime,
    ttl_days: float | None | NotSetType,
    ttl_anchor: TimeToLiveAnchor | str | NotSetType,
    timestamp: datetime | None,
    retention: MemoryRetentionConfig,
) -> datetime | None:
    """When a new row expires: omitted ttl → the store default; ``None`` → the store maximum if
    one is set, else never; above the maximum → clamped (with a warning)."""
    anchor = TimeToLiveAnchor.CREATED_AT if isinstance(ttl_anchor, NotSetType) else _anchor(ttl_anchor)
    if isinstance(ttl_days, NotSetType):
        days = retention.default
    elif ttl_days is None:
        days = retention.maximum
    else:
        days = _check_ttl(ttl_days)
        cap = retention.maximum
        if cap is not None and days > cap:
            warn_caller("ttl_days exceeds the store's maximum TTL and was clamped to it.", UserWarning)
            days = cap
    if days is None:
        return None
    if anchor is TimeToLiveAnchor.TIMESTAMP:
        if timestamp is None:
            raise ValidationError("ttl_anchor=TIMESTAMP needs an ISO-8601 timestamp on the record.")
        start = timestamp
    else:
        start = now
    try:
        return start + timedelta(days=days)
    except OverflowError:  # beyond year 9999: use None (never expires) instead
        raise ValidationError("ttl_days is too large: the expiry would fall after the year 9999.") from None


def _anchor(value: object) -> TimeToLiveAnchor:
    try:
        return TimeToLiveAnchor(value)
    except ValueError:
        raise ValidationError("ttl_anchor must be TimeToLiveAnchor.CREATED_AT or TimeToLiveAnchor.TIMESTAMP.") from None


def check_ttl_arguments(ttl_days: object, ttl_anchor: object) -> Any:
    """Check a TTL and its anchor as given (``NOTSET`` stays omitted); returns the anchor as a
    :class:`TimeToLiveAnchor` (or ``NOTSET``). What they resolve to is :func:`resolve_expiry`'s."""
    if not isinstance(ttl_days, NotSetType) and ttl_days is not None:
        _check_ttl(ttl_days)
    return ttl_anchor if isinstance(ttl_anchor, NotSetType) else _anchor(ttl_anchor)


def list_limit(limit: object) -> Any:
    """A listing's ``limit`` for the store: omitted → ``None``, every row (nothing is left out
    unless the caller asks for a limit; the store checks the rest)."""
    return None if isinstance(limit, NotSetType) else limit


def reject_unknown_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    """The ``TypeError`` Python itself would raise, for methods that take ``**kwargs``."""
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword arguments: {', '.join(sorted(kwargs))}")


def named_arguments(frame: Mapping[str, Any]) -> dict[str, Any]:
    """The named arguments of a facade method, from its ``locals()`` taken before it assigns
    anything: every parameter but ``self`` and ``**kwargs``. A method whose keywords are a
    request's fields builds it with ``Request(**named_arguments(locals()))`` instead of
    repeating its keyword list."""
    return {name: value for name, value in frame.items() if name not in ("self", "kwargs")}
