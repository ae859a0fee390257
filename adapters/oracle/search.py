"""Adapters layer (Oracle): ``OracleSearch``, the RecordSearch contract over the chunk table and graph.

Candidates come from SQL (:mod:`.search_sql`) with the query's scope, type, status and expiry
as predicates and a sound metadata pre-filter; every candidate is then loaded and re-checked
with the domain's own filter (:meth:`SearchQuery.admits_record`), fetching a larger page when
the re-check drops rows of a full page. Ranking ties, reciprocal rank fusion and the linked-record
trees are the domain's (decisions D8, D11, D17): the graph is walked one depth per statement for
the frontier of every hit at once, and ``shortest_path_tree`` builds each hit's tree from the
collected links.

Scores, as the embedded store reports them: vector hits carry the cosine similarity
``1 - distance`` and Oracle's cosine distance; keyword hits ``SCORE / 100`` (Oracle Text's
1..100 relevance) and ``1 - score``; hybrid hits the normalised reciprocal-rank-fusion score and
``1 - score``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from palimpsest.domain.errors import InvalidSearchError
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordType
from palimpsest.domain.search import (
    LinkedRecord,
    SearchHit,
    SearchQuery,
    build_tree,
    fuse,
    shortest_path_tree,
)

from .codec import encode_vector, message_from_row, record_from_row
from .names import StoreNames
from .search_sql import (
    MAX_IDS_PER_STATEMENT,
    graph_row,
    graph_steps,
    keyword_candidates,
    keyword_query,
    memory_records_by_ids,
    messages_by_ids,
    vector_candidates,
)
from .sql import Statement, fetch_all

__all__ = ["MAX_CANDIDATE_LIMIT", "OracleSearch"]

MAX_CANDIDATE_LIMIT: Final = 100_000
"""The largest candidate page fetched while the Python re-check keeps rejecting rows. Only a
metadata filter that SQL cannot pre-filter can make a page this large fall short of ``k`` hits."""

_GROWTH: Final = 4
_MESSAGE: Final = RecordType.MESSAGE.value

Key = tuple[str, str]
"""A hit's identity: (record type name, id). Messages and memory records are separate id spaces."""

Entity = MemoryRecord | Message


class OracleSearch:
    """Runs a :class:`SearchQuery` on an open python-oracledb connection of one store.

    ``approximate=True`` lets vector candidates come from the vector index
    (``FETCH APPROX FIRST``); by default the search is exact.
    """

    def __init__(
        self, names: StoreNames, *, approximate: bool = False, max_candidates: int = MAX_CANDIDATE_LIMIT
    ) -> None:
        self.names = names
        self.approximate = approximate
        self.max_candidates = max_candidates

    def search(self, connection: Any, query: SearchQuery, *, dimension: int | None) -> list[SearchHit]:
        """See :class:`~palimpsest.domain.ports.RecordSearch`. ``dimension`` is the store's
        embedding dimension (``None``: no vector stored, so vector search finds nothing).

        Raises ``VectorDimensionError`` if the query vector does not fit ``dimension``.
        """
        if not isinstance(query, SearchQuery):
            raise InvalidSearchError("search() takes a SearchQuery.")
        vector = encode_vector(query.vector, dimension) if query.vector is not None else None
        text_query = keyword_query(query.text) if query.text is not None else None
        hybrid = query.vector is not None and query.text is not None
        want = query.fusion_depth if hybrid else query.k
        loaded: dict[Key, Entity | None] = {}

        by_vector: list[tuple[Key, Entity, float]] = []
        if vector is not None and dimension is not None:
            by_vector = self._candidates(
                connection,
                query,
                want,
                loaded,
                lambda limit: vector_candidates(
                    self.names, query, vector, limit, approximate=self.approximate
                ),
                best_first=lambda key, distance: (distance, key),
            )
        by_keyword: list[tuple[Key, Entity, float]] = []
        if text_query is not None:
            by_keyword = self._candidates(
                connection,
                query,
                want,
                loaded,
                lambda limit: keyword_candidates(self.names, query, text_query, limit),
                best_first=lambda key, score: (-score, key),
            )

        ranked: list[tuple[Entity, float, float]]
        if hybrid:
            entities = {key: entity for key, entity, _ in (*by_vector, *by_keyword)}
            fused = fuse(
                [(key, 1.0 - distance) for key, _, distance in by_vector],
                [(key, raw) for key, _, raw in by_keyword],
                fusion=query.fusion,
                dense_weight=query.dense_weight,
                rrf_k=query.rrf_k,
                keyword_scale=100.0,  # Oracle Text's SCORE is 0-100 (D20)
            )
            # Equal fused scores keep the domain's order (first appearance, vector list first), as in
            # every other store: fusion is defined once (D20).
            ranked = [(entities[key], score, 1.0 - score) for key, score in fused[: query.k]]
        elif query.vector is not None:
            ranked = [(entity, 1.0 - distance, distance) for _, entity, distance in by_vector[: query.k]]
        else:
            ranked = []
            for _, entity, raw in by_keyword[: query.k]:
                score = raw / 100.0
                ranked.append((entity, score, 1.0 - score))

        roots = [entity.id for entity, _, _ in ranked if isinstance(entity, MemoryRecord)]
        trees = self._linked(connection, query, roots)
        return [
            SearchHit(
                record=entity,
                score=score,
                distance=distance,
                linked=trees.get(entity.id, ()) if isinstance(entity, MemoryRecord) else (),
            )
            for entity, score, distance in ranked
        ]

    # --- candidates ---------------------------------------------------------------------------

    def _candidates(
        self,
        connection: Any,
        query: SearchQuery,
        want: int,
        loaded: dict[Key, Entity | None],
        statement: Callable[[int], Statement],
        best_first: Callable[[Key, float], tuple[Any, ...]],
    ) -> list[tuple[Key, Entity, float]]:
        """The best ``want`` candidates that pass the domain's filter, as (key, entity, value).

        A page of ``limit`` rows is fetched, loaded and re-checked; if fewer than ``want`` pass
        and the page was full, a page ``_GROWTH`` times larger is fetched, up to
        ``max_candidates``. ``value`` is the distance or the score the SQL returned.
        """
        limit = min(want if query.metadata_filter is None else max(2 * want, 50), self.max_candidates)
        while True:
            rows = fetch_all(connection, statement(limit))
            order: dict[Key, float] = {}
            for record_type, record_id, value in rows:
                order.setdefault((str(record_type), str(record_id)), float(value))  # best chunk first
            passing: dict[Key, tuple[Entity, float]] = {}
            keys = list(order)
            for start in range(0, len(keys), MAX_IDS_PER_STATEMENT):
                part = keys[start : start + MAX_IDS_PER_STATEMENT]
                self._load(connection, [key for key in part if key not in loaded], loaded)
                for key in part:
                    entity = loaded.get(key)
                    if entity is not None and query.admits_record(entity, direct=True):
                        passing.setdefault((entity.record_type.value, entity.id), (entity, order[key]))
                if len(passing) >= want:
                    break
            if len(passing) >= want or len(rows) < limit or limit >= self.max_candidates:
                break
            limit = min(limit * _GROWTH, self.max_candidates)
        result = sorted(
            ((key, entity, value) for key, (entity, value) in passing.items()),
            key=lambda item: best_first(item[0], item[2]),
        )
        return result[:want]

    def _load(self, connection: Any, keys: Sequence[Key], loaded: dict[Key, Entity | None]) -> None:
        """Load the entities behind candidate keys into ``loaded`` (``None``: gone meanwhile)."""
        message_ids = [record_id for record_type, record_id in keys if record_type == _MESSAGE]
        memory_ids = [record_id for record_type, record_id in keys if record_type != _MESSAGE]
        found: dict[Key, Entity] = {}
        for statement in messages_by_ids(self.names, message_ids):
            for row in fetch_all(connection, statement):
                message = message_from_row(row)
                found[(_MESSAGE, message.id)] = message
        records: dict[str, MemoryRecord] = {}
        for statement in memory_records_by_ids(self.names, memory_ids):
            for row in fetch_all(connection, statement):
                record = record_from_row(row)
                records[record.id] = record
        for key in keys:
            if key[0] == _MESSAGE:
                loaded[key] = found.get(key)
            else:
                # Keyed by the chunk's type; the record's own type names the hit.
                loaded[key] = records.get(key[1])

    # --- linked records -----------------------------------------------------------------------

    def _linked(
        self, connection: Any, query: SearchQuery, roots: Sequence[str]
    ) -> dict[str, tuple[LinkedRecord, ...]]:
        """Each root's linked-record tree (``shortest_path_tree`` + ``build_tree``).

        Breadth first over every root at once: depth ``d`` loads all links of the records first
        reached at depth ``d - 1`` from any root, with each neighbour that passes scope, type and
        expiry in SQL; a neighbour is walked on only if it passes the domain's filter. A record
        within ``num_hops - 1`` of some root is therefore fully linked, which is every record the
        domain function may ask ``links_of`` about (its distance from that root is no smaller).
        """
        if query.num_hops <= 0 or query.max_linked_results <= 0 or not roots:
            return {}
        records: dict[str, MemoryRecord] = {}
        links: dict[str, dict[str, RecordLink]] = {}
        verdicts: dict[str, bool] = {}

        def admits(record_id: str) -> bool:
            verdict = verdicts.get(record_id)
            if verdict is None:
                record = records.get(record_id)
                verdict = record is not None and query.admits_record(record, direct=False)
                verdicts[record_id] = verdict
            return verdict

        frontier = sorted(set(roots))
        walked: set[str] = set()
        for _depth in range(query.num_hops):
            if not frontier:
                break
            for statement in graph_steps(self.names, query, frontier):
                for row in fetch_all(connection, statement):
                    from_id, link, neighbour = graph_row(row)
                    links.setdefault(from_id, {})[link.id] = link
                    records[neighbour.id] = neighbour
            walked.update(frontier)
            reached: set[str] = set()
            for record_id in frontier:
                for link in links.get(record_id, {}).values():
                    other = link.target_id if link.source_id == record_id else link.source_id
                    if other not in walked and admits(other):
                        reached.add(other)
            frontier = sorted(reached)

        def links_of(record_id: str) -> list[RecordLink]:
            return sorted(links.get(record_id, {}).values(), key=lambda link: link.id)

        trees: dict[str, tuple[LinkedRecord, ...]] = {}
        for root in dict.fromkeys(roots):
            edges = shortest_path_tree(
                root,
                num_hops=query.num_hops,
                max_linked_results=query.max_linked_results,
                links_of=links_of,
                admits=admits,
            )
            trees[root] = build_tree(root, edges, {edge.record_id: records[edge.record_id] for edge in edges})
        return trees
