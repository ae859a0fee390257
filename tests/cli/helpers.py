"""Helpers of the command-line tests: a full snapshot of a store, read through its ports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.adapters.embedded import EmbeddedStore

EVERYTHING = datetime.min.replace(tzinfo=UTC)
SETTINGS = ("memory_retention_config",)


def snapshot(path: Path) -> dict[str, Any]:
    """Everything stored in the file, expired rows included, in a comparable form."""
    with EmbeddedStore(path) as store, store.unit_of_work() as uow:
        threads = uow.threads.list(limit=None)
        return {
            "threads": threads,
            "messages": {t.id: uow.messages.list_for_thread(t.id, now=EVERYTHING) for t in threads},
            "summaries": {t.id: uow.summaries.list_for_thread(t.id) for t in threads},
            "records": uow.records.list(now=EVERYTHING, limit=None),
            "links": uow.links.list(limit=None),
            "settings": {key: uow.settings.get(key) for key in SETTINGS},
        }


def store_dimension(path: Path) -> int | None:
    with EmbeddedStore(path) as store:
        return store.dimension


def one_line_error(text: str) -> str:
    """The single ``error: ...`` line of ``text`` (asserting there is exactly one line)."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got {lines!r}"
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in text
    return lines[0]
