"""export and import: an exact round trip, --reembed, and errors that name their line and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Invoke, Seeded
from .helpers import one_line_error, snapshot, store_dimension


def _export(invoke: Invoke, store: Path, target: Path) -> str:
    result = invoke("--store", str(store), "export", str(target))
    assert result.exit_code == 0, result.output
    return target.read_text(encoding="utf-8")


def _listings(invoke: Invoke, store: Path) -> list[str]:
    outputs = [
        invoke("--store", str(store), "threads", "--json").stdout,
        invoke("--store", str(store), "memories", "--json", "--limit", "0").stdout,
    ]
    for thread in ("t-1", "t-2"):
        outputs.append(invoke("--store", str(store), "messages", thread, "--json", "--last", "0").stdout)
    return outputs


def test_export_then_import_into_an_empty_store_round_trips_exactly(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    first = _export(invoke, seeded.path, tmp_path / "first.jsonl")
    kinds = [json.loads(line)["kind"] for line in first.splitlines()]
    assert kinds == sorted(kinds, key=["setting", "thread", "message", "memory", "link", "summary"].index)
    assert kinds.count("thread") == 2 and kinds.count("message") == 4 and kinds.count("link") == 2
    assert kinds.count("memory") == 6 and kinds.count("summary") >= 1 and kinds.count("setting") == 1
    assert '"id":"m-expired"' in first  # expired rows not yet purged travel too

    copy = tmp_path / "copy.db"
    result = invoke("--store", str(copy), "--embedder", "hashing", "import", str(tmp_path / "first.jsonl"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("imported 1 setting, 2 threads, 4 messages, 6 memory records, 2 links")
    assert "no vectors yet" in result.stderr

    assert snapshot(copy) == snapshot(seeded.path)  # ids, times, statuses, links, summaries, settings
    assert _listings(invoke, copy) == _listings(invoke, seeded.path)
    assert _export(invoke, copy, tmp_path / "second.jsonl") == first
    statuses = {r.id: r.status.value for r in snapshot(copy)["records"]}
    assert statuses["m-thin"] == "invalid" and statuses["m-sour"] == "valid"


def test_import_with_reembed_makes_vector_search_work(invoke: Invoke, seeded: Seeded, tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    _export(invoke, seeded.path, dump)
    plain, embedded = tmp_path / "plain.db", tmp_path / "embedded.db"
    assert invoke("--store", str(plain), "--embedder", "hashing", "import", str(dump)).exit_code == 0
    result = invoke(
        "--store",
        str(embedded),
        "--embedder",
        "hashing",
        "import",
        str(dump),
        "--reembed",
        "--batch-size",
        "3",
    )
    assert result.exit_code == 0, result.output
    assert "(embedded with hashing-v1-64)" in result.stdout and "no vectors" not in result.stderr
    assert store_dimension(plain) is None and store_dimension(embedded) == 64

    def hits(store: Path) -> str:
        return invoke("--store", str(store), "search", "sourdough pizza", "--user", "u1", "--xml").stdout

    # Hybrid search (the default) finds it either way: its keyword half needs no vectors.
    assert "<record_id>m-sour</record_id>" in hits(plain)
    assert "<record_id>m-sour</record_id>" in hits(embedded)
    assert snapshot(embedded) == snapshot(seeded.path)


def test_reembed_after_a_plain_import(invoke: Invoke, seeded: Seeded, tmp_path: Path) -> None:
    dump, copy = tmp_path / "dump.jsonl", tmp_path / "copy.db"
    _export(invoke, seeded.path, dump)
    assert invoke("--store", str(copy), "--embedder", "hashing", "import", str(dump)).exit_code == 0
    result = invoke("--store", str(copy), "reembed", "--batch-size", "2")
    assert result.exit_code == 0, result.output
    assert (
        result.stdout.strip() == "re-embedded 9 record(s) and message(s) with hashing-v1-64"
    )  # not the expired one
    assert store_dimension(copy) == 64


def test_export_to_standard_output_and_import_from_standard_input(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    result = invoke("--store", seeded.store, "export", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout == _export(invoke, seeded.path, tmp_path / "file.jsonl")
    assert "exported" in result.stderr
    copy = tmp_path / "copy.db"
    loaded = invoke("--store", str(copy), "--embedder", "hashing", "import", "-", input=result.stdout)
    assert loaded.exit_code == 0, loaded.output
    assert "from standard input" in loaded.stdout
    assert snapshot(copy) == snapshot(seeded.path)


def test_export_does_not_overwrite_without_force(invoke: Invoke, seeded: Seeded, tmp_path: Path) -> None:
    target = tmp_path / "dump.jsonl"
    target.write_text("keep me\n", encoding="utf-8")
    result = invoke("--store", seeded.store, "export", str(target))
    assert result.exit_code == 1
    assert "exists; pass --force" in one_line_error(result.stderr)
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert invoke("--store", seeded.store, "export", str(target), "--force").exit_code == 0
    assert target.read_text(encoding="utf-8").startswith('{"kind":"setting"')
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("dump")) == ["dump.jsonl"]


def _memory_line(**overrides: object) -> str:
    line = {
        "kind": "memory",
        "id": "m-1",
        "memory_type": "fact",
        "content": "Paris is in France.",
        "created_at": "2025-01-01T00:00:00+00:00",
        "updated_at": "2025-01-01T00:00:00+00:00",
    }
    line.update(overrides)
    return json.dumps({k: v for k, v in line.items() if v is not ...})


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([_memory_line(), "{not json"], "line 2: not valid JSON"),
        (["[1, 2]"], "line 1: expected a JSON object, got list."),
        (['{"kind": "planet", "id": "x"}'], 'line 1: "kind" must be one of'),
        ([_memory_line(colour="blue")], "line 1: unknown field(s) for a memory: colour."),
        ([_memory_line(created_at=...)], "line 1: a memory needs created_at."),
        (
            [_memory_line(), "", _memory_line(id="m-2", content="  ")],
            "line 3: memory content must not be empty.",
        ),
        ([_memory_line(memory_type="planet")], "line 1: record type must be one of"),
        ([_memory_line(status="deleted")], "line 1: status must be 'valid' or 'invalid'"),
        ([_memory_line(created_at="yesterday")], "line 1: created_at is not an ISO 8601 time"),
        ([_memory_line(created_at="2025-01-01T00:00:00")], "line 1: created_at must carry a UTC offset"),
        ([_memory_line(thread_id="t-missing")], "line 1: No thread with id 't-missing'."),
        (
            [
                _memory_line(),
                json.dumps(
                    {
                        "kind": "link",
                        "id": "l-1",
                        "source_id": "m-1",
                        "source_type": "fact",
                        "target_id": "m-gone",
                        "target_type": "fact",
                        "relation_type": "supports",
                        "opposite_relation_type": "is_supported_by",
                        "created_at": "2025-01-01T00:00:00+00:00",
                    }
                ),
            ],
            "line 2: No memory record with id 'm-gone'.",
        ),
        ([json.dumps({"kind": "setting", "key": "embedding_model", "value": {}})], "line 1: unknown setting"),
    ],
)
def test_an_import_line_with_a_bad_record_is_a_one_line_error_and_writes_nothing(
    invoke: Invoke, tmp_path: Path, lines: list[str], expected: str
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "new.db"
    result = invoke("--store", str(target), "--embedder", "none", "import", str(source))
    assert result.exit_code == 1, result.output
    message = one_line_error(result.stderr)
    assert message.startswith(f"error: {source}, {expected}")
    assert not target.exists(), "a failed import must not leave a new store file behind"


def test_a_failed_import_into_an_existing_store_leaves_it_unchanged(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    _export(invoke, seeded.path, dump)
    before = snapshot(seeded.path)
    result = invoke("--store", seeded.store, "import", str(dump))
    assert result.exit_code == 1
    first_thread_line = next(
        i for i, line in enumerate(dump.read_text().splitlines(), 1) if '"kind":"thread"' in line
    )
    assert (
        one_line_error(result.stderr)
        == f"error: {dump}, line {first_thread_line}: A thread with id 't-1' already exists."
    )
    assert snapshot(seeded.path) == before


@pytest.mark.parametrize("problem", ["missing", "folder", "binary"])
def test_an_unreadable_import_file_is_a_one_line_error(invoke: Invoke, tmp_path: Path, problem: str) -> None:
    source = tmp_path / "input.jsonl"
    if problem == "folder":
        source.mkdir()
    elif problem == "binary":
        source.write_bytes(b"\xff\xfe\x00garbage")
    target = tmp_path / "new.db"
    result = invoke("--store", str(target), "import", str(source))
    assert result.exit_code == 1
    message = one_line_error(result.stderr)
    assert str(source) in message
    expected = {
        "missing": "No such file or directory",
        "folder": "Is a directory",
        "binary": "is not UTF-8 text",
    }
    assert expected[problem] in message
    assert not target.exists()


def test_import_reembed_without_an_embedder_is_refused(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    _export(invoke, seeded.path, dump)
    result = invoke(
        "--store", str(tmp_path / "new.db"), "--embedder", "none", "import", str(dump), "--reembed"
    )
    assert result.exit_code == 1
    assert "--reembed needs an embedder" in one_line_error(result.stderr)
    assert not (tmp_path / "new.db").exists()


def test_an_import_that_embeds_follows_the_stores_index_text_recipe() -> None:
    from datetime import UTC, datetime

    from palimpsest.adapters.cli.transfer import ImportItem, import_items
    from palimpsest.adapters.memory import InMemoryStore
    from palimpsest.application.indexing import INDEX_CONTEXT_SETTING
    from palimpsest.application.testing import HashingEmbedder
    from palimpsest.domain.model import Message, Thread
    from palimpsest.domain.search import ScopeFilter, SearchQuery

    when = datetime(2025, 6, 1, tzinfo=UTC)
    embedder = HashingEmbedder()
    with InMemoryStore() as store:
        with store.unit_of_work() as uow:
            uow.settings.set(INDEX_CONTEXT_SETTING, ["role"])
            uow.commit()
        message = Message(
            id="m1", thread_id="t1", role="user", content="I bake sourdough.", seq=1, created_at=when, user_id="u"
        )
        items = [
            ImportItem("thread", Thread(id="t1", user_id="u", created_at=when, updated_at=when), 1),
            ImportItem("message", message, 2),
        ]
        import_items(store, items, embedder=embedder)

        def cosine(text: str) -> float:
            query = SearchQuery(
                k=1, now=when, vector=tuple(embedder.embed([text])[0]), scope=ScopeFilter(user_id="u")
            )
            return store.search(query)[0].score

        assert cosine("user: I bake sourdough.") == pytest.approx(1.0)
        assert cosine("I bake sourdough.") < 0.99
