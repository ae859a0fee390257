"""Unit: the metadata filter language — validation of every malformed shape, and evaluation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from palimpsest.domain.errors import InvalidMetadataError, InvalidMetadataFilterError, ValidationError
from palimpsest.domain.metadata_filter import OPERATORS, matches, validate_filter


def _deep(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


MALFORMED = {
    "not a mapping (list)": [{"a": 1}],
    "not a mapping (string)": "a = 1",
    "not a mapping (int)": 3,
    "non-string key": {1: "a"},
    "non-string nested key": {"a": {2: "b"}},
    "operators mixed with fields": {"tags": {"$array_contains": "x", "name": "y"}},
    "unknown operator": {"n": {"$gt": 3}},
    "unknown operator $eq": {"n": {"$eq": 3}},
    "unknown operator under $not": {"n": {"$not": {"$in": [1]}}},
    "$array_contains with an object": {"tags": {"$array_contains": {"a": 1}}},
    "$array_contains with an empty list": {"tags": {"$array_contains": []}},
    "$array_contains with a nested list": {"tags": {"$array_contains": [["a"]]}},
    "$array_contains with an object in its list": {"tags": {"$array_contains": [{"a": 1}]}},
    "$array_contains with NaN": {"tags": {"$array_contains": float("nan")}},
    "$array_contains_any with a scalar": {"tags": {"$array_contains_any": "a"}},
    "$array_contains_any with an empty list": {"tags": {"$array_contains_any": []}},
    "$array_contains_any with a non-scalar": {"tags": {"$array_contains_any": ["a", ["b"]]}},
    "$array_contains_any with an object": {"tags": {"$array_contains_any": {"a": 1}}},
    "exact value that is not JSON (set)": {"a": {1, 2}},
    "exact value that is not JSON (object)": {"a": object()},
    "exact value that is not finite": {"a": float("inf")},
    "exact value NaN inside a list": {"a": [1, float("nan")]},
    "nested too deeply": _deep(40),
}


@pytest.mark.parametrize("flt", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_filter_is_rejected(flt: object) -> None:
    with pytest.raises(InvalidMetadataFilterError):
        validate_filter(flt)


def test_a_malformed_filter_is_a_validation_error_and_a_value_error() -> None:
    with pytest.raises(ValidationError):
        validate_filter({"a": {"$bogus": 1}})
    with pytest.raises(ValueError):
        validate_filter({"a": {"$bogus": 1}})


WELL_FORMED = [
    {},
    {"a": 1},
    {"a": None},
    {"a": [1, "x", None, True]},
    {"a": {"b": {"c": 1.5}}},
    {"a": {}},
    {"tags": {"$array_contains": "x"}},
    {"tags": {"$array_contains": ["x", 1, None]}},
    {"tags": {"$array_contains_any": ("x", "y")}},
    {"tags": {"$not": {"$array_contains": "x"}}},
    {"tags": {"$not": {"$not": "x"}}},
    {"a": {"$not": {"b": 1}}},
    {"tags": {"$array_contains": "x", "$not": {"$array_contains": "y"}}},
    _deep(30),
]


@pytest.mark.parametrize("flt", WELL_FORMED)
def test_a_well_formed_filter_is_accepted(flt: dict[str, Any]) -> None:
    assert validate_filter(flt) == _listify(flt)


def _listify(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _listify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_listify(v) for v in value]
    return value


def test_validation_returns_a_private_plain_copy() -> None:
    flt = {"tags": {"$array_contains_any": ("x", "y")}, "owner": {"name": "ann"}}
    checked = validate_filter(flt)
    assert checked == {"tags": {"$array_contains_any": ["x", "y"]}, "owner": {"name": "ann"}}
    flt["owner"]["name"] = "mallory"
    assert checked is not None and checked["owner"] == {"name": "ann"}


def test_no_filter_is_none_and_matches_everything() -> None:
    assert validate_filter(None) is None
    assert matches(None, None)
    assert matches({"a": 1}, None)


def test_the_operators_are_exactly_the_documented_three() -> None:
    assert OPERATORS == {"$array_contains", "$array_contains_any", "$not"}


META = {
    "topic": "tea",
    "n": 1,
    "x": 1.5,
    "flag": True,
    "off": False,
    "nothing": None,
    "tags": ["green", "hot", 7, True],
    "owner": {"name": "ann", "team": {"id": 3}},
    "pairs": [[1, 2], {"k": "v"}],
}

TRUTH_TABLE = [
    # exact values
    ({"topic": "tea"}, True),
    ({"topic": "Tea"}, False),
    ({"topic": "tea", "n": 1}, True),
    ({"topic": "tea", "n": 2}, False),
    ({"n": 1.0}, True),
    ({"x": 1.5}, True),
    ({"nothing": None}, True),
    ({"absent": None}, False),
    ({"absent": "tea"}, False),
    ({"tags": ["green", "hot", 7, True]}, True),
    ({"tags": ["hot", "green", 7, True]}, False),
    ({"tags": ["green", "hot", 7]}, False),
    ({"pairs": [[1, 2], {"k": "v"}]}, True),
    # bool vs int strictness
    ({"flag": True}, True),
    ({"flag": 1}, False),
    ({"n": True}, False),
    ({"off": 0}, False),
    ({"off": False}, True),
    ({"nothing": False}, False),
    ({"n": "1"}, False),
    # nested filters
    ({"owner": {"name": "ann"}}, True),
    ({"owner": {"team": {"id": 3}}}, True),
    ({"owner": {"team": {"id": 4}}}, False),
    ({"owner": {"name": "ann", "missing": 1}}, False),
    ({"owner": {}}, True),
    ({"topic": {}}, False),
    ({"absent": {}}, False),
    ({"owner": {"name": {"$not": "bob"}}}, True),
    # $array_contains
    ({"tags": {"$array_contains": "green"}}, True),
    ({"tags": {"$array_contains": "blue"}}, False),
    ({"tags": {"$array_contains": ["green", 7]}}, True),
    ({"tags": {"$array_contains": ["green", "blue"]}}, False),
    ({"tags": {"$array_contains": 7.0}}, True),
    ({"tags": {"$array_contains": True}}, True),
    ({"tags": {"$array_contains": 1}}, False),
    ({"topic": {"$array_contains": "tea"}}, False),
    ({"absent": {"$array_contains": "tea"}}, False),
    # $array_contains_any
    ({"tags": {"$array_contains_any": ["blue", "hot"]}}, True),
    ({"tags": {"$array_contains_any": ["blue", "red"]}}, False),
    ({"tags": {"$array_contains_any": [1]}}, False),
    ({"absent": {"$array_contains_any": ["x"]}}, False),
    # $not on values and operators, and on missing fields
    ({"topic": {"$not": "coffee"}}, True),
    ({"topic": {"$not": "tea"}}, False),
    ({"absent": {"$not": "tea"}}, True),
    ({"nothing": {"$not": None}}, False),
    ({"absent": {"$not": None}}, True),
    ({"flag": {"$not": 1}}, True),
    ({"tags": {"$not": {"$array_contains": "blue"}}}, True),
    ({"tags": {"$not": {"$array_contains": "green"}}}, False),
    ({"absent": {"$not": {"$array_contains": "green"}}}, True),
    ({"tags": {"$not": {"$array_contains_any": ["blue", "hot"]}}}, False),
    ({"owner": {"$not": {"name": "ann"}}}, False),
    ({"owner": {"$not": {"name": "bob"}}}, True),
    ({"topic": {"$not": {"$not": "tea"}}}, True),
    ({"tags": {"$array_contains": "green", "$not": {"$array_contains": "hot"}}}, False),
    ({"tags": {"$array_contains": "green", "$not": {"$array_contains": "blue"}}}, True),
    # empty filter
    ({}, True),
]


@pytest.mark.parametrize(("flt", "expected"), TRUTH_TABLE, ids=[repr(f) for f, _ in TRUTH_TABLE])
def test_evaluation_follows_the_truth_table(flt: dict[str, Any], expected: bool) -> None:
    assert matches(META, validate_filter(flt)) is expected


def test_missing_metadata_behaves_like_an_empty_object() -> None:
    assert matches(None, {}) is True
    assert matches(None, {"a": 1}) is False
    assert matches(None, {"a": {"$not": 1}}) is True
    assert matches(None, {"a": {"$array_contains": 1}}) is False



@pytest.mark.parametrize(
    ("flt", "metadata"),
    [
        ({"n": {"$array_contains": 5}}, {"n": 5}),  # a scalar is not an array holding it
        ({"n": {"$array_contains_any": ["a"]}}, {"n": "abc"}),  # nor is a string (no substrings)
        ({"n": {"v": 5}}, {"n": 5}),  # a nested filter needs an object
        ({"n": {}}, {"n": [1]}),
        ({"n": [5]}, {"n": 5}),  # an exact list needs a list
        ({"n": 5}, {"n": "5"}),  # JSON types are strict
        ({"n": 1}, {"n": True}),
        ({"n": None}, {}),  # null is a value, not "missing"
    ],
)
def test_a_value_of_another_json_type_is_no_match_and_never_an_error(flt: dict, metadata: dict) -> None:
    assert matches(metadata, validate_filter(flt)) is False
    assert matches(metadata, validate_filter({"n": {"$not": flt["n"]}})) is True


@pytest.mark.parametrize("flt", [{"n": {"$gt": 3}}, {"n": {"$not": {"$in": [1]}}}, {"a": {"b": {"$eq": 1}}}])
def test_evaluating_an_unvalidated_filter_with_an_unknown_operator_raises(flt: dict) -> None:
    """Evaluation never ignores what it does not know (it would match everything)."""
    with pytest.raises(InvalidMetadataFilterError):
        matches({"n": 5, "a": {"b": 1}}, flt)


@pytest.mark.parametrize("metadata", [["a", "list"], "text", 7, 0, True])
def test_metadata_that_is_not_an_object_raises(metadata: object) -> None:
    with pytest.raises(InvalidMetadataError):
        matches(metadata, {"a": 1})  # type: ignore[arg-type]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from(["a", "b", ""]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)
metadata_objects = st.none() | st.dictionaries(st.sampled_from(["a", "b", "c"]), json_values, max_size=3)


@given(metadata=metadata_objects, key=st.sampled_from(["a", "b", "c"]), value=json_values)
def test_not_is_the_complement_of_the_expression_it_wraps(metadata: Any, key: str, value: Any) -> None:
    flt = validate_filter({key: value})
    negated = validate_filter({key: {"$not": value}})
    assert matches(metadata, negated) is (not matches(metadata, flt))


@given(metadata=metadata_objects, key=st.sampled_from(["a", "b", "c"]), value=json_values)
def test_a_field_always_matches_a_filter_made_of_its_own_value(metadata: Any, key: str, value: Any) -> None:
    stored = dict(metadata or {})
    stored[key] = value
    assert matches(stored, validate_filter({key: value})) is True


@pytest.mark.parametrize(
    "flt",
    [
        {"n": 10**4300},
        {"n": [1, -(10**5000)]},
        {"n": {"$not": 10**4300}},
        {"tags": {"$array_contains": 10**4300}},
        {"tags": {"$array_contains": [1, 10**4300]}},
        {"tags": {"$array_contains_any": [10**4300]}},
    ],
    ids=["exact", "in a list", "under $not", "$array_contains", "$array_contains list", "$array_contains_any"],
)
def test_an_integer_of_more_than_4300_digits_is_rejected(flt: dict[str, Any]) -> None:
    with pytest.raises(InvalidMetadataFilterError, match="4300 digits"):
        validate_filter(flt)
    assert validate_filter({"n": 10**4300 - 1}) == {"n": 10**4300 - 1}
