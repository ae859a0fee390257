"""Every command explains itself: ``--help`` everywhere, the demo listed first, ``--version``."""

from __future__ import annotations

import re

import pytest

from .conftest import Invoke

COMMANDS = (
    "demo",
    "threads",
    "messages",
    "memories",
    "search",
    "card",
    "graph",
    "link",
    "unlink",
    "export",
    "import",
    "reembed",
    "doctor",
    "oracle",
)


def _plain(text: str) -> str:
    """Help text with its whitespace collapsed (it is wrapped to the terminal)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_the_root_help_lists_every_command_with_the_demo_first(invoke: Invoke) -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    listed = [name for line in result.stdout.splitlines() if (name := _command_name(line))]
    assert listed[0] == "demo"
    assert set(COMMANDS) <= set(listed)
    text = _plain(result.stdout)
    for option in (
        "--store",
        "--oracle-dsn",
        "--oracle-user",
        "--oracle-password",
        "--memory-store-id",
        "--embedder",
        "--debug",
    ):
        assert option in text
    assert "PALIMPSEST_STORE" in text and "ORACLE_DSN" in text


def _command_name(line: str) -> str | None:
    match = re.match(r"^  (\w+)  ", line)
    return match.group(1) if match and match.group(1) in COMMANDS else None


def test_running_without_a_command_shows_the_help(invoke: Invoke) -> None:
    result = invoke()
    assert "Usage" in result.output and "demo" in result.output


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["demo"], ["guided demo", "--folder"]),
        (["threads"], ["List threads", "--user", "--agent", "--limit", "--json"]),
        (["messages"], ["messages", "THREAD_ID", "--last"]),
        (["memories"], ["memory records", "--user", "--agent", "--thread", "--type", "--status", "--limit"]),
        (["search"], ["Search", "QUERY", "--user", "--agent", "--thread", "--type", "-k", "--hops", "--xml"]),
        (
            ["card"],
            [
                "context card",
                "THREAD_ID",
                "--max-relevant",
                "--recent",
                "--except-last",
                "--min-type",
                "--token-budget",
                "--metadata-filter",
            ],
        ),
        (["graph"], ["graph", "--user", "--agent", "--format", "--output", "mermaid", "html", "svg"]),
        (
            ["link"],
            [
                "SOURCE_ID",
                "TARGET_ID",
                "--type",
                "supersedes",
                "refines",
                "duplicates",
                "supports",
                "contradicts",
            ],
        ),
        (["unlink"], ["Delete a link", "LINK_ID", "--type"]),
        (["export"], ["JSON Lines", "FILE", "--force"]),
        (["import"], ["JSON Lines", "FILE", "--reembed", "all or nothing"]),
        (["reembed"], ["Recompute every vector", "--allow-model-change", "--batch-size"]),
        (["doctor"], ["Check", "OK", "WARN", "FAIL"]),
        (["oracle"], ["install", "check", "upgrade", "--oracle-dsn"]),
        (["oracle", "install"], ["CREATE_IF_NECESSARY", "--dimension", "--vector-index"]),
        (["oracle", "check"], ["REQUIRE_EXISTING"]),
        (["oracle", "upgrade"], ["Upgrade"]),
    ],
)
def test_every_command_has_a_help_that_explains_it(
    invoke: Invoke, command: list[str], expected: list[str]
) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    text = _plain(result.stdout)
    for word in expected:
        assert word in text, f"{word!r} missing from 'palimpsest {' '.join(command)} --help'"


def test_help_works_without_a_store_even_when_the_options_conflict(invoke: Invoke) -> None:
    result = invoke("--store", "x.db", "--oracle-dsn", "db/free", "threads", "--help")
    assert result.exit_code == 0


def test_version(invoke: Invoke) -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("palimpsest ")
