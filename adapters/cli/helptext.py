"""Adapters layer (command line): how ``--help`` is laid out.

Plain text, as a terminal shows it: a flag is shown without a value (never ``<bool>``), text is
wrapped between words only (never inside a word, a flag or a URL, never at a hyphen), a
command's summary in a listing is its whole first sentence, and commands and global options
are grouped under their panels ("Start here", "Deprecated options"...). The layout itself is
click's (typer's copy of it); this module only replaces its wrapping and its grouping.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import typer

# typer ships its own copy of click; its formatter is the one every help page is written with.
from typer._click.formatting import HelpFormatter, measure_table

__all__ = ["HelpContext", "format_grouped_commands", "format_grouped_options", "wrap"]

_WHOLE_SENTENCE = 10_000
"""A summary limit no first sentence reaches: click cuts a summary short with "..." otherwise."""


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` wrapped to ``width`` between words only, paragraphs (blank lines) kept."""
    lines: list[str] = []
    for number, paragraph in enumerate(p for p in text.split("\n\n") if p.strip()):
        if number:
            lines.append("")
        lines.extend(
            textwrap.wrap(
                " ".join(paragraph.split()),
                width=max(width, 10),
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return lines


class _Formatter(HelpFormatter):
    """click's formatter, wrapping between words only."""

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        for line in wrap(text, self.width, indent):
            self.write(f"{line}\n" if line else "\n")

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(measure_table(rows)[0], col_max) + col_spacing
        for first, second in rows:
            self.write(f"{'':>{self.current_indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - len(first)))
            else:
                self.write("\n" + " " * (first_col + self.current_indent))
            lines = wrap(second, self.width - first_col - 2) or [""]
            self.write(f"{lines[0]}\n")
            for line in lines[1:]:
                self.write(f"{'':>{first_col + self.current_indent}}{line}\n" if line else "\n")


class HelpContext(typer.Context):
    """The context of every command of the application: its help uses :class:`_Formatter`."""

    formatter_class = _Formatter


def _panels(items: Sequence[tuple[str | None, Any]], default: str) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for panel, item in items:
        grouped.setdefault(panel or default, []).append(item)
    if default in grouped:  # the unnamed panel first, as typer shows it
        grouped = {default: grouped.pop(default), **grouped}
    return grouped


def format_grouped_options(command: Any, ctx: typer.Context, formatter: HelpFormatter) -> None:
    """Arguments, then options grouped by their ``rich_help_panel`` ("Options" when none)."""
    arguments, options = [], []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        if param.param_type_name == "argument":
            arguments.append(record)
        else:
            options.append((getattr(param, "rich_help_panel", None), record))
    if arguments:
        with formatter.section("Arguments"):
            formatter.write_dl(arguments)
    for panel, records in _panels(options, "Options").items():
        with formatter.section(panel):
            formatter.write_dl(records)


def format_grouped_commands(group: Any, ctx: typer.Context, formatter: HelpFormatter) -> None:
    """Subcommands grouped by their ``rich_help_panel``, each with its whole first sentence."""
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        summary = command.get_short_help_str(limit=_WHOLE_SENTENCE)
        rows.append((getattr(command, "rich_help_panel", None), (name, summary)))
    for panel, records in _panels(rows, "Commands").items():
        with formatter.section(panel):
            formatter.write_dl(records)
