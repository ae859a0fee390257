"""Adapters layer (command line): where a command's client comes from (store, embedder, options).

The global options of ``palimpsest`` become one :class:`CliSettings`; :func:`open_session` turns
them into a ready :class:`Session`: the store (an embedded file, or an Oracle store through a
python-oracledb pool), the embedder chosen by ``--embedder``, and an ``AgentMemory`` over both.

The command line's client is deliberately passive: it has no extractor and no link resolver,
so opening a store never starts extraction work or links memories by itself (pending
extraction jobs stay for the application's own clients, and ``palimpsest doctor`` reports
them). It has the offline TextRank summariser, so context cards carry a summary.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from palimpsest.application import AgentMemory, Embedder, MemoryExtractionConfig
from palimpsest.application.store_settings import EMBEDDING_MODEL_SETTING
from palimpsest.domain.errors import ConfigurationError, SchemaVersionError
from palimpsest.domain.ports import MemoryStore

__all__ = [
    "DEFAULT_OPENAI_EMBEDDING_MODEL",
    "DISTRIBUTION",
    "NO_EXTRACTION",
    "CliError",
    "CliSettings",
    "EmbedderChoice",
    "OpenedStore",
    "Session",
    "minilm_status",
    "open_session",
    "open_store",
    "resolve_embedder",
    "stored_model_id",
]

DISTRIBUTION: Final = "palimpsest-memory"
"""The name pip installs palimpsest under (free on PyPI; ``palimpsest`` there is another project).
The import namespace stays ``palimpsest``; every install hint names this distribution."""

NO_EXTRACTION: Final = MemoryExtractionConfig(extract_memories=False)
"""The command line never extracts: threads are opened with this override."""

DEFAULT_OPENAI_EMBEDDING_MODEL: Final = "text-embedding-3-small"
_HASHING_ID: Final = re.compile(r"hashing-v1-(\d+)")
_MINILM_PREFIX: Final = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_MAX: Final = re.compile(r"^sentence-transformers/all-MiniLM-L6-v2@numpy-max(\d+)$")


class CliError(Exception):
    """A mistake the command line itself detects (a missing option, a missing file...).

    Printed as one line, like the library's own errors."""


class EmbedderChoice(str, enum.Enum):
    """Which embedder the command line gives its client (``--embedder``)."""

    AUTO = "auto"
    MINILM = "minilm"
    HASHING = "hashing"
    OPENAI = "openai"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class CliSettings:
    """The global options, as given on the command line or in the environment."""

    store: Path | None = None
    oracle_dsn: str | None = None
    oracle_user: str | None = None
    oracle_password: str | None = field(default=None, repr=False)
    memory_store_id: str | None = None
    embedder: EmbedderChoice = EmbedderChoice.AUTO
    debug: bool = False

    @property
    def uses_oracle(self) -> bool:
        return self.oracle_dsn is not None

    def describe_store(self) -> str:
        """A short human name for the configured store (no credentials)."""
        if self.oracle_dsn is not None:
            suffix = f", memory store {self.memory_store_id!r}" if self.memory_store_id else ""
            return f"Oracle {self.oracle_dsn}{suffix}"
        if self.store is not None:
            return f"store file {self.store}"
        return "no store"

    def check(self) -> None:
        """Refuse contradictory global options."""
        if self.store is not None and self.oracle_dsn is not None:
            raise CliError("give either --store (an embedded store file) or --oracle-dsn, not both.")
        if self.memory_store_id is not None and self.oracle_dsn is None:
            raise CliError("--memory-store-id applies to Oracle stores only; give --oracle-dsn as well.")


# --- embedders ---------------------------------------------------------------------------------


def minilm_status() -> tuple[bool, str]:
    """Whether the offline MiniLM embedder can run here, and where its weights are (or why not)."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        return (
            False,
            f"the {exc.name or 'tokenizers/safetensors'} package is missing (pip install 'palimpsest-memory[minilm]')",
        )
    from palimpsest.adapters.minilm import find_model_folder

    try:
        folder = find_model_folder(None)
    except ConfigurationError as exc:
        return False, str(exc)
    return True, str(folder)


def _minilm(stored: str | None = None) -> Embedder:
    """MiniLM; with the store's ``...@numpy-maxN`` id, truncating at the same ``N`` tokens."""
    available, detail = minilm_status()
    if not available:
        raise ConfigurationError(f"the MiniLM embedder is not available: {detail}")
    from palimpsest.adapters.minilm import MiniLMEmbedder

    match = _MINILM_MAX.search(stored or "")
    embedder: Embedder = MiniLMEmbedder(max_seq_length=int(match.group(1))) if match else MiniLMEmbedder()
    return embedder


def _hashing(stored: str | None) -> Embedder:
    from palimpsest.adapters.hashing import HashingEmbedder

    match = _HASHING_ID.fullmatch(stored or "")
    return HashingEmbedder(int(match.group(1)) if match else 64)


def _openai(stored: str | None) -> Embedder:
    try:
        from palimpsest.adapters.openai import OpenAIEmbedder, client_from_env
    except ImportError as exc:
        raise ConfigurationError(
            f"the OpenAI embedder needs the openai package ({exc}); pip install 'palimpsest-memory[openai]'."
        ) from None
    model = os.environ.get("OPENAI_EMBEDDING_MODEL") or None
    dimension: int | None = None
    if (
        stored
        and "@" in stored
        and not stored.startswith(_MINILM_PREFIX)
        and not _HASHING_ID.fullmatch(stored)
    ):
        stored_model, _, stored_dimension = stored.rpartition("@")
        if model is None or model == stored_model:
            model = stored_model
            dimension = int(stored_dimension) if stored_dimension.isdigit() else None
    client = client_from_env()
    embedder: Embedder = OpenAIEmbedder(client, model or DEFAULT_OPENAI_EMBEDDING_MODEL, dimension=dimension)
    return embedder


def resolve_embedder(choice: EmbedderChoice, stored: str | None) -> tuple[Embedder | None, str | None]:
    """The embedder for ``choice`` given the store's recorded model id, and a note for the user.

    ``auto`` follows the store: the model its vectors were made with when that model can run
    here (MiniLM with its weights installed, the hashing test embedder, an OpenAI-compatible
    model with ``OPENAI_API_KEY`` set), else none (keyword search only, with a note). A store
    with no recorded model gets MiniLM when installed, else none.
    """
    if choice is EmbedderChoice.NONE:
        return None, None
    if choice is EmbedderChoice.MINILM:
        return _minilm(stored), None
    if choice is EmbedderChoice.HASHING:
        return _hashing(stored), None
    if choice is EmbedderChoice.OPENAI:
        return _openai(stored), None
    if stored is None:
        available, _ = minilm_status()
        return (_minilm(), None) if available else (None, None)
    if _HASHING_ID.fullmatch(stored):
        return _hashing(stored), None
    if stored.startswith(_MINILM_PREFIX):
        available, detail = minilm_status()
        if available:
            return _minilm(stored), None
        return (
            None,
            f"the store's vectors were made by MiniLM, which is not available here ({detail}); search is keyword-only.",
        )
    if os.environ.get("OPENAI_API_KEY"):
        return _openai(stored), None
    return None, (
        f"the store's vectors were made by {stored!r}; set OPENAI_API_KEY (and OPENAI_BASE_URL) to use it, "
        "or pass --embedder. Search is keyword-only."
    )


def stored_model_id(store: MemoryStore) -> str | None:
    """The embedding model id the store records for its vectors, if any."""
    with store.reading() as uow:
        value = uow.settings.get(EMBEDDING_MODEL_SETTING)
    return value if isinstance(value, str) else None


# --- stores ------------------------------------------------------------------------------------


@dataclass
class OpenedStore:
    """An open store, and the Oracle pool under it (closed with it)."""

    store: MemoryStore
    pool: Any = None

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            if self.pool is not None:
                self.pool.close(force=True)


def _oracle_pool(settings: CliSettings) -> Any:
    try:
        import oracledb
    except ImportError:
        raise CliError("python-oracledb is not installed: pip install 'palimpsest-memory[oracle]'.") from None
    if not settings.oracle_user:
        raise CliError("Oracle needs a user: pass --oracle-user (or set ORACLE_USER).")
    if settings.oracle_password is None:
        raise CliError("Oracle needs a password: pass --oracle-password (or set ORACLE_PASSWORD).")
    try:
        return oracledb.create_pool(
            user=settings.oracle_user,
            password=settings.oracle_password,
            dsn=settings.oracle_dsn,
            min=1,
            max=4,
            increment=1,
        )
    except oracledb.Error as exc:
        raise CliError(f"cannot connect to Oracle at {settings.oracle_dsn}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_store(settings: CliSettings, *, create: bool = False) -> OpenedStore:
    """Open the configured store. Without ``create`` an embedded store file must already exist
    and an Oracle store must already be installed (``palimpsest oracle install``)."""
    settings.check()
    if settings.oracle_dsn is not None:
        pool = _oracle_pool(settings)  # first: it checks that the driver is installed
        from palimpsest.adapters.oracle import OracleStore, SchemaPolicy

        policy = SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING
        try:
            store = OracleStore(pool, memory_store_id=settings.memory_store_id, schema_policy=policy)
        except SchemaVersionError as exc:
            pool.close(force=True)
            raise SchemaVersionError(
                f"{exc} (palimpsest oracle install creates the store; palimpsest oracle upgrade upgrades it)"
            ) from exc
        except BaseException:
            pool.close(force=True)
            raise
        return OpenedStore(store, pool)
    if settings.store is None:
        raise CliError("no store given: pass --store PATH (or set PALIMPSEST_STORE), or --oracle-dsn DSN.")
    path = settings.store.expanduser()
    if path.is_dir():
        raise CliError(f"{path} is a folder, not a store file.")
    if not create and not path.exists():
        raise CliError(
            f"no store file at {path} (import data with 'palimpsest import', or create one with open_memory)."
        )
    from palimpsest.adapters.embedded import EmbeddedStore  # creates a missing folder itself

    return OpenedStore(EmbeddedStore(path))


@dataclass
class Session:
    """What a command works with: the client, its store and embedder, and a note for the user."""

    memory: AgentMemory
    store: MemoryStore
    embedder: Embedder | None
    settings: CliSettings
    note: str | None = None


@contextmanager
def open_session(
    settings: CliSettings, *, create: bool = False, allow_model_change: bool = False
) -> Iterator[Session]:
    """A client on the configured store, closed (with its store and pool) on exit."""
    from palimpsest.adapters.heuristic import TextRankSummariser

    opened = open_store(settings, create=create)
    try:
        embedder, note = resolve_embedder(settings.embedder, stored_model_id(opened.store))
        memory = AgentMemory(
            store=opened.store,
            embedder=embedder,
            summariser=TextRankSummariser(),
            memory_extraction_config=NO_EXTRACTION,
            allow_embedding_model_change=allow_model_change,
        )
        try:
            yield Session(memory, opened.store, embedder, settings, note)
        finally:
            memory.close()
    finally:
        opened.close()
