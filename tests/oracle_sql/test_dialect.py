"""The Oracle dialect of the SQL kit (its entity round trips are in tests/sql): native JSON
numbers, and violated constraints named by their logical keys."""

from __future__ import annotations

import decimal

from palimpsest.adapters.oracle.codec import CODEC
from palimpsest.adapters.oracle.dialect import OracleDialect
from palimpsest.adapters.oracle.names import StoreNames
from palimpsest.adapters.sql import Key

from .test_unit_of_work import unique


def test_native_json_numbers_read_back_as_json_loads_would() -> None:
    assert CODEC.dialect.decode_json({"a": decimal.Decimal(2), "b": [decimal.Decimal("2.5")]}) == {"a": 2, "b": [2.5]}


def test_a_violated_constraint_is_named_by_its_logical_key() -> None:
    dialect = OracleDialect(StoreNames("acme"))
    assert dialect.violated(unique("ACME_MESSAGE_THREAD_ORDER_UQ")) == Key.MESSAGE_SEQ
    assert dialect.violated(unique("ACME_MEMORY_LINK_UQ")) == Key.LINK_RELATION
    assert dialect.violated(None) is None
