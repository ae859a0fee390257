"""threads, messages and memories: filters, limits, JSON, statuses, and untrusted text shown as text."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import HOSTILE, Invoke, Seeded
from .helpers import one_line_error


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_threads_lists_every_thread_with_its_message_count(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "threads")
    assert result.exit_code == 0, result.output
    assert "2 thread(s)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if seeded.thread in line)
    assert "u1" in row and "a1" in row and " 3 " in row
    row = next(line for line in result.stdout.splitlines() if seeded.other_thread in line)
    assert "u2" in row and " 1 " in row


def test_threads_filters_by_user_and_agent_and_keeps_the_newest(invoke: Invoke, seeded: Seeded) -> None:
    by_user = invoke("--store", seeded.store, "threads", "--user", "u2", "--json")
    assert [t["id"] for t in _json_lines(by_user.stdout)] == [seeded.other_thread]
    by_agent = invoke("--store", seeded.store, "threads", "--agent", "a1", "--json")
    assert [t["id"] for t in _json_lines(by_agent.stdout)] == [seeded.thread]
    newest = invoke("--store", seeded.store, "threads", "--limit", "1", "--json")
    assert [t["id"] for t in _json_lines(newest.stdout)] == [seeded.other_thread]
    everything = _json_lines(invoke("--store", seeded.store, "threads", "--json").stdout)
    assert [t["id"] for t in everything] == [seeded.thread, seeded.other_thread]
    assert everything[0]["metadata"] == {"topic": "food"} and everything[0]["kind"] == "thread"
    none = invoke("--store", seeded.store, "threads", "--user", "nobody")
    assert none.exit_code == 0 and "0 thread(s)" in none.stdout


def test_messages_shows_a_transcript_and_the_last_n(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "messages", seeded.thread)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "3 message(s)" in out
    assert out.index("I live in Lyon") < out.index("Noted: Lyon") < out.index("sourdough pizza place")
    assert "#1" in out and "assistant" in out
    last = _json_lines(
        invoke("--store", seeded.store, "messages", seeded.thread, "--last", "2", "--json").stdout
    )
    assert [m["seq"] for m in last] == [2, 3]
    assert last[-1]["content"] == "Find me a sourdough pizza place for Friday."
    every = _json_lines(
        invoke("--store", seeded.store, "messages", seeded.thread, "--last", "0", "--json").stdout
    )
    assert [m["seq"] for m in every] == [1, 2, 3]


def test_messages_of_an_unknown_thread_is_a_one_line_error(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "messages", "no-such-thread")
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == "error: No thread found with id 'no-such-thread'."
    assert result.stdout == ""


def test_memories_shows_status_and_filters(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "memories")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "5 memory record(s)" in out  # the expired one is hidden
    thin_line = next(line for line in out.splitlines() if line.startswith(seeded.thin))
    sour_line = next(line for line in out.splitlines() if line.startswith(seeded.sourdough))
    assert "invalid" in thin_line and "preference" in thin_line
    assert "valid" in sour_line and "invalid" not in sour_line
    assert "Superseded by another memory." in out

    def ids(*options: str) -> list[str]:
        found = _json_lines(invoke("--store", seeded.store, "memories", "--json", *options).stdout)
        return [str(r["id"]) for r in found]

    assert ids("--user", "u1") == [seeded.thin, seeded.sourdough, seeded.lyon]
    assert ids("--agent", "a1") == [seeded.lyon, seeded.guideline]
    assert ids("--thread", seeded.thread) == [seeded.lyon]
    assert ids("--type", "fact", "--type", "guideline") == [seeded.lyon, seeded.guideline]
    assert ids("--status", "invalid") == [seeded.thin]
    assert ids("--status", "valid", "--limit", "2") == [seeded.guideline, seeded.hostile]
    assert ids("--limit", "1") == [seeded.hostile]


def test_untrusted_text_is_printed_as_text_never_as_markup_or_escapes(invoke: Invoke, seeded: Seeded) -> None:
    memories = invoke("--store", seeded.store, "memories", "--user", "u2").stdout
    messages = invoke("--store", seeded.store, "messages", seeded.other_thread).stdout
    for out in (memories, messages):
        assert "[bold red]not markup[/bold red]" in out
        assert "\x1b" not in out
        assert "\\x1b[31mESC\\x1b[0m" in out
    exact = _json_lines(invoke("--store", seeded.store, "memories", "--user", "u2", "--json").stdout)
    assert exact[-1]["content"] == HOSTILE  # JSON keeps the exact text, escaped by JSON itself


def test_listing_a_missing_store_file_does_not_create_it(invoke: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    for command in (
        ["threads"],
        ["memories"],
        ["messages", "t"],
        ["search", "x", "--user", "u"],
        ["card", "t"],
        ["export", str(tmp_path / "out.jsonl")],
        ["reembed"],
        ["link", "a", "b", "--type", "supports"],
        ["unlink", "l"],
        ["graph"],
    ):
        result = invoke("--store", str(missing), *command)
        assert result.exit_code == 1, command
        assert "no store file at" in one_line_error(result.stderr)
    assert not missing.exists()
