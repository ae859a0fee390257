"""Embedded store: a metadata filter that cannot be evaluated on a stored row raises; it never
quietly counts as "no match" (the filter runs inside SQLite, as a registered function)."""

from __future__ import annotations

from pathlib import Path

import pytest
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import InvalidMetadataError, StorageError

from .helpers import E1, NOW, ids, query, raw, record, seed

TEA = {"topic": "tea"}


@pytest.fixture
def tampered(store: EmbeddedStore, path: Path) -> EmbeddedStore:
    seed(store, records=[(record("good", "tea", metadata=TEA), E1), (record("bad", "tea", metadata=TEA), E1)])
    with store.unit_of_work() as uow:
        assert [r.id for r in uow.records.list(now=NOW, metadata_filter=TEA)] == ["bad", "good"]
    return store


def _corrupt(path: Path, metadata_json: str) -> None:
    with raw(path) as conn:
        conn.execute("UPDATE records SET metadata = ? WHERE id = 'bad'", (metadata_json,))


@pytest.mark.parametrize(
    ("stored", "error"),
    [("{not json", StorageError), ('["a", "list"]', InvalidMetadataError), ("7", InvalidMetadataError)],
)
def test_a_row_the_filter_cannot_read_raises_in_listing_and_search(
    tampered: EmbeddedStore, path: Path, stored: str, error: type[Exception]
) -> None:
    _corrupt(path, stored)

    with tampered.unit_of_work() as uow, pytest.raises(error) as listed:
        uow.records.list(now=NOW, metadata_filter=TEA)
    with pytest.raises(error) as searched:
        tampered.search(query(vector=E1, metadata_filter=TEA))

    for caught in (listed, searched):
        assert "user-defined function" not in str(caught.value)  # the real reason, not SQLite's


def test_a_readable_row_of_another_shape_is_simply_no_match(tampered: EmbeddedStore, path: Path) -> None:
    _corrupt(path, '{"topic": ["tea"]}')  # a list is not the string "tea": the documented rule

    with tampered.unit_of_work() as uow:
        assert [r.id for r in uow.records.list(now=NOW, metadata_filter=TEA)] == ["good"]
    assert ids(tampered.search(query(vector=E1, metadata_filter=TEA))) == ["good"]
