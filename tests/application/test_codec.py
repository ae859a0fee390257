"""Application tests: the entity codec and the export format it serves (D36).

``fixtures/export_before_codec.jsonl`` was written by the exporter as it was before the codec
(a thread with messages, a summary and extracted memories, a supersedes link, an unscoped
thread, the retention setting): today's importer reads it, and today's exporter writes the
same store back line for line.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import MemoryExtractionConfig, StoreAdmin
from palimpsest.application.codec import decode, encode
from palimpsest.domain import ValidationError
from palimpsest.domain.model import RecordStatus

FIXTURE = Path(__file__).with_name("fixtures") / "export_before_codec.jsonl"


def test_an_export_made_before_the_codec_imports_and_exports_unchanged() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    items = StoreAdmin.read_export(io.StringIO(text), source=FIXTURE.name)
    memory = open_memory(
        embedder=HashingEmbedder(), memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
    )
    try:
        counts = memory.admin.import_items(items)
        assert counts == {"setting": 1, "thread": 2, "message": 4, "memory": 6, "link": 1, "summary": 2}
        assert memory.admin.get_record("id-004").status is RecordStatus.INVALID  # superseded
        assert [r.content for r in memory.search("Lisbon", user_id="alice", search_strategy="keyword")][:1]
        out = io.StringIO()
        memory.admin.export(out)
    finally:
        memory.close()
    assert out.getvalue().splitlines() == text.splitlines()


def test_every_line_of_the_old_export_decodes_through_the_codec_and_encodes_back() -> None:
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["kind"] == "setting":
            continue
        assert encode(decode(obj)) == obj


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"kind": "user"}, '"kind" must be one of'),
        ({"kind": "thread", "id": "t", "created_at": "2026-01-01T00:00:00+00:00"}, "needs updated_at"),
        (
            {"kind": "thread", "id": "t", "created_at": "2026-01-01T00:00:00", "updated_at": "2026-01-01T00:00:00Z"},
            "must carry a UTC offset",
        ),
        (
            {
                "kind": "thread",
                "id": "t",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
                "colour": "red",
            },
            "unknown field",
        ),
        (
            {
                "kind": "memory",
                "id": "m",
                "memory_type": "memory",
                "content": "   ",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            },
            "must not be empty",
        ),
        ({"kind": "summary", "id": "s", "thread_id": "t", "revision": 1, "text": "x", "topics": "a",
          "created_at": "2026-01-01T00:00:00Z"}, "topics must be a list"),
    ],
)
def test_bad_objects_are_validation_errors(obj: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        decode(obj)


def test_a_kind_given_twice_must_agree() -> None:
    with pytest.raises(ValidationError, match="expected 'message'"):
        decode({"kind": "thread"}, kind="message")
