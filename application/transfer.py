"""Application layer: export and import of a whole store as JSON Lines, with original ids and times.

The use cases behind ``palimpsest export`` and ``palimpsest import`` (and any other driver that
moves a store): they take the :class:`~palimpsest.domain.ports.MemoryStore` port, and a clock
for the times an import stamps, and do their reading and writing through its units of work.

One JSON object per line, each with a ``"kind"``: a ``thread``, ``message``, ``memory``,
``link`` or ``summary`` as the entity codec (:mod:`.codec`) writes and reads it, or a
``setting`` — ``key, value``: the store-wide retention policy (``memory_retention_config``).

Times are ISO 8601 with their UTC offset. An export holds every row, expired ones not yet purged
included, so that importing it into an empty store gives the same store: ids, times, links and
summary revisions are written as they are, through the store's unit of work and repositories
(the domain's storage ports), not through the client, which would stamp new times. Embeddings
are not exported (they belong to the index, and to one model): ``import --reembed`` computes
them with the configured embedder, otherwise imported text is found by keyword search until
``palimpsest reembed``, or until a client with the store's embedder fills them in (the vector
backfill of ARCHITECTURE.md D43). Pending extraction jobs are not exported.

Every line is held to the API's rules: the domain's entities check each one, settings and
thread configs must read back as a client reads them, messages, summaries and memories of a
thread carry its user and agent, and links are decided by the domain's ``new_link`` against
the links already there (no self-link, one orientation per pair...). Statuses are never taken
as given: once the links are in, ``derive_status`` re-derives every imported record (and any
stored record an imported link retires), as the service does; a status that agrees with the
links is kept with its times.

An import is one transaction: every line is parsed first, then written in kind order
(settings, threads, messages, memories, links, summaries); any error is an
:class:`InvalidImportError` naming its line (other failures of the store keep their type) and
leaves the store as it was. Other writers of the store wait for it (with ``--reembed`` that
includes the time spent embedding), which is the price of all or nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any, Final, TextIO

from palimpsest.domain.errors import (
    AgentMemoryError,
    ConfigurationError,
    ConflictError,
    InvalidImportError,
    NotFoundError,
    RecordNotFoundError,
    ThreadNotFoundError,
    ValidationError,
)
from palimpsest.domain.links import derive_status, new_link
from palimpsest.domain.model import (
    MAX_JSON_INT_DIGITS,
    STORED_RECORD_TYPES,
    MemoryRecord,
    Message,
    RecordLink,
    RecordStatus,
    RecordType,
    Thread,
    ThreadSummary,
)
from palimpsest.domain.ports import Clock, MemoryStore, UnitOfWork

from .codec import decode, encode
from .config import stored_thread_settings
from .indexing import INDEX_CONTEXT_SETTING, check_index_context, message_index_text, turn_before
from .ports import Embedder
from .store_settings import RETENTION_SETTING, stored_retention

__all__ = [
    "EXPORTED_SETTINGS",
    "KINDS",
    "ImportItem",
    "decode_line",
    "encode",
    "export_store",
    "import_items",
    "read_items",
]

KINDS: Final = ("setting", "thread", "message", "memory", "link", "summary")
"""Every kind, in the order an import writes them (each kind may refer to earlier ones)."""

EXPORTED_SETTINGS: Final = (RETENTION_SETTING,)
"""Store settings carried by an export. The embedding model is not: vectors are not exported."""

_SETTING_CHECKS: Final[Mapping[str, Callable[[Any], object]]] = {RETENTION_SETTING: stored_retention}
"""How a client reads each exported setting: an import must hold what it can read back."""

_EVERYTHING: Final = datetime.min.replace(tzinfo=UTC)
"""A ``now`` before every expiry: listings at this time include expired rows."""

# --- encoding ----------------------------------------------------------------------------------


def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def export_store(
    store: MemoryStore, out: TextIO, *, progress: Callable[[int, int], None] | None = None
) -> Counter[str]:
    """Write every row of ``store`` to ``out``, one JSON object per line, in one unit of work
    (a consistent snapshot). ``progress(done, total)`` counts threads, memories and links.
    Returns how many objects of each kind were written."""
    counts: Counter[str] = Counter()

    def emit(obj: Mapping[str, Any]) -> None:
        out.write(_line(obj))
        counts[str(obj["kind"])] += 1

    with store.reading() as uow:
        threads = uow.threads.list(limit=None)
        # Images are not exported yet (their bytes have no line kind): their record rows stay out too.
        records = uow.records.list(now=_EVERYTHING, record_types=STORED_RECORD_TYPES - {RecordType.IMAGE}, limit=None)
        links = uow.links.list(limit=None)
        total = len(threads) + len(records) + len(links)
        done = 0
        for key in EXPORTED_SETTINGS:
            value = uow.settings.get(key)
            if value is not None:
                emit({"kind": "setting", "key": key, "value": value})
        for thread in threads:
            emit(encode(thread))
        for thread in threads:
            for message in uow.messages.list_for_thread(thread.id, now=_EVERYTHING):
                emit(encode(message))
            done += 1
            if progress is not None:
                progress(done, total)
        for record in records:
            emit(encode(record))
            done += 1
            if progress is not None and done % 100 == 0:
                progress(done, total)
        for link in links:
            emit(encode(link))
            done += 1
            if progress is not None and done % 100 == 0:
                progress(done, total)
        for thread in threads:
            for summary in uow.summaries.list_for_thread(thread.id):
                emit(encode(summary))
    if progress is not None:
        progress(total, total)
    return counts


# --- decoding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One parsed line: its kind, its entity (or setting ``(key, value)``) and where it came from."""

    kind: str
    value: Any
    line: int


def _build(kind: str, fields: dict[str, Any]) -> Any:
    """The entity of one line (through the codec), or a setting's ``(key, value)``; what a
    client reads back (a thread's settings, a setting) must parse as it reads it."""
    if kind != "setting":
        if kind == "memory" and fields.get("memory_type") == RecordType.IMAGE.value:
            raise ValidationError("images are not exported or imported yet (their bytes have no line kind).")
        entity = decode(fields, kind=kind)
        if isinstance(entity, Thread):
            stored_thread_settings(entity)  # what get_thread and add_messages will read
        return entity
    unknown = sorted(set(fields) - {"key", "value"})
    if unknown:
        raise ValidationError(f"unknown field(s) for a setting: {', '.join(unknown)}.")
    missing = sorted({"key", "value"} - set(fields))
    if missing:
        raise ValidationError(f"a setting needs {', '.join(missing)}.")
    key = fields["key"]
    if key not in EXPORTED_SETTINGS:
        raise ValidationError(f"unknown setting {key!r} (importable: {', '.join(EXPORTED_SETTINGS)}).")
    if not isinstance(fields["value"], dict):
        raise ValidationError(f"setting {key!r} must be a JSON object.")
    _SETTING_CHECKS[key](fields["value"])
    return (key, fields["value"])


def _where(line: int, source: str | None) -> str:
    return f"{source}, line {line}" if source else f"line {line}"


class _NotJson(ValueError):
    """A token Python's json module accepts but JSON does not (NaN, Infinity)."""


def _no_constant(name: str) -> None:
    raise _NotJson(f"{name} is not a JSON value")


def _json(text: str) -> Any:
    """The JSON value of one line. What ``json.loads`` raises untyped (nesting too deep for
    its recursion, an integer past the int -> str limit) or accepts but JSON does not (NaN,
    Infinity) is a :class:`ValidationError` too."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"not valid JSON ({exc.msg} at column {exc.colno}).") from None
    except _NotJson as exc:
        raise ValidationError(f"not valid JSON ({exc}).") from None
    except RecursionError:
        raise ValidationError("not valid JSON (nested too deeply).") from None
    except ValueError:  # the int -> str conversion limit
        raise ValidationError(f"not valid JSON (an integer has more than {MAX_JSON_INT_DIGITS} digits).") from None


def decode_line(text: str, line: int, *, source: str | None = None) -> ImportItem:
    """Parse and validate one line (an entity is built, so the domain's checks apply).

    Raises :class:`InvalidImportError` whose message starts with ``SOURCE, line N:``."""
    where = _where(line, source)
    try:
        obj = _json(text)
        if not isinstance(obj, dict):
            raise ValidationError(f"expected a JSON object, got {type(obj).__name__}.")
        kind = obj.pop("kind", None)
        if kind not in KINDS:
            raise ValidationError(f'"kind" must be one of {", ".join(KINDS)}; got {kind!r}.')
        value = _build(kind, obj)
    except (ValueError, TypeError) as exc:  # ValidationError and ConfigurationError are ValueErrors
        raise InvalidImportError(f"{where}: {exc}", line=line) from None
    return ImportItem(kind, value, line)


def read_items(lines: Iterable[str], *, source: str | None = None) -> list[ImportItem]:
    """Every non-blank line parsed (``lines`` as read from a text file), or the first error."""
    items = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            items.append(decode_line(text, number, source=source))
    return items


# --- import ------------------------------------------------------------------------------------


def _at_line(exc: AgentMemoryError, line: int, source: str | None) -> AgentMemoryError:
    """The error naming the line it came from: an :class:`InvalidImportError` when the line is
    at fault (bad input, a clash with what is stored), the same kind of error otherwise."""
    message = f"{_where(line, source)}: {exc}"
    located: AgentMemoryError
    if isinstance(exc, (ValidationError, ConflictError, NotFoundError, ConfigurationError)):
        located = InvalidImportError(message, line=line)
    else:
        try:
            located = type(exc)(message)
        except TypeError:  # an error class with another constructor: fall back to its meaning
            located = InvalidImportError(message, line=line)
    located.__cause__ = exc
    return located


class _Rules:
    """The API's rules across lines, checked inside the import's unit of work (which sees its
    own writes): whose thread a row belongs to, and what a link may join."""

    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow
        self._threads: dict[str, Thread] = {}
        self.records: dict[str, tuple[MemoryRecord, int]] = {}
        """Imported records, by id, with their line."""
        self.links_of: dict[str, list[RecordLink]] = {}
        """Imported links, by endpoint."""
        self.stored_ends: set[str] = set()
        """Records already in the store that imported links touch."""

    def thread(self, thread_id: str) -> Thread:
        if thread_id not in self._threads:
            found = self._uow.threads.get(thread_id)
            if found is None:
                raise ThreadNotFoundError(f"No thread with id {thread_id!r}.")
            self._threads[thread_id] = found
        return self._threads[thread_id]

    def owned(self, kind: str, row: Message | MemoryRecord | ThreadSummary, thread_id: str) -> None:
        """A thread's messages, summaries and memories carry its user and agent (the client
        copies them from the thread)."""
        thread = self.thread(thread_id)
        if (row.user_id, row.agent_id) != (thread.user_id, thread.agent_id):
            raise ValidationError(
                f"a {kind} of thread {thread_id!r} must have the thread's user_id and agent_id "
                f"{(thread.user_id, thread.agent_id)!r}, not {(row.user_id, row.agent_id)!r}."
            )

    def record(self, record_id: str) -> MemoryRecord:
        if record_id in self.records:
            return self.records[record_id][0]
        found = self._uow.records.get(record_id)
        if found is None:
            raise RecordNotFoundError(f"No memory record with id {record_id!r}.")
        self.stored_ends.add(record_id)
        return found

    def link(self, claimed: RecordLink) -> RecordLink:
        """The link the domain's ``new_link`` makes of this line, refused when it differs."""
        source, target = self.record(claimed.source_id), self.record(claimed.target_id)
        for name, record in (("source_type", source), ("target_type", target)):
            given = getattr(claimed, name)
            if given is not record.record_type:
                raise ValidationError(
                    f"{name} is {given.value!r} but memory record {record.id!r} is a {record.record_type.value}."
                )
        link = new_link(
            link_id=claimed.id,
            source=source,
            target=target,
            relation_type=claimed.relation_type,
            opposite_relation_type=claimed.opposite_relation_type,
            existing_between=self._uow.links.between(source.id, target.id),
            now=claimed.created_at,
            metadata=claimed.metadata,
            timestamp=claimed.timestamp,
        )
        if link.opposite_relation_type != claimed.opposite_relation_type:
            raise ValidationError(
                f"a {claimed.relation_type!r} link's opposite_relation_type is "
                f"{link.opposite_relation_type!r}, not {claimed.opposite_relation_type!r}."
            )
        for end in (link.source_id, link.target_id):
            self.links_of.setdefault(end, []).append(link)
        return link


def _claimed(record: MemoryRecord) -> MemoryRecord:
    """An invalid record that does not say since when claims nothing: it is derived afresh."""
    if record.status is RecordStatus.INVALID and record.invalidated_at is None:
        return replace(record, status=RecordStatus.VALID, invalidation_reason=None)
    return record


def _derive_statuses(uow: UnitOfWork, rules: _Rules, now: datetime, source: str | None) -> None:
    """Every imported record's status from its links, and that of stored records imported
    links touch, as the service derives them (changed ones are stamped ``now``)."""
    for record_id, (record, line) in rules.records.items():
        derived, _ = derive_status(_claimed(record), rules.links_of.get(record_id, ()), now)
        if derived != record:
            try:
                uow.records.update(derived)
            except AgentMemoryError as exc:
                raise _at_line(exc, line, source) from exc
    for record_id in sorted(rules.stored_ends):
        stored = uow.records.get(record_id)
        if stored is not None:
            derived, _ = derive_status(stored, uow.links.touching(record_id), now)
            if derived is not stored:
                uow.records.update(derived)


def _chunks(items: Sequence[ImportItem], size: int) -> Iterator[Sequence[ImportItem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def import_items(
    store: MemoryStore,
    items: Sequence[ImportItem],
    *,
    embedder: Embedder | None = None,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
    clock: Clock | None = None,
) -> Counter[str]:
    """Write ``items`` in one unit of work, in kind order, under the API's rules (see the
    module's docstring); with ``embedder``, messages and memories get vectors computed from
    their text (``batch_size`` texts per call). A re-derived status is stamped with
    ``clock``'s time, read once (default: the current UTC time).

    Returns how many of each kind were written. On any error nothing is written, and the error
    (an :class:`InvalidImportError` when the line is at fault: duplicate id, unknown thread,
    link the rules refuse...) names the line it came from (and ``source``, the file's name,
    when given)."""
    rank = {kind: i for i, kind in enumerate(KINDS)}
    ordered = sorted(items, key=lambda item: rank[item.kind])
    counts: Counter[str] = Counter()
    done = 0
    when = clock.now() if clock is not None else datetime.now(UTC)
    with store.unit_of_work() as uow:
        rules = _Rules(uow)
        # Message vectors follow the store's index-text recipe, as the client's would.
        context = check_index_context(uow.settings.get(INDEX_CONTEXT_SETTING) or ())
        # ... and a named turn is read after the imported message before it in its thread.
        by_thread: dict[str, list[Any]] = {}
        for item in ordered:
            if item.kind == "message":
                by_thread.setdefault(item.value.thread_id, []).append(item.value)
        before: dict[str, Any] = {}
        for thread_messages in by_thread.values():
            thread_messages.sort(key=lambda m: m.seq)
            before.update((m.id, p) for p, m in pairwise(thread_messages))
        for chunk in _chunks(ordered, batch_size):
            texts = [
                message_index_text(
                    item.value.content,
                    item.value.role,
                    item.value.timestamp,
                    context,
                    item.value.speaker,
                    turn_before(item.value, before.get(item.value.id)),
                )
                if item.kind == "message"
                else item.value.content
                for item in chunk
                if item.kind in ("message", "memory")
            ]
            vectors: Iterator[Sequence[float] | None]
            if embedder is not None and texts:
                vectors = iter([tuple(map(float, v)) for v in embedder.embed(texts, is_query=False)])
            else:
                vectors = iter([None] * len(texts))
            for item in chunk:
                try:
                    if item.kind == "setting":
                        key, value = item.value
                        uow.settings.set(key, value)
                    elif item.kind == "thread":
                        uow.threads.add(item.value)
                    elif item.kind == "message":
                        rules.owned("message", item.value, item.value.thread_id)
                        uow.messages.add(item.value, embedding=next(vectors))
                    elif item.kind == "memory":
                        record = item.value
                        if record.thread_id is not None:
                            rules.owned("memory", record, record.thread_id)
                        uow.records.add(record, embedding=next(vectors))
                        rules.records[record.id] = (record, item.line)
                    elif item.kind == "link":
                        uow.links.add(rules.link(item.value))
                    else:
                        rules.owned("summary", item.value, item.value.thread_id)
                        uow.summaries.add(item.value)
                except AgentMemoryError as exc:
                    raise _at_line(exc, item.line, source) from exc
                counts[item.kind] += 1
            done += len(chunk)
            if progress is not None:
                progress(done, len(ordered))
        _derive_statuses(uow, rules, when, source)
        uow.commit()
    return counts
