"""Domain layer: the metadata filter language, validated and evaluated in pure Python.

A filter is a dict whose entries are AND-ed. For each field:

* a plain value is an exact match: the key must exist and equal the value (lists compare by
  order and length; JSON types are strict, so ``True`` does not equal ``1``);
* a dict without ``$`` keys is a nested filter applied to a nested object;
* a dict of operators (only ``$`` keys) combines them with AND:
  ``{"$array_contains": v}`` (scalar: contains it; list: contains all),
  ``{"$array_contains_any": [..]}`` (contains at least one),
  ``{"$not": expr}`` (negates any field expression: an operator dict, a nested filter or an
  exact value; a missing field satisfies it).

A stored value of another JSON type than the filter needs is no match, never an error: a string
or a number holds no array elements (no substring search), a scalar has no nested fields, a
string never equals a number; ``$not`` of such an expression matches.

A filter that breaks the language is refused before anything is evaluated
(:func:`validate_metadata_filter`, ``InvalidMetadataFilterError``). Evaluation never ignores what
it cannot read: an unknown operator in a filter that skipped validation raises
``InvalidMetadataFilterError``, metadata that is not an object raises ``InvalidMetadataError``.

Stores that cannot translate a filter to their query language call :func:`metadata_matches` (the
embedded store registers it as an SQLite function), so the semantics are defined once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from .errors import InvalidMetadataError, InvalidMetadataFilterError
from .model import MAX_JSON_INT_DIGITS, check_json_int

__all__ = ["OPERATORS", "json_equal", "metadata_matches", "validate_metadata_filter"]

OPERATORS: Final = frozenset({"$array_contains", "$array_contains_any", "$not"})

_MISSING: Final = object()


def _is_scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool) and not check_json_int(value):
        # Stores pass filters on as JSON text, which cannot hold it: say so, rather than "not a scalar".
        raise InvalidMetadataFilterError(f"metadata_filter integers have at most {MAX_JSON_INT_DIGITS} digits.")
    return value is None or isinstance(value, (str, bool, int))


def _check_json(value: object, depth: int = 0) -> None:
    if depth > 32:
        raise InvalidMetadataFilterError("metadata_filter is nested too deeply.")
    if _is_scalar(value):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_json(item, depth + 1)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidMetadataFilterError("metadata_filter keys must be strings.")
            _check_json(item, depth + 1)
        return
    raise InvalidMetadataFilterError("metadata_filter exact-match values must be JSON-compatible.")


def _is_operator_dict(value: Mapping[str, Any]) -> bool:
    keys = [k for k in value if isinstance(k, str) and k.startswith("$")]
    if keys and len(keys) != len(value):
        raise InvalidMetadataFilterError(
            "metadata_filter field operator dictionaries must contain only operators."
        )
    return bool(keys)


def _validate_operators(ops: Mapping[str, Any], depth: int) -> None:
    for op, operand in ops.items():
        if op not in OPERATORS:
            raise InvalidMetadataFilterError(f"metadata_filter field operator {op!r} is not supported.")
        if op == "$not":
            _validate_expression(operand, depth + 1)
        elif op == "$array_contains":
            if isinstance(operand, (list, tuple)):
                if not operand:
                    raise InvalidMetadataFilterError("metadata_filter array operator lists must not be empty.")
                if not all(_is_scalar(v) for v in operand):
                    raise InvalidMetadataFilterError("metadata_filter operator values must be JSON scalar values.")
            elif not _is_scalar(operand):
                raise InvalidMetadataFilterError("metadata_filter operator values must be JSON scalar values.")
        else:  # $array_contains_any
            if not isinstance(operand, (list, tuple)) or not operand:
                raise InvalidMetadataFilterError(
                    "metadata_filter $array_contains_any needs a non-empty list of values."
                )
            if not all(_is_scalar(v) for v in operand):
                raise InvalidMetadataFilterError("metadata_filter operator values must be JSON scalar values.")


def _validate_expression(value: object, depth: int) -> None:
    if depth > 32:
        raise InvalidMetadataFilterError("metadata_filter is nested too deeply.")
    if isinstance(value, Mapping):
        # An empty dict is a nested filter with no conditions: "the field is an object".
        if _is_operator_dict(value):
            _validate_operators(value, depth)
        else:
            _validate_object(value, depth + 1)
        return
    _check_json(value, depth)


def _validate_object(flt: Mapping[Any, Any], depth: int) -> None:
    for key, value in flt.items():
        if not isinstance(key, str):
            raise InvalidMetadataFilterError("metadata_filter keys must be strings.")
        _validate_expression(value, depth)


def validate_metadata_filter(flt: object) -> dict[str, Any] | None:
    """Check a filter and return a plain-dict copy; ``None`` means "no filter"."""
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidMetadataFilterError("metadata_filter must be a dict or None.")
    _validate_object(flt, 0)
    plain: dict[str, Any] = _plain(flt)
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def json_equal(a: object, b: object) -> bool:
    """Equality with JSON typing: booleans are not numbers, tuples equal lists."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _contains(array: object, value: object) -> bool:
    return isinstance(array, (list, tuple)) and any(json_equal(item, value) for item in array)


def _match_operators(actual: object, ops: Mapping[str, Any]) -> bool:
    for op, operand in ops.items():
        if op == "$not":
            if _match_expression(actual, operand):
                return False
        elif op == "$array_contains":
            wanted = operand if isinstance(operand, (list, tuple)) else [operand]
            if actual is _MISSING or not all(_contains(actual, v) for v in wanted):
                return False
        elif op == "$array_contains_any":
            if actual is _MISSING or not any(_contains(actual, v) for v in operand):
                return False
        else:  # only a filter that skipped validation gets here: never read it as "true"
            raise InvalidMetadataFilterError(f"metadata_filter field operator {op!r} is not supported.")
    return True


def _match_expression(actual: object, expected: object) -> bool:
    if isinstance(expected, Mapping) and expected and all(k.startswith("$") for k in expected):
        return _match_operators(actual, expected)
    if actual is _MISSING:
        return False
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and _match_object(actual, expected)
    return json_equal(actual, expected)


def _match_object(metadata: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    return all(_match_expression(metadata.get(key, _MISSING), expected) for key, expected in flt.items())


def metadata_matches(metadata: Mapping[str, Any] | None, flt: Mapping[str, Any] | None) -> bool:
    """Does ``metadata`` (an object, or ``None`` for none) satisfy the (already validated)
    filter? ``None`` filter matches all. Raises rather than guess, see the module docstring."""
    if flt is None:
        return True
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, Mapping):
        raise InvalidMetadataError(f"metadata must be a JSON object or None, not {type(metadata).__name__}.")
    return _match_object(metadata, flt)


# Short names for callers inside the package (``metadata_filter.matches(...)`` reads well).
matches = metadata_matches
validate_filter = validate_metadata_filter
