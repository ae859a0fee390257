"""What a new user reads: help pages and errors of the command line (issue 29, item 4).

Help is read at a common terminal width (80 columns): a flag shows no value to give (never
``<bool>``), nothing is cut off or broken inside a word, a flag or a URL, and each command's
summary in the listing is its whole first sentence. Errors name the command's flags (never
the library's parameter names), the type they refuse, and the command that fixes an embedder
that does not fit the store's vectors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from typer.main import get_command

from .conftest import Invoke, Seeded
from .helpers import one_line_error


def _commands() -> Iterator[tuple[list[str], Any]]:
    """Every command path of the application (the root included) with its click command."""
    root = get_command(app)
    pending: list[tuple[list[str], Any]] = [([], root)]
    while pending:
        path, command = pending.pop(0)
        yield path, command
        if hasattr(command, "list_commands"):
            context = typer.Context(command)
            for name in command.list_commands(context):
                pending.append(([*path, name], command.get_command(context, name)))


COMMANDS = [path for path, _ in _commands()]


def _help(invoke: Invoke, path: list[str]) -> str:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "palimpsest")
def test_a_flag_is_not_shown_as_taking_a_value(invoke: Invoke, path: list[str]) -> None:
    text = _help(invoke, path)
    assert "<bool>" not in text
    for line in text.splitlines():
        assert not re.search(r"--(debug|version|help|json|force|xml|no-user|valid-only|reembed|drain)\b \S*<", line), line


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "palimpsest")
def test_help_text_is_wrapped_between_words_only(invoke: Invoke, path: list[str]) -> None:
    """Every word of the command's description and of each option's help appears whole, and
    no line is cut off with an ellipsis."""
    command = {tuple(p): c for p, c in _commands()}[tuple(path)]
    text = _help(invoke, path)
    shown = set(text.split())
    written = [command.help or ""] + [getattr(param, "help", None) or "" for param in command.params]
    for help_text in written:
        for word in help_text.split():
            assert word in shown, f"{word!r} is broken or missing in 'palimpsest {' '.join(path)} --help'"
    assert "…" not in text
    for name in ("--fallback-messages", "--include-invalid", "--soft-token-budget", "--metadata-filter"):
        if path == ["card"]:
            assert name in shown


def test_each_command_is_listed_with_its_whole_first_sentence(invoke: Invoke) -> None:
    text = " ".join(_help(invoke, []).split())
    root = get_command(app)
    context = typer.Context(root)
    for name in root.list_commands(context):
        first = " ".join((root.get_command(context, name).help or "").split("\n\n")[0].split())
        sentence = first[: first.index(". ") + 1] if ". " in first else first
        assert f"{name} {sentence}" in text
    listing = text[text.index("Start here:") :]
    assert "..." not in listing


def test_card_errors_name_the_flags_not_the_librarys_parameters(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "card", seeded.thread, "--recent", "2", "--except-last", "1")
    assert result.exit_code == 1
    error = one_line_error(result.stderr)
    assert "--except-last" in error and "--recent" in error
    assert "except_last_messages" not in error and "max_recent_messages" not in error
    result = invoke("--store", seeded.store, "card", seeded.thread, "--max-relevant", "1", "--min-type", "fact=2")
    error = one_line_error(result.stderr)
    assert "--min-type" in error and "--max-relevant" in error and "_" not in error.split(":", 1)[1]


def test_an_unsupported_type_is_named_in_its_error(invoke: Invoke, seeded: Seeded) -> None:
    result = invoke("--store", seeded.store, "card", seeded.thread, "--min-type", "planet=1")
    assert result.exit_code == 1
    error = one_line_error(result.stderr)
    assert "'planet'" in error and "fact" in error and "--min-type" in error


def test_the_library_names_an_unsupported_card_type_too() -> None:
    memory = open_memory(embedder=HashingEmbedder())
    try:
        thread = memory.create_thread(user_id="u1")
        with pytest.raises(ValueError, match=r"unsupported record type\(s\): 'planet'"):
            thread.get_context_card(min_relevant_results_by_type={"planet": 1})
    finally:
        memory.close()


def test_a_dimension_mismatch_says_which_command_to_run(invoke: Invoke, seeded: Seeded) -> None:
    """The seeded store's vectors are the hashing embedder's; MiniLM-sized vectors do not fit."""
    result = invoke("--store", seeded.store, "--embedder", "minilm", "search", "pizza", "--user", "u1")
    if "MiniLM" in result.stderr and "not" in result.stderr and "install" in result.stderr:
        pytest.skip("the MiniLM weights are not installed here")
    assert result.exit_code == 1
    error = one_line_error(result.stderr)
    assert "dimensional" in error
    assert "palimpsest --embedder minilm reembed --allow-model-change" in error
    assert "allow_embedding_model_change" not in error and "reembed()" not in error
