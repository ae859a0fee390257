"""Application layer: ``StoreAdmin``, what tools do with a whole store, on the client's clock.

The drivers that look after a store (the command line, the LangGraph store, the servers to
come) reach it here, never through the store itself: listings and lookups
(:mod:`.inspection`), a health check's readings (:mod:`.diagnostics`), export and import
(:mod:`.transfer`), a TTL refresh that is not an edit (:meth:`RecordService.refresh_ttl`), and
the few facts about the store a driver needs (its vector dimension, the embedding model it
records). Every "now" comes from one clock: the client's when reached as
``AgentMemory.admin``, the composition root's when built without a client (``palimpsest
doctor`` and ``export`` read a store without opening a client, which would record settings).
Each method is one use case of the modules above; nothing here has rules of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TextIO

from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.model import ExtractionJob, MemoryRecord, RecordLink, RecordStatus, RecordType
from palimpsest.domain.ports import Clock, MemoryStore, SchemaState
from palimpsest.domain.sentinel import NOTSET

from . import diagnostics, inspection, transfer
from .api_keys import ApiKeys
from .diagnostics import JobOverview, StoreCounts, WaitingVectors
from .inspection import Scope, ThreadOverview
from .ports import Embedder
from .record_service import RecordService
from .store_settings import EMBEDDING_MODEL_SETTING
from .transfer import ImportItem

__all__ = ["ImportItem", "JobOverview", "StoreAdmin", "StoreCounts", "ThreadOverview", "WaitingVectors"]


class StoreAdmin:
    """Listings, lookups, diagnostics, export/import and TTL refresh of one store, on one clock.

    Reach it as ``memory.admin`` (ARCHITECTURE.md D36). ``embedder`` is the one an import with
    ``reembed=True`` computes vectors with (the client's)."""

    def __init__(
        self,
        store: MemoryStore,
        clock: Clock,
        *,
        embedder: Embedder | None = None,
        records: RecordService | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._embedder = embedder
        self._records = records if records is not None else RecordService(store, clock)

    # -- the store's facts ----------------------------------------------------------------------

    def now(self) -> datetime:
        """The current time on this admin's clock (what listings and expiries are judged by)."""
        return self._clock.now()

    @property
    def dimension(self) -> int | None:
        """The dimension of the store's vectors (``None`` until the first vector is stored)."""
        return self._store.dimension

    def embedding_model(self) -> str | None:
        """The embedding model id the store records for its vectors, if any."""
        with self._store.reading() as uow:
            value = uow.settings.get(EMBEDDING_MODEL_SETTING)
        return value if isinstance(value, str) else None

    @property
    def api_keys(self) -> ApiKeys:
        """The store's API keys: create, list, revoke, verify (ARCHITECTURE.md D44)."""
        return ApiKeys(self._store, self._clock)

    # -- listings and lookups -------------------------------------------------------------------

    def get_record(self, record_id: str) -> MemoryRecord:
        """The memory record with ``record_id`` if it is visible now; ``RecordNotFoundError`` otherwise."""
        return inspection.get_record(self._store, self._clock, record_id)

    def records_by_id(self, record_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The stored records among ``record_ids``, by id, expired ones not yet purged included."""
        return inspection.records_by_id(self._store, record_ids)

    def links_among(self, record_ids: Iterable[str]) -> list[RecordLink]:
        """The links whose two ends are both among ``record_ids``, earliest created first."""
        return inspection.links_among(self._store, record_ids)

    def list_threads(
        self, *, user_id: Scope = NOTSET, agent_id: Scope = NOTSET, limit: int | None = None
    ) -> list[ThreadOverview]:
        """Threads matching the scope, oldest first (``limit`` keeps the newest), each with how
        many of its messages are visible now."""
        return inspection.list_threads(self._store, self._clock, user_id=user_id, agent_id=agent_id, limit=limit)

    def list_records(
        self,
        *,
        user_id: Scope = NOTSET,
        agent_id: Scope = NOTSET,
        thread_id: Scope = NOTSET,
        record_types: Iterable[RecordType] | None = None,
        status: RecordStatus | None = None,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        """Visible memory records matching the filters, oldest first (see
        :func:`~palimpsest.application.inspection.list_records`)."""
        return inspection.list_records(
            self._store,
            self._clock,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            record_types=record_types,
            status=status,
            limit=limit,
        )

    # -- diagnostics ----------------------------------------------------------------------------

    def schema_state(self) -> SchemaState | None:
        """The store's schema state, or ``None`` when the store does not offer diagnostics."""
        return diagnostics.schema_state(self._store)

    def count_rows(self) -> StoreCounts:
        """How many threads, memory records (visible now) and links the store holds."""
        return diagnostics.count_rows(self._store, self._clock)

    def waiting_vectors(self) -> WaitingVectors:
        """How many visible messages and memory records wait for their vectors (stored while
        the embedder was unavailable, or imported without vectors; ARCHITECTURE.md D43)."""
        return diagnostics.count_waiting(self._store, self._clock)

    def job_overview(self) -> JobOverview:
        """Every extraction job still to run, with its state now."""
        return diagnostics.job_overview(self._store, self._clock)

    def failed_jobs(self) -> list[ExtractionJob]:
        """The extraction jobs that failed every attempt."""
        return diagnostics.failed_jobs(self._store)

    def settings_problems(self) -> tuple[int, list[str]]:
        """What a client would refuse when it opens the store or one of its threads:
        ``(threads checked, problems)``."""
        return diagnostics.settings_problems(self._store)

    # -- export and import ----------------------------------------------------------------------

    def export(self, out: TextIO, *, progress: Callable[[int, int], None] | None = None) -> Counter[str]:
        """Write every row of the store to ``out`` as JSON Lines (:mod:`.transfer`); returns
        how many objects of each kind were written."""
        return transfer.export_store(self._store, out, progress=progress)

    @staticmethod
    def read_export(lines: Iterable[str], *, source: str | None = None) -> list[ImportItem]:
        """Every non-blank line of an export parsed and checked, or the first
        ``InvalidImportError`` (naming ``source`` and the line). Nothing is written."""
        return transfer.read_items(lines, source=source)

    def import_items(
        self,
        items: Sequence[ImportItem],
        *,
        reembed: bool = False,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
        source: str | None = None,
    ) -> Counter[str]:
        """Write parsed export lines in one unit of work (all or nothing; see :mod:`.transfer`);
        with ``reembed``, messages and memories get vectors from this admin's embedder
        (``ConfigurationError`` without one). Statuses re-derived are stamped on this clock."""
        if reembed and self._embedder is None:
            raise ConfigurationError("an import with reembed needs a client with an embedder.")
        return transfer.import_items(
            self._store,
            items,
            embedder=self._embedder if reembed else None,
            batch_size=batch_size,
            progress=progress,
            source=source,
            clock=self._clock,
        )

    # -- time to live ---------------------------------------------------------------------------

    def refresh_ttl(self, until: Mapping[str, datetime]) -> dict[str, MemoryRecord]:
        """Move each record's expiry to the time ``until`` gives for its id (``updated_at``
        stays: keeping a record alive is not an edit); records not visible now are left alone.
        Returns the refreshed records by id."""
        return self._records.refresh_ttl(until)
