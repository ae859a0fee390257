"""search (tree and XML, with linked records) and card (the context card XML and its options)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.model import ExtractionJob

from .conftest import START, Invoke, Seeded
from .helpers import one_line_error


def test_search_prints_hits_with_their_linked_records_as_a_tree(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke(
        "--store",
        seeded.store,
        "search",
        "sourdough pizza",
        "--user",
        "u1",
        "--hops",
        "1",
        "--type",
        "preference",
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "result(s) for 'sourdough pizza'" in out
    assert re.search(r"1\. preference m-sour .*valid", out)
    assert "supersedes → preference m-thin" in out
    assert "is_superseded_by → preference m-sour" in out  # the same link read from the other end
    assert "The user now prefers sourdough pizza." in out


def test_search_without_hops_shows_no_linked_records(invoke: Invoke, seeded: Seeded) -> None:
    out = invoke(
        "--store", seeded.store, "search", "sourdough pizza", "--user", "u1", "--type", "preference"
    ).stdout
    assert "→" not in out


def test_search_xml_is_what_prompts_get(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke(
        "--store",
        seeded.store,
        "search",
        "sourdough pizza",
        "--user",
        "u1",
        "--hops",
        "2",
        "--type",
        "preference",
        "-k",
        "1",
        "--xml",
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("<preference>\n  <record_id>m-sour</record_id>")
    assert "<relation_type>supersedes</relation_type>" in out
    assert "<status>invalid</status>" in out
    assert out.count("<preference>") == 2  # one hit (k=1) and its linked record


def test_search_scopes(invoke: Invoke, seeded: Seeded) -> None:
    def hits(*options: str) -> list[str]:
        xml = invoke("--store", seeded.store, "search", "pizza Lyon polite", *options, "--xml").stdout
        return re.findall(r"^<\w+>\n  <record_id>([^<]+)</record_id>", xml, re.MULTILINE)

    u1 = hits("--user", "u1", "--type", "fact", "--type", "preference")
    assert set(u1) == {"m-thin", "m-sour", "f-lyon"}
    assert hits("--user", "u1", "--agent", "a1", "--type", "fact") == ["f-lyon"]
    assert set(hits("--user", "u1", "--thread", "t-1")) <= {"f-lyon"} | set(_message_ids(invoke, seeded))
    assert hits("--user", "u2", "--type", "guideline") == ["g-polite"]
    assert hits("--user", "u1", "--valid-only", "--type", "preference") == ["m-sour"]
    assert hits("--no-user", "--type", "memory") == []


def _message_ids(invoke: Invoke, seeded: Seeded) -> list[str]:
    import json

    out = invoke("--store", seeded.store, "messages", seeded.thread, "--json").stdout
    return [json.loads(line)["id"] for line in out.splitlines()]


def test_search_needs_a_user_scope(invoke: Invoke, seeded: Seeded) -> None:
    for options in ([], ["--user", "u1", "--no-user"]):
        result = invoke("--store", seeded.store, "search", "pizza", *options)
        assert result.exit_code == 1
        assert "scoped to one user" in one_line_error(result.stderr)


def test_search_validation_errors_are_one_line(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "search", "   ", "--user", "u1")
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == "error: query must be a non-empty string."


def test_card_prints_the_context_card_xml(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "card", seeded.thread)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("<context_card>") and out.rstrip().endswith("</context_card>")
    assert "<summary>" in out and "<relevant_information>" in out
    assert "<recent_messages>" not in out


def test_card_options_reach_get_context_card(invoke: Invoke, seeded: Seeded) -> None:
    out = invoke(
        "--store",
        seeded.store,
        "card",
        seeded.thread,
        "--recent",
        "1",
        "--except-last",
        "1",
        "--max-relevant",
        "2",
        "--min-type",
        "fact=1",
        "--exclude-invalid",
    ).stdout
    recent = out.split("<recent_messages>", 1)[1]
    assert "Find me a sourdough pizza place for Friday." in recent
    relevant = out.split("<relevant_information>", 1)[1].split("</relevant_information>", 1)[0]
    assert "<fact>" in relevant and relevant.count("<record_id>") <= 2
    assert "thin crust" not in relevant  # invalid records excluded
    filtered = invoke(
        "--store", seeded.store, "card", seeded.thread, "--metadata-filter", '{"source": "nowhere"}'
    ).stdout
    relevant = filtered.split("<relevant_information>", 1)[1].split("</relevant_information>", 1)[0]
    assert "<record_id>" not in relevant


def test_card_errors_are_one_line(invoke: Invoke, seeded: Seeded) -> None:
    cases = [
        (["card", "nope"], "error: No thread found with id 'nope'."),
        (["card", seeded.thread, "--min-type", "fact"], "--min-type takes TYPE=COUNT"),
        (["card", seeded.thread, "--metadata-filter", "{not json"], "--metadata-filter is not valid JSON"),
        (["card", seeded.thread, "--metadata-filter", "[1]"], "--metadata-filter must be a JSON object"),
        (["card", seeded.thread, "--min-type", "planet=1"], "--min-type contains unsupported record type(s): 'planet'"),
        (["card", seeded.thread, "--recent", "2", "--except-last", "1"], "--except-last requires --recent"),
    ]
    for args, expected in cases:
        result = invoke("--store", seeded.store, *args)
        assert result.exit_code == 1, args
        assert expected in one_line_error(result.stderr)


def test_threads_of_an_extracting_client_are_read_without_extracting(invoke: Invoke, tmp_path: Path) -> None:
    """A store written with extraction on (open_memory's default): the command line reads its
    threads and builds cards, and leaves pending extraction jobs to the application's clients."""
    path = tmp_path / "extracting.db"
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        thread = memory.create_thread(thread_id="t-x", user_id="u1")
        thread.add_messages([{"role": "user", "content": "I prefer green tea in the morning."}])
        memory.wait_for_memory_extraction()
    with EmbeddedStore(path) as store, store.unit_of_work() as uow:
        uow.jobs.add(ExtractionJob(id="job-1", thread_id="t-x", first_seq=1, last_seq=1, created_at=START))
        uow.commit()
    assert invoke("--store", str(path), "messages", "t-x").exit_code == 0
    result = invoke("--store", str(path), "card", "t-x", "--recent", "1")
    assert result.exit_code == 0, result.output
    assert "green tea" in result.stdout
    with EmbeddedStore(path) as store, store.unit_of_work() as uow:
        assert [job.id for job in uow.jobs.pending(datetime.now(UTC))] == ["job-1"]
