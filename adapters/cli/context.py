"""Adapters layer (command line): where a command's client comes from (store, embedder, options).

The global options of ``palimpsest`` become one :class:`CliSettings`; :func:`open_session` turns
them into a ready :class:`Session`, built by the composition root
(:mod:`palimpsest.adapters.bootstrap`) with ``profile="inspect"``: the store (``--store`` is a
path, ``:memory:`` or a URL, parsed by the library's own
:func:`~palimpsest.adapters.backends.parse_store_location`, which picks the row of
:data:`~palimpsest.adapters.backends.BACKENDS`), the embedder chosen by ``--embedder``, and an
``AgentMemory`` over both. The root owns the store and its pool and closes them.

``--oracle-dsn``, ``--oracle-user`` and ``--oracle-password`` are the deprecated spelling of
``--store oracle://...``: they build the library's old ``OracleSettings``, hence the same
location.

The command line's client is deliberately passive: it has no extractor and no link resolver,
so opening a store never starts extraction work or links memories by itself (pending
extraction jobs stay for the application's own clients, and ``palimpsest doctor`` reports
them). It has the offline TextRank summariser, so context cards carry a summary.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from palimpsest.adapters.backends import OracleSettings, StoreLocation, parse_store_location
from palimpsest.adapters.bootstrap import NO_EXTRACTION, Container, build_container, open_client, open_worker
from palimpsest.adapters.embedder_choice import (
    DEFAULT_OPENAI_EMBEDDING_MODEL,
    EmbedderChoice,
    minilm_status,
    resolve_embedder,
    stored_model_id,
)
from palimpsest.application import AgentMemory, Embedder, ExtractionRunsIn, StoreAdmin
from palimpsest.application.jobs import ExtractionWorker, JobOutcome
from palimpsest.domain.errors import AgentMemoryError, EmbeddingMismatchError, SchemaVersionError

if TYPE_CHECKING:
    from palimpsest.adapters.http.serve import ServeSettings

__all__ = [
    "DEFAULT_OPENAI_EMBEDDING_MODEL",
    "DISTRIBUTION",
    "NO_EXTRACTION",
    "CliError",
    "CliSettings",
    "EmbedderChoice",
    "OpenedStore",
    "Session",
    "StoreLocation",
    "minilm_status",
    "open_session",
    "open_store",
    "open_worker_session",
    "resolve_embedder",
    "server_settings",
    "stored_model_id",
]

DISTRIBUTION: Final = "palimpsest-memory"
"""The name pip installs palimpsest under (free on PyPI; ``palimpsest`` there is another project).
The import namespace stays ``palimpsest``; every install hint names this distribution."""

_SCHEMA_HINT: Final = "palimpsest oracle install creates the store; palimpsest oracle upgrade upgrades it"

NO_STORE_MESSAGE: Final = (
    "no store given: pass --store PATH or URL (or set PALIMPSEST_STORE), e.g. --store memory.db or "
    "--store postgresql://USER@HOST:PORT/DATABASE."
)


class CliError(Exception):
    """A mistake the command line itself detects (a missing option, a missing file...).

    Printed as one line, like the library's own errors."""


@dataclass(frozen=True, slots=True)
class CliSettings:
    """The global options, as given on the command line or in the environment.

    ``store`` is what ``--store`` (or ``--dsn``) names: a path, ``:memory:`` or a URL. The
    ``oracle_*`` fields are the deprecated options that spell an Oracle URL in parts."""

    store: str | os.PathLike[str] | None = None
    oracle_dsn: str | None = None
    oracle_user: str | None = None
    oracle_password: str | None = field(default=None, repr=False)
    memory_store_id: str | None = None
    embedder: EmbedderChoice = EmbedderChoice.AUTO
    debug: bool = False

    @property
    def names_a_store(self) -> bool:
        """Whether a store is given at all (by --store or the deprecated --oracle-dsn)."""
        return self.store is not None or self.oracle_dsn is not None

    def describe_store(self) -> str:
        """A short human name for the configured store (no credentials)."""
        if not self.names_a_store:
            return "no store"
        try:
            return self.location().describe()
        except (AgentMemoryError, CliError):
            return "a store location that does not parse"  # never the text itself: it may hold a password

    def check(self) -> None:
        """Refuse contradictory global options."""
        if self.store is not None and self.oracle_dsn is not None:
            raise CliError("give either --store or the deprecated --oracle-dsn, not both.")

    def location(self) -> StoreLocation:
        """Where the store is, through the library's own parsing; ``CliError`` when no store is
        given, ``ConfigurationError`` for a location that does not parse."""
        self.check()
        if self.oracle_dsn is not None:
            location = parse_store_location(self._deprecated_oracle_settings())
        elif self.store is None:
            raise CliError(NO_STORE_MESSAGE)
        else:
            location = parse_store_location(self.store)
        if location.path is not None:
            location = replace(location, path=os.path.expanduser(location.path))
        if self.memory_store_id is None:
            return location
        if location.connection is None:
            raise CliError(
                f"--memory-store-id applies to stores in a database (a URL), not to {location.describe()}."
            )
        named = location.connection.memory_store_id
        if named is not None and named != self.memory_store_id:
            raise CliError(f"--memory-store-id {self.memory_store_id!r} and the URL's memory_store_id {named!r} differ.")
        return replace(location, connection=replace(location.connection, memory_store_id=self.memory_store_id))

    def for_other_processes(self) -> tuple[str, str | None]:
        """The store as other processes are told of it (``serve http``'s): a file's path made
        absolute, or the URL given, with ``--memory-store-id``; ``CliError`` for the deprecated
        ``--oracle-dsn`` spelling."""
        if self.oracle_dsn is not None:
            raise CliError("serve takes its store as --store oracle://USER@HOST:PORT/SERVICE, not --oracle-dsn.")
        location = self.location()
        if location.path is not None:  # the processes may start elsewhere
            return str(Path(location.path).resolve()), None
        return str(self.store), self.memory_store_id

    def _deprecated_oracle_settings(self) -> OracleSettings:
        """``--oracle-dsn/--oracle-user/--oracle-password``: the old spelling of ``--store oracle://...``."""
        assert self.oracle_dsn is not None
        if not self.oracle_user:
            raise CliError("Oracle needs a user: pass --oracle-user (or set ORACLE_USER).")
        if self.oracle_password is None:
            raise CliError("Oracle needs a password: pass --oracle-password (or set ORACLE_PASSWORD).")
        return OracleSettings(self.oracle_dsn, self.oracle_user, self.oracle_password)


# --- stores ------------------------------------------------------------------------------------


def _root(settings: CliSettings, *, create: bool, role: dict[str, Any] | None = None) -> Container:
    """The composition root configured from the global options (nothing opened yet), for the
    passive "inspect" profile unless ``role`` gives the profile and its options.

    Without ``create`` a store file must already exist and a store in a database must already
    be installed (``palimpsest oracle install``)."""
    location = settings.location()
    if location.path is not None:
        path = Path(location.path)
        if path.is_dir():
            raise CliError(f"{path} is a folder, not a store file.")
        if not create and not path.exists():
            raise CliError(
                f"no store file at {path} (import data with 'palimpsest import', or create one with open_memory)."
            )
        # a missing folder is created by the store itself when opened
    if not create:
        location = location.requiring_existing()
    return build_container(location, **(role or _inspect(settings)))


def _inspect(settings: CliSettings) -> dict[str, Any]:
    return {"profile": "inspect", "embedder_choice": settings.embedder}


@contextmanager
def _schema_hint() -> Iterator[None]:
    """A store whose schema does not fit says how to install or upgrade it."""
    try:
        yield
    except SchemaVersionError as exc:
        raise SchemaVersionError(f"{exc} ({_SCHEMA_HINT})") from exc


@contextmanager
def _embedding_hint(settings: CliSettings) -> Iterator[None]:
    """An embedder that does not fit the store's vectors says which command replaces them."""
    try:
        yield
    except EmbeddingMismatchError as exc:
        choice = settings.embedder.value
        raise CliError(
            f"{exc.problem}. Run 'palimpsest --embedder {choice} reembed --allow-model-change' to replace "
            "the store's vectors with this embedder's, or choose the embedder that made them with --embedder."
        ) from exc


@dataclass
class OpenedStore:
    """An open store's administration, without a client; ``close`` closes the store and the
    pool under it, if any (the root's resources)."""

    admin: StoreAdmin
    _shutdown: Callable[[], object] = field(repr=False)

    def close(self) -> None:
        self._shutdown()


def open_store(settings: CliSettings, *, create: bool = False) -> OpenedStore:
    """Open the configured store alone, without a client (export, doctor): the composition
    root's :class:`~palimpsest.application.StoreAdmin` over it."""
    root = _root(settings, create=create)
    try:
        with _schema_hint():
            admin = root.admin()
    except BaseException:
        root.shutdown_resources()
        raise
    return OpenedStore(admin, root.shutdown_resources)


@dataclass
class Session:
    """What a command works with: the client, its embedder, and a note for the user. Listings,
    lookups and transfers go through ``memory.admin``, on the client's clock."""

    memory: AgentMemory
    embedder: Embedder | None
    settings: CliSettings
    note: str | None = None

    @property
    def admin(self) -> StoreAdmin:
        return self.memory.admin


@contextmanager
def open_session(
    settings: CliSettings, *, create: bool = False, allow_model_change: bool = False
) -> Iterator[Session]:
    """A client on the configured store from the composition root, closed (with its store and
    pool) on exit."""
    root = _root(settings, create=create)
    with _schema_hint(), _embedding_hint(settings):
        memory = open_client(root, allow_embedding_model_change=allow_model_change)
    try:
        chosen = root.store_embedder()
        yield Session(memory, chosen.embedder, settings, chosen.note)
    finally:
        memory.close()


@contextmanager
def open_serving_session(settings: CliSettings, *, create: bool = False) -> Iterator[Session]:
    """A server's client on the configured store (``serve mcp``): the composition root's
    "serve" profile with extraction left to workers, so every append records its extraction
    job for ``palimpsest worker`` (the passive "inspect" client records none)."""
    role = {"profile": "serve", "embedder_choice": settings.embedder, "overrides": {"extractor": None}}
    root = _root(settings, create=create, role=role)
    with _schema_hint(), _embedding_hint(settings):
        memory = open_client(root, extraction_runs_in=ExtractionRunsIn.WORKERS)
    try:
        chosen = root.store_embedder()
        yield Session(memory, chosen.embedder, settings, chosen.note)
    finally:
        memory.close()


@contextmanager
def open_worker_session(
    settings: CliSettings,
    *,
    extractor: str,
    threads: int,
    poll_seconds: float,
    lease_seconds: float | None,
    on_outcome: Callable[[JobOutcome], None],
    backfill_seconds: float = 60.0,
) -> Iterator[ExtractionWorker]:
    """An extraction worker on the configured store (which must exist), from the composition
    root's "worker" profile: the embedder that follows the store (``--embedder``) and the
    ``extractor`` named; the store (and pool) are closed on exit."""
    role = {"profile": "worker", "embedder_choice": settings.embedder, "extractor_choice": extractor}
    root = _root(settings, create=False, role=role)
    with _schema_hint():
        client, worker = open_worker(
            root,
            threads=threads,
            poll_seconds=poll_seconds,
            lease_seconds=lease_seconds,
            on_outcome=on_outcome,
            backfill_seconds=backfill_seconds,
        )
    try:
        yield worker
    finally:
        client.close()


def server_settings(settings: CliSettings, *, extraction: str, extractor: str, max_body_bytes: int) -> ServeSettings:
    """What each process of ``serve http`` opens (it needs the ``server`` extra): the configured
    store (which must exist), as a path made absolute or the URL given, and the embedder choice."""
    from palimpsest.adapters.http.serve import ServeSettings

    store, memory_store_id = settings.for_other_processes()
    return ServeSettings(
        store=store,
        memory_store_id=memory_store_id,
        embedder=settings.embedder.value,
        extraction=extraction,
        extractor=extractor,
        max_body_bytes=max_body_bytes,
    )
