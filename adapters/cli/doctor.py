"""Adapters layer (command line): ``palimpsest doctor``, a health check of the installation and the store.

Each check gives OK, WARN (works, but something is missing or worth knowing) or FAIL (a command
would fail). The checks read and never write, with one exception shared by every client: an
embedded store file at the current schema version is opened to prove it opens (an older file is
only reported, since opening it would migrate it).
"""

from __future__ import annotations

import enum
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from palimpsest.application import StoreAdmin
from palimpsest.domain.errors import AgentMemoryError
from palimpsest.domain.model import JobState
from palimpsest.domain.ports import SchemaState
from rich.table import Table
from rich.text import Text

from .context import (
    DISTRIBUTION,
    CliError,
    CliSettings,
    EmbedderChoice,
    OpenedStore,
    minilm_status,
    open_store,
    resolve_embedder,
)
from .render import plain

__all__ = ["Check", "Status", "checks_table", "run_checks"]

MINIMUM_PYTHON: Final = (3, 11)

class Status(str, enum.Enum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= MINIMUM_PYTHON:
        return Check("Python", Status.OK, f"{version} ({sys.executable})")
    wanted = ".".join(map(str, MINIMUM_PYTHON))
    return Check("Python", Status.FAIL, f"{version}; palimpsest needs {wanted} or newer")


def _package() -> Check:
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return Check("palimpsest", Status.WARN, "running from source, not an installed distribution")
    return Check("palimpsest", Status.OK, f"{DISTRIBUTION} {version}")


def _schema_check(label: str, state: SchemaState | None, *, how: str = "") -> Check:
    """The verdict on an opened store's schema (which opening brought up to date or refused);
    ``how`` says how the store was checked."""
    if state is None or state.latest is None:
        return Check("store schema", Status.OK, "no versioned schema")
    if state.is_current:
        return Check("store schema", Status.OK, f"v{state.version} (current{how})")
    detail = f"{label}: schema v{state.version}, this palimpsest has v{state.latest}"
    return Check("store schema", Status.FAIL, detail)


def _store_checks(settings: CliSettings) -> tuple[list[Check], OpenedStore | None]:
    """Checks of the store itself, and the opened store (to be closed by the caller) when it opens."""
    if not settings.names_a_store:
        return [
            Check(
                "store",
                Status.WARN,
                "none configured: pass --store PATH or URL (or set PALIMPSEST_STORE)",
            )
        ], None
    try:
        location = settings.location()
    except (AgentMemoryError, CliError) as exc:
        return [Check("store", Status.FAIL, str(exc))], None
    label = location.describe()
    if location.path is not None:
        path = Path(location.path)
        if not path.exists():
            return [Check("store", Status.FAIL, f"no store file at {path}")], None
        if not path.is_file():
            return [Check("store", Status.FAIL, f"{path} is not a file")], None
        from palimpsest.adapters.embedded import read_schema_state

        try:
            state = read_schema_state(path)
        except (AgentMemoryError, OSError, ValueError) as exc:
            return [Check("store", Status.FAIL, f"{path} cannot be read as a palimpsest store: {exc}")], None
        if state.version is None:
            return [
                Check("store", Status.FAIL, f"{path} is not a palimpsest store (no schema version)")
            ], None
        if state.is_newer:
            detail = (
                f"{label}: schema v{state.version} is newer than this palimpsest (v{state.latest}); "
                "upgrade palimpsest"
            )
            return [Check("store schema", Status.FAIL, detail)], None
        if state.needs_migration:
            detail = (
                f"{label}: schema v{state.version}; it will be migrated to v{state.latest} when a client opens it"
            )
            return [Check("store schema", Status.WARN, detail)], None
    try:
        opened = open_store(settings)
    except (AgentMemoryError, CliError, OSError) as exc:
        return [Check("store", Status.FAIL, f"{label} does not open: {exc}")], None
    try:
        # A store in a database opens with REQUIRE_EXISTING, which accepts the current version only.
        how = "; checked with REQUIRE_EXISTING" if location.connection is not None else ""
        schema = _schema_check(label, opened.admin.schema_state(), how=how)
        counts = opened.admin.count_rows()
    except AgentMemoryError as exc:
        opened.close()
        return [Check("store", Status.FAIL, f"{label} opens but cannot be read: {exc}")], None
    threads, records, links = counts.threads, counts.records, counts.links
    detail = f"{label}: {threads} thread(s), {records} memory record(s), {links} link(s)"
    return [Check("store", Status.OK, detail), schema], opened


def _minilm_check() -> Check:
    available, detail = minilm_status()
    if available:
        return Check("MiniLM weights", Status.OK, f"installed at {detail}")
    return Check(
        "MiniLM weights", Status.WARN, f"not available, vector search needs another embedder: {detail}"
    )


def _describe_embedder(embedder: object) -> str:
    model = getattr(embedder, "model", None)
    if isinstance(model, str) and type(embedder).__name__ == "OpenAIEmbedder":
        return f"OpenAI-compatible model {model!r}"
    return repr(getattr(embedder, "model_id", type(embedder).__name__))


def _model_check(settings: CliSettings, admin: StoreAdmin | None) -> Check:
    name = "embedding model"
    stored = admin.embedding_model() if admin is not None else None
    try:
        embedder, note = resolve_embedder(settings.embedder, stored)
    except (AgentMemoryError, ImportError) as exc:
        return Check(name, Status.FAIL, f"--embedder {settings.embedder.value}: {exc}")
    choice = f"--embedder {settings.embedder.value}"
    if embedder is None:
        if note:
            return Check(name, Status.WARN, note)
        if settings.embedder is EmbedderChoice.NONE:
            return Check(name, Status.WARN, f"{choice}: no embedder, search is keyword-only")
        return Check(
            name, Status.WARN, "no embedder available (install the MiniLM weights): search is keyword-only"
        )
    if admin is None:
        return Check(
            name, Status.OK, f"{choice} gives {_describe_embedder(embedder)} (no store to compare with)"
        )
    if stored is None:
        return Check(
            name,
            Status.OK,
            f"the store records no model yet; {_describe_embedder(embedder)} will be recorded on first use",
        )
    configured = embedder.model_id
    if configured != stored:
        return Check(
            name,
            Status.FAIL,
            f"the store's vectors were made by {stored!r} but {choice} gives {configured!r}: commands will refuse it; "
            f"run 'palimpsest --embedder {settings.embedder.value} reembed --allow-model-change' to switch",
        )
    dimension = admin.dimension
    if dimension is not None and dimension != embedder.dimension:
        return Check(
            name,
            Status.FAIL,
            f"the store holds {dimension}-d vectors but {configured!r} makes {embedder.dimension}-d ones",
        )
    return Check(name, Status.OK, f"store and {choice} agree: {stored!r}")


def _vectors_check(admin: StoreAdmin | None) -> Check | None:
    """Messages and memories stored without their vectors (the embedder was unavailable, or an
    import without --reembed): keyword search finds them, vector search not yet. Only for a
    store that records an embedding model (in a keyword-only store no row has a vector)."""
    if admin is None or admin.embedding_model() is None:
        return None
    waiting = admin.waiting_vectors()
    if not waiting.total:
        return Check("waiting vectors", Status.OK, "every message and memory has its vector")
    return Check(
        "waiting vectors",
        Status.WARN,
        f"{waiting.messages} message(s) and {waiting.records} memory record(s) wait for their vectors "
        "(stored while the embedder was unavailable, or imported without them); keyword search finds them "
        "meanwhile. A client with the store's embedder fills them in after its next write, or with "
        "AgentMemory.embed_waiting()",
    )


def _jobs_check(admin: StoreAdmin | None) -> Check | None:
    """Jobs still to run, by state: waiting, running under a client's lease, or retrying
    after a failed attempt (with the latest attempt's reason)."""
    if admin is None:
        return None
    overview = admin.job_overview()
    if not overview.jobs:
        return Check("extraction jobs", Status.OK, "none pending")
    counts = overview.counts
    parts = [f"{counts[state]} {state.value}" for state in (JobState.PENDING, JobState.RUNNING, JobState.RETRYING)]
    detail = f"{len(overview.jobs)} to run ({', '.join(p for p in parts if not p.startswith('0 '))})"
    latest = overview.latest_retrying
    if latest is not None:
        detail += f"; latest failed attempt (thread {latest.thread_id}): {_short(latest.last_error or '')}"
    detail += (
        "; a client with an extractor runs them (the one that queued them, or the next to open the store; "
        "the command line never extracts)"
    )
    return Check("extraction jobs", Status.WARN, detail)


def _short(reason: str) -> str:
    return reason if len(reason) <= 160 else reason[:159] + "\u2026"


def _failed_jobs_check(admin: StoreAdmin) -> Check:
    failed = admin.failed_jobs()
    if not failed:
        return Check("failed extractions", Status.OK, "none")
    latest = max(failed, key=lambda job: (job.failed_at, job.id))
    reason = _short(latest.failure_reason or "")
    return Check(
        "failed extractions",
        Status.WARN,
        f"{len(failed)} job(s) failed every attempt; their messages are stored but not extracted. "
        f"Latest (thread {latest.thread_id}): {reason}. Retry with AgentMemory.retry_failed_extractions()",
    )


def _settings_check(admin: StoreAdmin) -> Check:
    """What a client reads when it opens the store (the retention policy) or one of its threads
    (config and state): a value that does not parse makes it refuse the store or the thread."""
    thread_count, problems = admin.settings_problems()
    if not problems:
        detail = f"the retention policy and {thread_count} thread(s) read back"
        return Check("store settings", Status.OK, detail)
    shown = "; ".join(problems[:3]) + (f"; {len(problems) - 3} more" if len(problems) > 3 else "")
    return Check("store settings", Status.FAIL, f"clients refuse what does not parse: {shown}")


def _openai_check(settings: CliSettings) -> Check:
    key = bool(os.environ.get("OPENAI_API_KEY"))
    base_url = os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("OPENAI_MODEL")
    if not key:
        if settings.embedder is EmbedderChoice.OPENAI:
            return Check("OpenAI environment", Status.FAIL, "--embedder openai needs OPENAI_API_KEY")
        if base_url or model:
            return Check(
                "OpenAI environment",
                Status.WARN,
                "OPENAI_BASE_URL/OPENAI_MODEL are set but OPENAI_API_KEY is not",
            )
        return Check(
            "OpenAI environment", Status.OK, "not configured (OPENAI_API_KEY unset): offline models are used"
        )
    try:
        import openai  # noqa: F401
    except ImportError:
        return Check(
            "OpenAI environment", Status.WARN, "OPENAI_API_KEY is set but the openai package is not installed"
        )
    parts = ["OPENAI_API_KEY set"]
    parts.append(f"base URL {base_url}" if base_url else "default base URL")
    parts.append(f"model {model}" if model else "OPENAI_MODEL unset")
    return Check("OpenAI environment", Status.OK, ", ".join(parts))


def run_checks(settings: CliSettings) -> list[Check]:
    """Every check, in a fixed order."""
    checks = [_python(), _package()]
    store_checks, opened = _store_checks(settings)
    checks.extend(store_checks)
    admin = opened.admin if opened is not None else None
    try:
        checks.append(_minilm_check())
        checks.append(_model_check(settings, admin))
        vectors = _vectors_check(admin)
        if vectors is not None:
            checks.append(vectors)
        jobs = _jobs_check(admin)
        if jobs is not None:
            checks.append(jobs)
        if admin is not None:
            checks.append(_failed_jobs_check(admin))
            checks.append(_settings_check(admin))
    finally:
        if opened is not None:
            opened.close()
    checks.append(_openai_check(settings))
    return checks


_STYLES: Final = {Status.OK: "bold green", Status.WARN: "bold yellow", Status.FAIL: "bold red"}


def checks_table(checks: list[Check]) -> Table:
    table = Table(title="palimpsest doctor", title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for check in checks:
        table.add_row(
            Text(check.name), Text(check.status.value, style=_STYLES[check.status]), plain(check.detail)
        )
    return table
