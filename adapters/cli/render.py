"""Adapters layer (command line): how records look in a terminal (rich tables and trees).

Everything stored is untrusted text: it reaches rich only as :class:`rich.text.Text` (never
parsed as markup), with control characters made visible, so a memory cannot restyle the
terminal, fake output lines with carriage returns, or send escape sequences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from palimpsest.application import SearchResult
from palimpsest.domain.model import MemoryRecord, Message, RecordStatus, Thread
from palimpsest.domain.search import LinkedRecord
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

__all__ = [
    "clean",
    "memories_view",
    "messages_view",
    "plain",
    "search_tree",
    "short_time",
    "threads_table",
]

_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PREVIEW_CHARS: Final = 400


def clean(text: object) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def plain(text: object, style: str = "") -> Text:
    """Untrusted text as a rich ``Text`` (no markup, no highlighting), control characters shown."""
    return Text(clean(text), style=style)


def short_time(value: datetime | None) -> str:
    """``2026-01-02 10:30:00`` (UTC, to the second); ``-`` for none."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _scope(value: str | None) -> Text:
    return plain(value) if value is not None else Text("-", style="dim")


def _preview(text: str) -> str:
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _status(status: RecordStatus) -> Text:
    return Text(status.value, style="green" if status is RecordStatus.VALID else "red")


def threads_table(threads: Sequence[Thread], counts: dict[str, int]) -> Table:
    table = Table(title=f"{len(threads)} thread(s)", title_justify="left", expand=False)
    table.add_column("thread id", no_wrap=True)
    table.add_column("user")
    table.add_column("agent")
    table.add_column("messages", justify="right", min_width=8)
    table.add_column("created (UTC)", min_width=10)
    table.add_column("updated (UTC)", min_width=10)
    for thread in threads:
        table.add_row(
            plain(thread.id),
            _scope(thread.user_id),
            _scope(thread.agent_id),
            Text(str(counts.get(thread.id, 0))),
            Text(short_time(thread.created_at)),
            Text(short_time(thread.updated_at)),
        )
    return table


def _block(header: Text, body: Text, extra: Text | None = None) -> Group:
    parts: list[Any] = [header, Padding(body, (0, 0, 0, 4), expand=False)]
    if extra is not None:
        parts.append(Padding(extra, (0, 0, 0, 4), expand=False))
    return Group(*parts)


def messages_view(thread_id: str, messages: Sequence[Message]) -> Group:
    """A thread's messages as a transcript: ``#seq role time`` then the text, indented."""
    blocks: list[Any] = [
        Text.assemble("thread ", plain(thread_id, "bold"), f": {len(messages)} message(s) shown")
    ]
    for message in messages:
        header = Text.assemble(
            (f"#{message.seq}", "bold"),
            "  ",
            plain(message.role, "bold cyan"),
            (f"  {short_time(message.timestamp or message.created_at)} UTC", "dim"),
            ("  ", ""),
            plain(message.id, "dim"),
        )
        blocks.append(_block(header, plain(message.content)))
    return Group(*blocks)


def memories_view(records: Sequence[MemoryRecord]) -> Group:
    """Memory records, one block each: id, type, status, scope and time, then the text."""
    blocks: list[Any] = [Text(f"{len(records)} memory record(s)", style="bold")]
    for record in records:
        header = Text.assemble(plain(record.id, "bold"), "  ", (record.record_type.value, "cyan"), "  ")
        header.append_text(_status(record.status))
        for name, value in (
            ("user", record.user_id),
            ("agent", record.agent_id),
            ("thread", record.thread_id),
        ):
            if value is not None:
                header.append_text(Text.assemble((f"  {name} ", "dim"), plain(value)))
        header.append(f"  {short_time(record.created_at)} UTC", style="dim")
        reason = plain(record.invalidation_reason, "dim italic") if record.invalidation_reason else None
        blocks.append(_block(header, plain(_preview(record.content)), reason))
    return Group(*blocks)


def _record_label(record: MemoryRecord | Message, *, prefix: Text, score: float | None) -> Text:
    label = Text.assemble(prefix, (record.record_type.value, "cyan"), " ", plain(record.id, "dim"))
    if score is not None:
        label.append(f"  relevance {score:.3f}", style="magenta")
    if isinstance(record, MemoryRecord):
        label.append("  ")
        label.append_text(_status(record.status))
    else:
        label.append("  ")
        label.append_text(plain(record.role, "bold"))
    label.append(f"  {short_time(record.timestamp or record.created_at)} UTC", style="dim")
    label.append("\n")
    label.append_text(plain(_preview(record.content)))
    return label


def _add_linked(parent: Tree, nodes: Iterable[LinkedRecord]) -> None:
    for node in nodes:
        prefix = Text.assemble(plain(node.relation_label, "yellow"), " → ")
        branch = parent.add(_record_label(node.record, prefix=prefix, score=None))
        _add_linked(branch, node.children)


def search_tree(query: str, results: Sequence[SearchResult]) -> Tree:
    """The results, best first, each with its tree of linked records."""
    tree = Tree(Text.assemble(f"{len(results)} result(s) for ", plain(repr(query), "bold")))
    for rank, result in enumerate(results, start=1):
        branch = tree.add(
            _record_label(result.record, prefix=Text(f"{rank}. ", style="bold"), score=result.relevance)
        )
        _add_linked(branch, result.linked_records)
    return tree
