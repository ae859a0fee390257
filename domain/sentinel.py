"""Domain layer: the two markers that keep "omitted", "None" and "anything" apart.

``NOTSET`` means the caller did not pass the argument (use the default / leave unchanged);
``None`` keeps its explicit meaning ("unscoped only", "clear", "never expires").
``ANY`` is used in scope filters for a dimension that is not constrained at all.
"""

from __future__ import annotations

import enum
from typing import Final, Literal, TypeVar

__all__ = ["ANY", "NOTSET", "AnyType", "NotSetType", "is_set", "or_default"]

T = TypeVar("T")


class NotSetType(enum.Enum):
    """Type of :data:`NOTSET`; an enum so that it is a singleton that pickles and type-checks."""

    NOTSET = "NOTSET"

    def __repr__(self) -> str:
        return "NOTSET"

    def __bool__(self) -> bool:
        return False


class AnyType(enum.Enum):
    """Type of :data:`ANY`."""

    ANY = "ANY"

    def __repr__(self) -> str:
        return "ANY"


NOTSET: Final = NotSetType.NOTSET
ANY: Final = AnyType.ANY

NotSetLiteral = Literal[NotSetType.NOTSET]


def is_set(value: object) -> bool:
    """True when the caller passed the argument (even ``None``)."""
    return value is not NOTSET


def or_default(value: T | NotSetType, default: T) -> T:
    """The value, or ``default`` when it was omitted."""
    return default if isinstance(value, NotSetType) else value
