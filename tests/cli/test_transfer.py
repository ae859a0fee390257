"""export and import: an exact round trip, --reembed, and errors that name their line and write nothing."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from clients import build_client

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


def test_import_into_a_store_under_a_new_folder_creates_it(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    _export(invoke, seeded.path, dump)
    copy = tmp_path / "new" / "folder" / "copy.db"
    assert invoke("--store", str(copy), "--embedder", "hashing", "import", str(dump)).exit_code == 0
    assert snapshot(copy) == snapshot(seeded.path)


def test_import_into_a_path_that_cannot_hold_a_store_names_it_and_writes_nothing(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    _export(invoke, seeded.path, dump)
    in_the_way = tmp_path / "notes.txt"
    in_the_way.write_text("a file, not a folder\n", encoding="utf-8")
    result = invoke("--store", str(in_the_way / "copy.db"), "import", str(dump))
    assert result.exit_code == 1
    line = one_line_error(result.stderr)
    assert f"cannot create the folder {in_the_way} for the store file {in_the_way / 'copy.db'}" in line
    assert in_the_way.read_text(encoding="utf-8") == "a file, not a folder\n"


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


def test_a_failed_import_into_a_new_folder_leaves_no_folder_behind(invoke: Invoke, tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(_memory_line(thread_id="t-missing") + "\n", encoding="utf-8")  # fails in the store
    target = tmp_path / "new" / "folder" / "store.db"
    result = invoke("--store", str(target), "--embedder", "none", "import", str(source))
    assert result.exit_code == 1, result.output
    one_line_error(result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


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

    from palimpsest.adapters import HashingEmbedder
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.indexing import INDEX_CONTEXT_SETTING
    from palimpsest.application.transfer import ImportItem, import_items
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


# --- every line is validated with the API's rules (and hostile lines are one-line errors) -------

T = "2025-01-01T00:00:00+00:00"


def _obj(kind: str, **fields: object) -> str:
    defaults: dict[str, dict[str, object]] = {
        "thread": {"id": "t-1", "user_id": "u1", "agent_id": "a1", "created_at": T, "updated_at": T},
        "message": {
            "id": "g-1",
            "thread_id": "t-1",
            "seq": 1,
            "role": "user",
            "content": "Hello.",
            "user_id": "u1",
            "agent_id": "a1",
            "created_at": T,
        },
        "memory": {
            "id": "m-1",
            "memory_type": "fact",
            "content": "Paris is in France.",
            "user_id": "u1",
            "created_at": T,
            "updated_at": T,
        },
        "link": {
            "id": "l-1",
            "source_id": "m-2",
            "source_type": "fact",
            "target_id": "m-1",
            "target_type": "fact",
            "relation_type": "supports",
            "opposite_relation_type": "is_supported_by",
            "created_at": T,
        },
        "summary": {
            "id": "s-1",
            "thread_id": "t-1",
            "revision": 1,
            "text": "A greeting.",
            "user_id": "u1",
            "agent_id": "a1",
            "created_at": T,
        },
        "setting": {"key": "memory_retention_config", "value": {"default_ttl_days": None, "max_ttl_days": 30}},
    }
    line = {"kind": kind, **defaults[kind], **fields}
    return json.dumps({k: v for k, v in line.items() if v is not ...})


def _deep_json(levels: int) -> str:
    return '{"kind": "memory", "metadata": ' + "[" * levels + "]" * levels + "}"


RETENTION = "memory_retention_config"
HOSTILE_LINES = {
    "retention not a number": (
        [_obj("setting", value={"default_ttl_days": "abc"})],
        f"line 1: setting {RETENTION!r}: default_ttl_days must be a finite, non-negative number of days or None.",
    ),
    "negative retention": (
        [_obj("setting", value={"max_ttl_days": -1})],
        f"line 1: setting {RETENTION!r}: max_ttl_days must be a finite, non-negative number of days or None.",
    ),
    "infinite retention": (
        [_obj("setting", value={"max_ttl_days": 1}).replace('"max_ttl_days": 1', '"max_ttl_days": 1e400')],
        f"line 1: setting {RETENTION!r}: max_ttl_days must be a finite",
    ),
    "retention default above its cap": (
        [_obj("setting", value={"default_ttl_days": 9, "max_ttl_days": 3})],
        f"line 1: setting {RETENTION!r}: default_ttl_days must be less than or equal to max_ttl_days.",
    ),
    "retention with an unknown field": (
        [_obj("setting", value={"max_ttl_day": 3})],
        f"line 1: setting {RETENTION!r}: unknown field(s): max_ttl_day.",
    ),
    "thread config not an integer": (
        [_obj("thread", config={"max_message_token_length": "abc"})],
        "line 1: thread config: max_message_token_length must be an integer.",
    ),
    "thread extraction config not an object": (
        [_obj("thread", config={"memory_extraction_config": "often"})],
        "line 1: thread config: memory_extraction_config must be a JSON object.",
    ),
    "thread extraction config with a bad value": (
        [_obj("thread", config={"memory_extraction_config": {"extraction_mode": "SOMETIMES"}})],
        "line 1: thread config: Invalid extraction mode: 'SOMETIMES'",
    ),
    "thread state counter not an integer": (
        [_obj("thread", state={"memory_extraction_state": {"last_memory_extraction_counter": "abc"}})],
        "line 1: thread state: last_memory_extraction_counter must be a non-negative integer.",
    ),
    "message of another user": (
        [_obj("thread"), _obj("message", user_id="u2")],
        "line 2: a message of thread 't-1' must have the thread's user_id and agent_id ('u1', 'a1'), not ('u2', 'a1').",
    ),
    "message of another agent": (
        [_obj("thread"), _obj("message", agent_id=...)],
        "line 2: a message of thread 't-1' must have the thread's user_id and agent_id ('u1', 'a1'), not ('u1', None).",
    ),
    "memory of another user than its thread": (
        [_obj("thread"), _obj("memory", thread_id="t-1", user_id="u2", agent_id="a1")],
        "line 2: a memory of thread 't-1' must have the thread's user_id and agent_id ('u1', 'a1'), not ('u2', 'a1').",
    ),
    "summary of another user": (
        [_obj("thread"), _obj("summary", user_id="u2")],
        "line 2: a summary of thread 't-1' must have the thread's user_id and agent_id ('u1', 'a1'), not ('u2', 'a1').",
    ),
    "a pair linked both ways": (
        [
            _obj("memory"),
            _obj("memory", id="m-2"),
            _obj("link"),
            _obj("link", id="l-2", source_id="m-1", target_id="m-2", relation_type="supersedes",
                 opposite_relation_type="is_superseded_by"),
        ],
        (
            "line 4: 'm-1' and 'm-2' are already linked as 'm-2' → 'm-1' (supports); "
            "a pair of records is linked in one orientation only."
        ),
    ),
    "a built-in link with another opposite": (
        [_obj("memory"), _obj("memory", id="m-2"), _obj("link", opposite_relation_type="is_helped_by")],
        "line 3: a 'supports' link's opposite_relation_type is 'is_supported_by', not 'is_helped_by'.",
    ),
    "a link whose endpoint type differs from its record": (
        [_obj("memory"), _obj("memory", id="m-2"), _obj("link", target_type="guideline")],
        "line 3: target_type is 'guideline' but memory record 'm-1' is a fact.",
    ),
    "a self-link": (
        [_obj("memory"), _obj("link", source_id="m-1")],
        "line 2: A memory cannot be linked to itself.",
    ),
    "a time that overflows UTC": (
        [_obj("memory", created_at="0001-01-01T00:00:00+01:00")],
        "line 1: created_at is out of the representable range in UTC: '0001-01-01T00:00:00+01:00'.",
    ),
    "a time past 9999 in UTC": (
        [_obj("memory", timestamp="9999-12-31T23:59:59-12:00")],
        "line 1: timestamp is out of the representable range in UTC",
    ),
    "a seq of 2**63": (
        [_obj("thread"), _obj("message", seq=2**63)],
        "line 2: message seq must be a positive integer below 2**63.",
    ),
    "a revision of 2**63": (
        [_obj("thread"), _obj("summary", revision=2**63)],
        "line 2: summary revision must be a positive integer below 2**63.",
    ),
    "a covered seq of 2**64": (
        [_obj("thread"), _obj("summary", covered_through_seq=2**64)],
        "line 2: covered_through_seq must be a non-negative integer below 2**63.",
    ),
    "100k-deep JSON": ([_deep_json(100_000)], "line 1: not valid JSON (nested too deeply)."),
    "an integer of 5000 digits": (
        ['{"kind": "memory", "metadata": {"n": 1' + "0" * 4999 + "}}"],
        "line 1: not valid JSON (an integer has more than 4300 digits).",
    ),
    "NaN": (['{"kind": "memory", "metadata": {"n": NaN}}'], "line 1: not valid JSON (NaN is not a JSON value)."),
    "metadata too deep": ([_obj("memory", metadata={"a": json.loads(_deep_json(40))})], "line 1: metadata is nested"),
    "a surrogate in a summary": (
        [_obj("thread"), _obj("summary", text="\ud800")],
        "line 2: summary text must be valid Unicode text",
    ),
}


@pytest.mark.parametrize(("lines", "expected"), list(HOSTILE_LINES.values()), ids=list(HOSTILE_LINES))
def test_a_line_the_api_would_refuse_is_a_one_line_error_and_writes_nothing(
    invoke: Invoke, tmp_path: Path, lines: list[str], expected: str
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    target = tmp_path / "new.db"
    result = invoke("--store", str(target), "--embedder", "none", "import", str(source))
    assert result.exit_code == 1, result.output
    assert one_line_error(result.stderr).startswith(f"error: {source}, {expected}")
    assert not target.exists()


def test_an_import_error_is_typed_and_names_its_line() -> None:
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.transfer import import_items, read_items
    from palimpsest.domain.errors import InvalidImportError, ValidationError

    with pytest.raises(InvalidImportError) as decoded:
        read_items([_obj("thread"), "", _deep_json(100_000)], source="dump.jsonl")
    assert decoded.value.line == 3 and isinstance(decoded.value, ValidationError)
    assert str(decoded.value) == "dump.jsonl, line 3: not valid JSON (nested too deeply)."

    items = read_items([_obj("thread"), _obj("thread")])
    with InMemoryStore() as store:
        with pytest.raises(InvalidImportError) as written:
            import_items(store, items)
        assert written.value.line == 2
        assert str(written.value) == "line 2: A thread with id 't-1' already exists."
        with store.unit_of_work() as uow:
            assert uow.threads.list(limit=None) == []


def test_imported_statuses_are_derived_from_the_links_never_taken_as_given(
    invoke: Invoke, tmp_path: Path
) -> None:
    from palimpsest.application.transfer import read_items

    from .helpers import EVERYTHING

    later = "2025-02-01T00:00:00+00:00"
    lines = [
        _obj("memory", id="m-old", content="Lives in Paris."),  # claims valid, but is superseded below
        _obj("memory", id="m-new", content="Lives in Rome."),
        _obj(  # claims invalid, but nothing retires it
            "memory",
            id="m-lone",
            content="Likes tea.",
            status="invalid",
            invalidation_reason="Superseded by another memory.",
            invalidated_at=T,
        ),
        _obj(  # invalid with a wrong reason: the earliest lifecycle link gives it
            "memory",
            id="m-dup",
            content="Lives in Rome!",
            status="invalid",
            invalidation_reason="Superseded by another memory.",
            invalidated_at=later,
            updated_at=later,
        ),
        _obj("memory", id="m-kept", content="Lived in Oslo.", status="invalid",
             invalidation_reason="Refined by another memory.", invalidated_at=later, updated_at=later),
        _obj("link", id="l-1", source_id="m-new", target_id="m-old", relation_type="supersedes",
             opposite_relation_type="is_superseded_by"),
        _obj("link", id="l-2", source_id="m-new", target_id="m-dup", relation_type="duplicates",
             opposite_relation_type="duplicates"),
        _obj("link", id="l-3", source_id="m-new", target_id="m-kept", relation_type="refines",
             opposite_relation_type="is_refined_by", created_at=later),
    ]
    source = tmp_path / "statuses.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "new.db"
    result = invoke("--store", str(target), "--embedder", "none", "import", str(source))
    assert result.exit_code == 0, result.output

    with build_client(path=target) as memory, memory.store.unit_of_work() as uow:
        records = {r.id: r for r in uow.records.list(now=EVERYTHING, limit=None)}
        links = uow.links.list(limit=None)
    retired = {link.target_id for link in links if link.relation_type in ("supersedes", "refines", "duplicates")}
    assert {i for i, r in records.items() if not r.is_valid} == retired == {"m-old", "m-dup", "m-kept"}
    lone, old, dup, kept = records["m-lone"], records["m-old"], records["m-dup"], records["m-kept"]
    assert (lone.invalidation_reason, lone.invalidated_at) == (None, None)
    assert old.invalidation_reason == "Superseded by another memory." and old.invalidated_at is not None
    assert old.invalidated_at > datetime.fromisoformat(later)  # derived at import time
    assert dup.invalidation_reason == "Duplicated by another memory."
    assert dup.invalidated_at == datetime.fromisoformat(later)  # still invalid: since when is kept
    assert kept == read_items(lines)[4].value  # a consistent record is written exactly as it came


def test_an_imported_link_is_checked_against_the_links_already_stored() -> None:
    from datetime import UTC, datetime

    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.transfer import import_items, read_items
    from palimpsest.domain.errors import InvalidImportError
    from palimpsest.domain.model import MemoryRecord, RecordLink

    when = datetime(2025, 1, 1, tzinfo=UTC)
    with InMemoryStore() as store:
        with store.unit_of_work() as uow:
            for record_id in ("m-1", "m-2"):
                uow.records.add(
                    MemoryRecord(id=record_id, record_type="fact", content="x", created_at=when, updated_at=when)
                )
            uow.links.add(
                RecordLink(
                    id="l-0",
                    source_id="m-2",
                    source_type="fact",
                    target_id="m-1",
                    target_type="fact",
                    relation_type="supports",
                    opposite_relation_type="is_supported_by",
                    created_at=when,
                )
            )
            uow.commit()
        reversed_link = _obj("link", source_id="m-1", target_id="m-2", relation_type="supersedes",
                             opposite_relation_type="is_superseded_by")
        items = read_items([_obj("memory", id="m-3"), reversed_link])
        with pytest.raises(InvalidImportError, match="line 2: 'm-1' and 'm-2' are already linked"):
            import_items(store, items)
        with store.unit_of_work() as uow:
            assert [r.id for r in uow.records.list(now=when, limit=None)] == ["m-1", "m-2"]
            assert [link.id for link in uow.links.list(limit=None)] == ["l-0"]
            assert all(r.is_valid for r in uow.records.list(now=when, limit=None))


def test_an_imported_lifecycle_link_retires_a_record_already_stored() -> None:
    from datetime import UTC, datetime, timedelta

    from palimpsest.adapters.inmemory import InMemoryStore, ManualClock
    from palimpsest.application.transfer import import_items, read_items
    from palimpsest.domain.model import MemoryRecord

    when = datetime(2025, 1, 1, tzinfo=UTC)
    now = datetime(2025, 3, 1, tzinfo=UTC)
    with InMemoryStore() as store:
        with store.unit_of_work() as uow:
            uow.records.add(MemoryRecord(id="m-1", record_type="fact", content="x", user_id="u1",
                                         created_at=when, updated_at=when))
            uow.commit()
        items = read_items([_obj("memory", id="m-2"), _obj("link", relation_type="supersedes",
                                                            opposite_relation_type="is_superseded_by")])
        import_items(store, items, clock=ManualClock(now, tick=timedelta(0)))
        with store.unit_of_work() as uow:
            old = uow.records.get("m-1")
        assert old is not None and not old.is_valid
        assert (old.invalidation_reason, old.invalidated_at, old.updated_at) == ("Superseded by another memory.", now, now)


# --- the promise, generated: an import writes a store that keeps every invariant, or nothing --------

_HOSTILE_VALUES: list[object] = [
    None, "", " ", "abc", "\ud800", "x" * 200, -1, 0, 1, 2**63, 10**30, 1.5, True, [], ["a"], {}, {"a": 1},
    "valid", "invalid", "supersedes", "duplicates", "supports", "fact", "guideline",
    "t-1", "t-2", "u1", "u2", "a1", "m-thin", "m-sour", "f-lyon", "g-polite",
    "2025-06-01T09:00:00+00:00", "2025-06-01T09:00:00", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-12:00",
    {"max_message_token_length": "abc"}, {"memory_extraction_config": "often"},
    {"memory_extraction_state": {"last_memory_extraction_counter": -1}},
    {"default_ttl_days": -1}, {"default_ttl_days": 2, "max_ttl_days": 1}, {"default_ttl_days": None},
]


def _check_invariants(store: object) -> None:
    """What every store written through the API holds."""
    from palimpsest.application.config import stored_thread_settings
    from palimpsest.domain.links import derive_status
    from palimpsest.domain.model import RecordStatus

    from .helpers import EVERYTHING

    build_client(store=store).close()  # its settings read back  # type: ignore[arg-type]
    with store.unit_of_work() as uow:  # type: ignore[attr-defined]
        threads = {t.id: t for t in uow.threads.list(limit=None)}
        records = {r.id: r for r in uow.records.list(now=EVERYTHING, limit=None)}
        links = uow.links.list(limit=None)
        rows = [m for t in threads for m in uow.messages.list_for_thread(t, now=EVERYTHING)]
        rows += [s for t in threads for s in uow.summaries.list_for_thread(t)]
    for thread in threads.values():
        stored_thread_settings(thread)
    rows += [r for r in records.values() if r.thread_id is not None]
    for row in rows:
        thread = threads[row.thread_id]
        assert (row.user_id, row.agent_id) == (thread.user_id, thread.agent_id), row
    pairs = set()
    for link in links:
        assert link.source_id != link.target_id
        assert (link.target_id, link.source_id) not in pairs, link
        pairs.add((link.source_id, link.target_id))
        assert (link.source_type, link.target_type) == (records[link.source_id].record_type, records[link.target_id].record_type)
    for record in records.values():
        derived, _ = derive_status(record, [l for l in links if record.id in (l.source_id, l.target_id)], EVERYTHING)
        assert derived.status is record.status, record
        assert (record.status is RecordStatus.INVALID) == (record.invalidated_at is not None), record


def test_an_import_of_a_damaged_export_keeps_every_invariant_or_writes_nothing(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from palimpsest.adapters.inmemory import InMemoryStore
    from palimpsest.application.transfer import import_items, read_items
    from palimpsest.domain.errors import InvalidImportError

    from .helpers import EVERYTHING

    lines = _export(invoke, seeded.path, tmp_path / "dump.jsonl").splitlines()
    objects = [json.loads(line) for line in lines]

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def damaged(data: st.DataObject) -> None:
        edited = [dict(obj) for obj in objects]
        for _ in range(data.draw(st.integers(1, 3))):
            action = data.draw(st.sampled_from(["set", "set", "set", "drop", "copy"]))
            index = data.draw(st.integers(0, len(edited) - 1))
            if action == "drop":
                del edited[index]
            elif action == "copy":
                edited.append(dict(edited[index]))
            else:
                field = data.draw(st.sampled_from(sorted(set(edited[index]) - {"kind"})))
                edited[index][field] = data.draw(st.sampled_from(_HOSTILE_VALUES))
        text = [json.dumps(obj) for obj in edited]
        with InMemoryStore() as store:
            try:
                import_items(store, read_items(text))
            except InvalidImportError as error:
                assert error.line is not None and f"line {error.line}: " in str(error)
                with store.unit_of_work() as uow:
                    assert uow.threads.list(limit=None) == [] and uow.records.list(now=EVERYTHING, limit=None) == []
            else:
                _check_invariants(store)

    damaged()
