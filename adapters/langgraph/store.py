"""Adapters layer (LangGraph): ``PalimpsestStore``, a LangGraph ``BaseStore`` whose items are palimpsest memories.

Long-term memory written through LangGraph's store API (``store.put``, ``runtime.store`` in a
node or tool) lands in palimpsest as memory records, so it is searchable by palimpsest, shows up
in context cards of the same user and agent, and lives in the same file or database.

**Namespaces.** ``namespace_scopes`` (default ``("user_id", "agent_id")``) names what the
leading namespace labels are, after an optional *collection label*: a first label listed in
``collection_labels`` (default ``("memories",)``) names a collection, not a user, and the scopes
follow it. So with the defaults ``(user_id, agent_id, *rest)`` and LangMem's usual
``("memories", user_id, *rest)`` both scope their items to the user (and agent) they name:
``("maya", "assistant")`` and ``("memories", "maya")`` belong to user ``maya``. A label missing
from a short namespace leaves its scope ``None``; the rest of the namespace is kept in the
record's metadata (a label that cannot be a palimpsest id, e.g. one with a newline, is scoped by
a digest of it; the namespace itself is always kept verbatim). ``namespace_scopes=("user_id",)``
maps only the user; ``()`` leaves every item unscoped; ``collection_labels=()`` reads every first
label as the first scope (before collection labels existed, ``("memories", user)`` was scoped to a
user called ``memories``: such items are still read by key, and a put rewrites them under their
user, but a search or listing under the prefix finds them only with ``collection_labels=()``). A
searched prefix that fixes those labels becomes a scope filter, the rest a metadata pre-filter;
everything is re-checked exactly in Python.

**Items.** ``(namespace, key)`` names one memory record of type ``memory_type`` with a stable id
derived from both (no thread, never linked automatically). Its metadata holds, under
``"langgraph_store"``: ``namespace``, ``path`` (labels by position), ``key``, ``value`` (the
JSON value, returned as is), ``indexed`` and ``ttl_minutes``. Its content is the text palimpsest
embeds and searches: the values at the index ``fields`` (LangGraph paths; default ``["$"]``,
the whole value as JSON), joined by newlines. ``index=False`` on a put keeps an item out of
ranked search (it is still listed, after ranked items, as LangGraph's in-memory store does).
Values must be JSON-compatible.

**Search.** Without a query: the items under the prefix that pass ``filter`` (LangGraph's filter
language: exact values, nested objects, ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``),
newest update first. With a query: the same items, ranked by palimpsest search (its embedder and
strategy; ``score`` is the search relevance), followed by the unranked ones; ``offset`` and
``limit`` page through that sequence. One palimpsest search runs per user scope among the items.

**TTL.** ``put(..., ttl=minutes)`` sets the record's expiry; expired items are invisible and are
removed by ``AgentMemory.purge_expired()``. Reads refresh the TTL (``refresh_ttl``, default from
``ttl_config["refresh_on_read"]``, else true) without moving ``updated_at``.

**Differences from LangGraph's own stores**, all consequences of one record per item: several
indexed fields are embedded as one text (no per-field vectors with max pooling); embeddings come
from the palimpsest client (see :class:`~palimpsest.adapters.langgraph.LangChainEmbedder` to use
LangChain ``Embeddings``), so ``index["embed"]`` is refused; operations of a batch run in order,
each in its own transaction; listing and searching scan the records under the prefix (fine for
the thousands of items a store of agent memories holds, not for millions).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import (
    ConfigurationError,
    DuplicateIdError,
    RecordNotFoundError,
    ValidationError,
)
from palimpsest.domain.model import MEMORY_RECORD_TYPES, MemoryRecord, check_id, check_metadata
from palimpsest.domain.sentinel import NOTSET

__all__ = ["STORE_METADATA_KEY", "PalimpsestStore"]

STORE_METADATA_KEY: Final = "langgraph_store"
"""Metadata key under which a store item's namespace, key and value live."""

ScopeName = Literal["user_id", "agent_id"]

_ID_NAMESPACE: Final = uuid.UUID("0b8e4a53-2f7c-5d1e-8a96-3c4b5d6e7f80")
_MAX_SEARCH_K: Final = 1000
_MINUTES_PER_DAY: Final = 1440.0


class PalimpsestStore(BaseStore):
    """A LangGraph ``BaseStore`` backed by a palimpsest ``AgentMemory`` (see the module docs).

    Args:
        memory: the client whose store and embedder hold the items.
        index: ``{"fields": [...]}``: which value paths make the searchable text (LangGraph's
            ``IndexConfig`` shape; ``dims`` is accepted and checked, ``embed`` is refused).
        namespace_scopes: the palimpsest scopes of the leading namespace labels.
        collection_labels: first labels that name a collection, the scopes following them.
        memory_type: the record type of the items (``memory``, ``fact``, ``guideline``, ``preference``).
        ttl_config: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: AgentMemory,
        *,
        index: Mapping[str, Any] | None = None,
        namespace_scopes: Sequence[ScopeName] = ("user_id", "agent_id"),
        collection_labels: Sequence[str] = ("memories",),
        memory_type: str = "memory",
        ttl_config: TTLConfig | None = None,
    ) -> None:
        if not isinstance(memory, AgentMemory):
            raise ConfigurationError("memory must be a palimpsest AgentMemory.")
        self._memory = memory
        scopes = tuple(namespace_scopes)
        if any(s not in ("user_id", "agent_id") for s in scopes) or len(set(scopes)) != len(scopes):
            raise ConfigurationError("namespace_scopes holds 'user_id' and/or 'agent_id', each at most once.")
        self._scopes: tuple[ScopeName, ...] = scopes
        if isinstance(collection_labels, str) or not all(isinstance(c, str) and c for c in collection_labels):
            raise ConfigurationError("collection_labels must be a list of non-empty labels.")
        self._collections = frozenset(collection_labels)
        if memory_type not in {t.value for t in MEMORY_RECORD_TYPES}:
            raise ConfigurationError("memory_type must be one of memory, fact, guideline, preference.")
        self._memory_type = memory_type
        self.index_config = self._index_config(index)
        self._fields: list[tuple[str, str | list[str]]] = [
            (path, path if path == "$" else tokenize_path(path)) for path in self.index_config["fields"]
        ]
        self.ttl_config = ttl_config

    def _index_config(self, index: Mapping[str, Any] | None) -> dict[str, Any]:
        config = dict(index or {})
        if config.get("embed") is not None:
            raise ConfigurationError(
                "PalimpsestStore embeds with the palimpsest client's embedder; pass LangChain embeddings to "
                "the client instead: open_memory(embedder=LangChainEmbedder(embeddings, dimension=...))."
            )
        dims = config.get("dims")
        store_dims = self._memory.admin.dimension
        if dims is not None and store_dims is not None and dims != store_dims:
            raise ConfigurationError(
                f"index dims {dims} differ from the store's {store_dims}-dimensional vectors."
            )
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ConfigurationError("index fields must be a list of non-empty path strings.")
        return {"dims": dims, "fields": list(fields)}

    @property
    def memory(self) -> AgentMemory:
        """The palimpsest client behind this store."""
        return self._memory

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each result is at the position of its operation."""
        results: list[Result] = []
        for op in list(ops):
            _validate_labels(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op).__name__}")  # noqa: TRY004  (as LangGraph)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (the store work runs in a worker thread)."""
        materialised = list(ops)
        return await asyncio.to_thread(self.batch, materialised)

    # -- operations --------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        record = self._load(_record_id(op.namespace, op.key))
        if record is None:
            return None
        if op.refresh_ttl:
            record = self._refresh([record])[0]
        return _item(record)

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), str(op.key)
        record_id = _record_id(namespace, key)
        if op.value is None:
            self._memory.delete_memory(record_id)
            return
        value = check_metadata(dict(op.value)) or {}  # JSON-compatible, and a private copy
        texts = [] if op.index is False else self._texts(value, op.index)
        content = "\n".join(texts) if texts else _json(value)
        metadata = {
            STORE_METADATA_KEY: {
                "namespace": list(namespace),
                "path": {str(i): label for i, label in enumerate(namespace)},
                "key": key,
                "value": value,
                "indexed": bool(texts),
                "ttl_minutes": op.ttl,
            }
        }
        ttl_days = None if op.ttl is None else float(op.ttl) / _MINUTES_PER_DAY
        scope = self._scope_of(namespace)
        for _attempt in range(3):
            existing = self._load(record_id, include_expired=True)
            if existing is not None and (
                _expired(existing, self._memory.admin.now())  # an expired item is gone: start afresh
                or (existing.user_id, existing.agent_id) != (scope["user_id"], scope["agent_id"])
            ):  # (or it was written under another namespace rule: rewritten under its scope now)
                self._memory.delete_memory(record_id)
                existing = None
            try:
                if existing is None:
                    self._memory.add_memory(
                        content,
                        memory_type=self._memory_type,
                        user_id=scope["user_id"],
                        agent_id=scope["agent_id"],
                        memory_id=record_id,
                        metadata=metadata,
                        ttl_days=ttl_days,
                        autonomous_linking=False,
                    )
                else:
                    self._memory.update_memory(
                        record_id, content=content, metadata=metadata, ttl_days=ttl_days
                    )
                return
            except (DuplicateIdError, RecordNotFoundError):
                continue  # a concurrent writer created or deleted it meanwhile: look again
        raise DuplicateIdError(
            f"could not write item {key!r} of namespace {namespace!r}: concurrent changes."
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        under = self._list(prefix)
        candidates = [r for r in under if _value_matches(_payload(r)["value"], op.filter)]
        candidates.sort(key=_newest_first)
        ranked: list[tuple[MemoryRecord, float | None]] = []
        if op.query and op.query.strip():  # a blank query ranks nothing, as no query
            scores = self._rank(op.query, prefix, under, {r.id for r in candidates})
            ranked = [(r, scores[r.id]) for r in candidates if r.id in scores]
            ranked.sort(key=lambda pair: -(pair[1] or 0.0))
            ranked.extend((r, None) for r in candidates if r.id not in scores)
        else:
            ranked = [(r, None) for r in candidates]
        page = ranked[max(op.offset, 0) : max(op.offset, 0) + max(op.limit, 0)]
        records = [r for r, _ in page]
        if op.refresh_ttl:
            records = self._refresh(records)
        return [_search_item(record, score) for record, (_, score) in zip(records, page)]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
        literal = tuple(prefix[: next((i for i, label in enumerate(prefix) if label == "*"), len(prefix))])
        namespaces = {tuple(_payload(r)["namespace"]) for r in self._list(literal, wildcard_prefix=prefix)}
        found = [ns for ns in namespaces if all(_does_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        found.sort()
        return found[op.offset : op.offset + op.limit]

    # -- palimpsest access ---------------------------------------------------------------------

    def _scope_positions(self, labels: Sequence[str]) -> dict[int, ScopeName]:
        """Which positions of a namespace (or a searched prefix) hold which scope: after a
        collection label, or from the start. Nothing when the first label is a wildcard, whose
        layout is unknown until matched."""
        if not labels or labels[0] == "*":
            return {}
        offset = 1 if labels[0] in self._collections else 0
        return {offset + i: name for i, name in enumerate(self._scopes)}

    def _scope_of(self, namespace: tuple[str, ...]) -> dict[str, str | None]:
        scope: dict[str, str | None] = {"user_id": None, "agent_id": None}
        for position, name in self._scope_positions(namespace).items():
            if position < len(namespace):
                scope[name] = _scope_id(namespace[position])
        return scope

    def _list(self, prefix: tuple[str, ...], *, wildcard_prefix: tuple[str, ...] = ()) -> list[MemoryRecord]:
        """Visible store records whose namespace starts with ``prefix`` (and matches the
        positions of ``wildcard_prefix`` that are not ``*``)."""
        pattern = wildcard_prefix or prefix
        positions = self._scope_positions(pattern)
        scope_args: dict[str, Any] = {}
        path: dict[str, str] = {}
        for position, label in enumerate(pattern):
            if label == "*" and wildcard_prefix:
                continue
            if position in positions:
                scope_args[positions[position]] = _scope_id(label)
            else:
                path[str(position)] = label
        metadata_filter = {STORE_METADATA_KEY: {"path": path} if path else {}}
        records = self._memory.list_memories(metadata_filter=metadata_filter, limit=None, **scope_args)
        return [r for r in records if tuple(_payload(r)["namespace"][: len(prefix)]) == prefix]

    def _rank(
        self, query: str, prefix: tuple[str, ...], population: list[MemoryRecord], wanted: set[str]
    ) -> dict[str, float]:
        """Relevance of the ``wanted`` records, from one palimpsest search per user scope.

        Each search asks for as many results as there are indexed items under the prefix in
        that scope (up to 1000), so the items the value filter kept are all ranked even when
        items it dropped would rank higher."""
        per_user: dict[str | None, int] = {}
        for record in population:
            if _payload(record).get("indexed"):
                per_user[record.user_id] = per_user.get(record.user_id, 0) + 1
        users = {r.user_id for r in population if r.id in wanted and _payload(r).get("indexed")}
        if not users:
            return {}
        positions = self._scope_positions(prefix)
        agent_at = next((i for i, name in positions.items() if name == "agent_id" and i < len(prefix)), None)
        path = {str(i): label for i, label in enumerate(prefix) if i not in positions}
        metadata_filter = {STORE_METADATA_KEY: {"indexed": True, **({"path": path} if path else {})}}
        scores: dict[str, float] = {}
        for user in users:
            results = self._memory.search(
                query,
                user_id=user,
                agent_id=_scope_id(prefix[agent_at]) if agent_at is not None else NOTSET,
                record_types=[self._memory_type],
                metadata_filter=metadata_filter,
                max_results=min(per_user[user], _MAX_SEARCH_K),
                include_invalid_results=True,
                # LangGraph's score is the cosine similarity (keyword relevance without vectors).
                search_strategy="keyword" if self._memory.search_strategy == "keyword" else "vector",
            )
            for result in results:
                if result.id in wanted:
                    scores[result.id] = float(result.relevance)
        return scores

    def _load(self, record_id: str, *, include_expired: bool = False) -> MemoryRecord | None:
        record = self._memory.admin.records_by_id([record_id]).get(record_id)
        if (
            record is None
            or not isinstance(record.metadata, dict)
            or STORE_METADATA_KEY not in record.metadata
        ):
            return None
        if not include_expired and _expired(record, self._memory.admin.now()):
            return None
        return record

    def _refresh(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """Restart the TTL of the records that have one (``updated_at`` is left alone), through
        the client's :meth:`~palimpsest.application.StoreAdmin.refresh_ttl`, on its clock."""
        due = [r for r in records if _payload(r).get("ttl_minutes") is not None]
        if not due:
            return records
        now = self._memory.admin.now()
        until = {r.id: now + timedelta(minutes=float(_payload(r)["ttl_minutes"])) for r in due}
        refreshed = self._memory.admin.refresh_ttl(until)
        return [refreshed.get(r.id, r) for r in records]

    def _texts(self, value: dict[str, Any], fields: list[str] | None) -> list[str]:
        paths = self._fields if fields is None else [(f, f if f == "$" else tokenize_path(f)) for f in fields]
        texts: list[str] = []
        for _path, tokens in paths:
            texts.extend(t for t in get_text_at_path(value, tokens) if t.strip())
        return texts


# -- helpers -------------------------------------------------------------------------------


def _expired(record: MemoryRecord, now: datetime) -> bool:
    return record.expires_at is not None and record.expires_at <= now


def _scope_id(label: str) -> str:
    """The palimpsest scope id of a namespace label: the label itself, or, for a label that
    cannot be an id (blank, control characters, over 128 characters), a digest of it."""
    try:
        return check_id(label, "scope id")
    except ValidationError:
        return "~sha256:" + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()


def _record_id(namespace: Sequence[str], key: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([list(namespace), str(key)], ensure_ascii=False)))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _payload(record: MemoryRecord) -> dict[str, Any]:
    return (record.metadata or {}).get(STORE_METADATA_KEY) or {}


def _newest_first(record: MemoryRecord) -> tuple[float, tuple[str, ...], str]:
    payload = _payload(record)
    return (-record.updated_at.timestamp(), tuple(payload.get("namespace", ())), str(payload.get("key", "")))


def _item(record: MemoryRecord) -> Item:
    payload = _payload(record)
    return Item(
        value=copy.deepcopy(payload["value"]),
        key=payload["key"],
        namespace=tuple(payload["namespace"]),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _search_item(record: MemoryRecord, score: float | None) -> SearchItem:
    payload = _payload(record)
    return SearchItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=copy.deepcopy(payload["value"]),
        created_at=record.created_at,
        updated_at=record.updated_at,
        score=score,
    )


def _validate_labels(op: Op) -> None:
    """Namespace labels must be non-empty strings without ``.`` or NUL (LangGraph's rule)."""
    paths: list[Sequence[Any]] = []
    if isinstance(op, (GetOp, PutOp)):
        paths.append(op.namespace)
    elif isinstance(op, SearchOp):
        paths.append(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        paths.extend(c.path for c in op.match_conditions or ())
    for path in paths:
        for label in path:
            if not isinstance(label, str) or not label or "." in label or "\x00" in label:
                raise InvalidNamespaceError(
                    f"Invalid namespace label {label!r} in {tuple(path)!r}: labels are non-empty strings "
                    "without periods or NUL bytes."
                )


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix/suffix match, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(expected == "*" or actual == expected for actual, expected in pairs)


def _value_matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    if not flt:
        return True
    return all(_compare(_lookup(value, key), expected) for key, expected in flt.items())


def _lookup(value: Mapping[str, Any], key: str) -> Any:
    """The field ``key``; a dotted key absent as such is a path into nested objects
    (``"user.name"``), as LangGraph's SQL-backed stores read it."""
    if key in value or "." not in key:
        return value.get(key)
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter semantics (as its in-memory store and JSONB): operators, nested
    objects as sub-filters, lists compared element-wise."""
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_apply(actual, op, operand) for op, operand in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected))
        )
    return bool(actual == expected)


def _apply(actual: Any, operator: str, operand: Any) -> bool:
    """One operator; the ordering ones compare as numbers, and a value that ``float()`` cannot
    read as one (missing, ``None``, a word, an object) is no match rather than an error."""
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        try:
            left, right = float(actual), float(operand)
        except (TypeError, ValueError):
            return False
        return {
            "$gt": left > right,
            "$gte": left >= right,
            "$lt": left < right,
            "$lte": left <= right,
        }[operator]
    raise ValueError(f"Unsupported operator: {operator}")
