"""Application layer: turning the public ``search`` arguments into a store query, and back.

The scoping rules (which the client and thread share, with different defaults) live here:
a client search must name its user (``user_id=None`` means "unscoped records only"); an
agent id narrows exactly; a thread id narrows only with ``exact_thread_match=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from palimpsest.domain.errors import ArgumentTypeError, InvalidScopeError, InvalidSearchError, ValidationError
from palimpsest.domain.model import MemoryRecord, RecordType, check_optional_id, parse_record_type
from palimpsest.domain.ports import MemoryStore, UnitOfWork
from palimpsest.domain.search import (
    DEFAULT_MAX_LINKED_RESULTS,
    MAX_SEARCH_K,
    LinkedRecord,
    ScopeFilter,
    ScopeValue,
    SearchHit,
    SearchQuery,
    build_tree,
    shortest_path_tree,
)
from palimpsest.domain.sentinel import ANY, NOTSET, NotSetType

from .budgets import apply_token_budgets
from .config import RetrievalConfig
from .ports import Embedder
from .results import SearchResult
from .retrieval import (
    asks_across_versions,
    asks_for_latest,
    brought_in,
    collapse_duplicates,
    current_before_history,
    demote_third_parties,
    demoted_score,
    latest_first,
    merge_provenance,
    rerank,
    third_party_test,
    with_version_history,
)

__all__ = ["SearchScope", "SearchStrategy", "Searcher", "resolve_scope", "within_token_budgets"]

SearchStrategy = Literal["vector", "keyword", "hybrid"]

DEFAULT_MAX_RESULTS = 10


@dataclass(frozen=True, slots=True)
class SearchScope:
    """An explicit search scope, the alternative to passing ids and flags one by one."""

    user_id: str | None | NotSetType = NOTSET
    agent_id: str | None | NotSetType = NOTSET
    thread_id: str | None | NotSetType = NOTSET
    exact_user_match: bool | NotSetType = NOTSET
    exact_agent_match: bool | NotSetType = NOTSET
    exact_thread_match: bool | NotSetType = NOTSET


def _dimension(
    value: str | None | NotSetType, exact: bool | NotSetType, *, narrows_by_default: bool
) -> ScopeValue:
    if not isinstance(exact, (bool, NotSetType)):
        raise ValidationError("exact_*_match flags must be True or False.")
    if not isinstance(value, NotSetType):
        check_optional_id(value, "scope id")
    if exact is False:
        return ANY
    if exact is True:
        return None if isinstance(value, NotSetType) else value
    if isinstance(value, NotSetType) or not narrows_by_default:
        return ANY
    return value


def resolve_scope(
    *,
    user_id: str | None | NotSetType,
    agent_id: str | None | NotSetType,
    thread_id: str | None | NotSetType,
    exact_user_match: bool | NotSetType,
    exact_agent_match: bool | NotSetType,
    exact_thread_match: bool | NotSetType,
    scope: SearchScope | NotSetType,
    require_user: bool,
) -> ScopeFilter:
    """The store-level scope filter for a public search call."""
    if not isinstance(scope, NotSetType):
        if not isinstance(scope, SearchScope):
            raise ValidationError("scope must be a SearchScope.")
        explicit = (user_id, agent_id, thread_id, exact_user_match, exact_agent_match, exact_thread_match)
        if any(not isinstance(v, NotSetType) for v in explicit):
            raise ValidationError("Provide either 'scope' or explicit user/agent/thread ids, not both.")
        user_id, agent_id, thread_id = scope.user_id, scope.agent_id, scope.thread_id
        exact_user_match, exact_agent_match, exact_thread_match = (
            scope.exact_user_match,
            scope.exact_agent_match,
            scope.exact_thread_match,
        )
    if require_user:
        if isinstance(user_id, NotSetType):
            raise InvalidScopeError(
                "Client searches must be scoped to a user: pass user_id=... (or user_id=None for "
                "unscoped records only), or scope=SearchScope(user_id=...)."
            )
        if exact_user_match is False:
            raise InvalidScopeError(
                "Client searches require exact user scoping; do not set exact_user_match=False."
            )
    return ScopeFilter(
        user_id=_dimension(user_id, exact_user_match, narrows_by_default=True),
        agent_id=_dimension(agent_id, exact_agent_match, narrows_by_default=True),
        thread_id=_dimension(thread_id, exact_thread_match, narrows_by_default=False),
    )


def within_token_budgets(
    results: Sequence[SearchResult], token_budget: object, soft_token_budget: object
) -> list[SearchResult]:
    """:func:`~.budgets.apply_token_budgets` over the results' formatted content, which is
    rendered only when there is a budget to apply (rendering is most of a result's cost)."""
    if all(b is None or isinstance(b, NotSetType) for b in (token_budget, soft_token_budget)):
        return list(results)
    return apply_token_budgets(
        results, [r.formatted_content for r in results], token_budget, soft_token_budget
    )


def _record_types(value: Iterable[str] | None | NotSetType) -> frozenset[RecordType] | None:
    if isinstance(value, NotSetType) or value is None:
        return None
    if isinstance(value, str):
        raise ValidationError("record_types must be a list of record type names, not a string.")
    if not isinstance(value, Iterable):
        raise ArgumentTypeError("record_types must be a list of record type names or None.")
    items = list(value)
    if not all(isinstance(t, str) for t in items):
        raise ArgumentTypeError("record_types entries must be strings.")
    return frozenset(parse_record_type(t) for t in items)


DEEPER_SEARCHES = 2
"""How many times a search whose refined pool fell short of ``k`` usable hits is run again deeper."""
DEEPER_FACTOR = 4
"""How much deeper each time (pool and fusion lists, up to 1,000)."""


def _linked_tree(uow: UnitOfWork, record_id: str, query: SearchQuery) -> tuple[LinkedRecord, ...]:
    """The linked-record tree a store builds for a memory hit (``shortest_path_tree`` under the
    query's filters but status), read through the ports."""
    if query.num_hops <= 0 or query.max_linked_results <= 0:
        return ()
    loaded: dict[str, MemoryRecord | None] = {}

    def admits(other: str) -> bool:
        if other not in loaded:
            loaded[other] = uow.records.get(other)
        record = loaded[other]
        return record is not None and query.admits_record(record, direct=False)

    edges = shortest_path_tree(
        record_id,
        num_hops=query.num_hops,
        max_linked_results=query.max_linked_results,
        links_of=uow.links.touching,
        admits=admits,
    )
    records = {e.record_id: r for e in edges if (r := loaded.get(e.record_id)) is not None}
    return build_tree(record_id, edges, records)


class Searcher:
    """Runs public searches: embeds the query, queries the store, wraps and budgets results."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None,
        strategy: SearchStrategy,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._strategy = strategy
        self._retrieval = retrieval if retrieval is not None else RetrievalConfig()

    @property
    def strategy(self) -> SearchStrategy:
        return self._strategy

    @property
    def retrieval(self) -> RetrievalConfig:
        return self._retrieval

    @property
    def refines(self) -> bool:
        """Whether searches fetch a larger candidate pool for the refinements (D20)."""
        r = self._retrieval
        return (
            r.merge_provenance
            or r.collapse_duplicates
            or r.current_first
            or r.version_history
            or r.latest_weight > 0
            or r.third_party_penalty > 0
            or r.reranker is not None
        )

    def _pool(self, k: int) -> int:
        return min(MAX_SEARCH_K, max(k, self._retrieval.candidates)) if self.refines else k

    def _thin(self, hits: list[SearchHit]) -> list[SearchHit]:
        """The refinements that only drop hits (provenance, duplicates), in the fused order."""
        r = self._retrieval
        if r.merge_provenance:
            hits = merge_provenance(hits)
        if r.collapse_duplicates:
            hits = collapse_duplicates(hits)
        return hits

    def _first_pool(self, query: SearchQuery, k: int, latest: bool, versions: bool) -> SearchQuery | None:
        """A shorter candidate pool that usually settles the best ``k``, or ``None``.

        A hybrid search's fused order does not depend on ``k`` as long as the fusion depth stays
        (D20), so the first ``j`` hits of a pool of ``j`` are the first ``j`` of the full pool.
        Thinning is decided hit by hit in that order, except that a retired memory kept for its
        text gives its slot to a later valid copy; reordering (a reranker, a blend with
        recency) reads the whole pool, and so does following version histories (a message's
        memories may rank anywhere), and then nothing is shortened. So, when the first hits
        thinned leave ``k`` of which none is retired, they are exactly the full pool's first
        ``k``, without loading and thinning the rest (:meth:`_candidates`).
        """
        r = self._retrieval
        if query.vector is None or query.text is None or r.reranker is not None or latest or versions:
            return None
        first = k + max(k, 10)
        if first >= query.k:
            return None
        shorter = replace(query, k=first)
        return shorter if shorter.fusion_depth == query.fusion_depth else None

    def _candidates(
        self,
        query: SearchQuery,
        k: int,
        latest: bool,
        demoted: Callable[[SearchHit], bool] | None = None,
        versions: bool = False,
    ) -> tuple[list[SearchHit], list[SearchHit]]:
        """The store's hits for ``query`` and the same thinned: from a shorter pool when that
        settles the best ``k`` (see :meth:`_first_pool`), else from the whole pool. ``demoted``:
        for a first-person question, which hits will be demoted as third parties' (a shorter
        pool that holds one is settled only if no later hit can overtake it); ``versions``:
        whether version histories will be followed."""
        shorter = self._first_pool(query, k, latest, versions)
        if shorter is not None:
            hits = self._store.search(shorter)
            thinned = self._thin(hits)
            if len(hits) < shorter.k:  # the store had no more candidates
                return hits, thinned
            if (
                len(thinned) >= k
                and not (
                    self._retrieval.collapse_duplicates
                    and any(isinstance(h.record, MemoryRecord) and not h.record.is_valid for h in thinned[:k])
                )
                and self._settled_after_demotion(thinned, k, demoted, hits[-1].score)
            ):
                return hits, thinned
        for _ in range(DEEPER_SEARCHES + 1):
            hits = self._store.search(query)
            thinned = self._thin(hits)
            usable = len(thinned) if demoted is None else sum(1 for h in thinned if not demoted(h))
            if usable >= k or len(hits) < query.k or query.k >= MAX_SEARCH_K:
                break
            # The refinements left fewer than k hits worth returning (repeats collapsed, third
            # parties demoted) and the store may hold more: look deeper.
            query = replace(query, k=min(MAX_SEARCH_K, query.k * DEEPER_FACTOR))
        return hits, thinned

    def _settled_after_demotion(
        self, thinned: Sequence[SearchHit], k: int, demoted: Callable[[SearchHit], bool] | None, bound: float
    ) -> bool:
        """Whether the best ``k`` of a shorter pool's ``thinned`` hits stay the best ``k`` once
        third-party hits are demoted: every hit after the pool scores at most ``bound`` (the
        pool's last fused score), so the ``k``-th best demoted score must reach it."""
        if demoted is None or not any(demoted(h) for h in thinned):
            return True
        penalty = self._retrieval.third_party_penalty
        scores = sorted((demoted_score(h, penalty, demoted) for h in thinned), reverse=True)
        return len(scores) >= k and scores[k - 1] >= bound

    def _refine(
        self,
        text: str,
        query: SearchQuery,
        k: int,
        hits: list[SearchHit],
        *,
        latest: bool,
        is_question: bool,
        demoted: Callable[[SearchHit], bool] | None = None,
        versions: bool = False,
        pool: Sequence[SearchHit] = (),
    ) -> list[SearchHit]:
        """The configured refinements after thinning (:meth:`_thin`), cut to ``k``; ``latest``:
        whether the query asks for the latest state (and the recency blend applies);
        ``demoted``: the third-party test of a first-person question (:func:`third_party_test`);
        ``versions``: whether the other versions follow the memories (:func:`with_version_history`),
        ``pool`` the hits before thinning."""
        r = self._retrieval
        if demoted is not None:
            hits = demote_third_parties(hits, r.third_party_penalty, demoted)
        if r.reranker is not None:
            hits = rerank(r.reranker, text, hits, r.rerank_candidates, now=query.now)
        if latest:
            hits = latest_first(hits, r.latest_weight)
        if (
            r.current_first
            and query.include_invalid
            and any(isinstance(h.record, MemoryRecord) and not h.record.is_valid for h in hits[:k])
            and not (is_question and asks_across_versions(text))
        ):
            with self._store.reading() as uow:
                hits = current_before_history(hits[:k], query, uow.links.touching, uow.records.get, pool=pool)
        if versions:
            with self._store.reading() as uow:
                hits = with_version_history(hits, pool, query, uow.links.touching, uow.records.get, limit=k)
            hits = self._thin(hits)  # a version placed early retires its message's later hit
        return self._scored(query, hits[:k], pool)

    def _scored(self, query: SearchQuery, hits: list[SearchHit], pool: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` with every memory a refinement brought in (:func:`brought_in`) replaced by
        the hit the store gives it for ``query``: its real score and its linked tree, as if the
        search had found it (one search narrowed to those records). A memory that matches
        neither the query's vector nor its words scores 0, with the same linked tree."""
        records = brought_in(hits, pool)
        if not records:
            return hits
        found = {
            hit.id: hit
            for hit in self._store.search(
                replace(query, k=len(records), record_ids=frozenset(r.id for r in records))
            )
        }
        missing = [r for r in records if r.id not in found]
        if missing:
            with self._store.reading() as uow:
                for record in missing:
                    found[record.id] = SearchHit(
                        record=record, score=0.0, distance=1.0, linked=_linked_tree(uow, record.id, query)
                    )
        return [found.get(hit.id, hit) for hit in hits]

    def strategy_for(self, strategy: SearchStrategy | NotSetType) -> SearchStrategy:
        """The client's strategy, or a valid per-call one."""
        if isinstance(strategy, NotSetType):
            return self._strategy
        if strategy not in ("vector", "keyword", "hybrid"):
            raise InvalidSearchError("search_strategy must be 'vector', 'keyword' or 'hybrid'.")
        if strategy != "keyword" and self._embedder is None:
            raise InvalidSearchError(f"search_strategy={strategy!r} needs a client with an embedder.")
        return strategy

    def query_vector(
        self, text: str, strategy: SearchStrategy | NotSetType = NOTSET
    ) -> tuple[float, ...] | None:
        if self._embedder is None or self.strategy_for(strategy) == "keyword":
            return None
        return tuple(float(x) for x in self._embedder.embed([text], is_query=True)[0])

    def run(
        self,
        query: str,
        *,
        now: datetime,
        scope: ScopeFilter,
        max_results: int | NotSetType = NOTSET,
        record_types: Iterable[str] | None | NotSetType = NOTSET,
        metadata_filter: Mapping[str, Any] | None | NotSetType = NOTSET,
        num_hops: int | NotSetType = NOTSET,
        max_linked_results: int | NotSetType = NOTSET,
        include_invalid_results: bool | NotSetType = NOTSET,
        token_budget: int | None | NotSetType = NOTSET,
        soft_token_budget: int | None | NotSetType = NOTSET,
        vector: Sequence[float] | None | NotSetType = NOTSET,
        search_strategy: SearchStrategy | NotSetType = NOTSET,
        is_question: bool = True,
    ) -> list[SearchResult]:
        """``is_question=False`` for the library's own lookups by a record's text (link and
        past-memory candidates): the refinements that read the query's intent ("latest",
        "previously") then stay out."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidSearchError("query must be a non-empty string.")
        strategy = self.strategy_for(search_strategy)
        k = DEFAULT_MAX_RESULTS if isinstance(max_results, NotSetType) else max_results
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidSearchError("max_results must be at least 1; allow at least one search result.")
        if k > MAX_SEARCH_K:
            raise InvalidSearchError("max_results exceeds the maximum allowed search result count (1000).")
        if not isinstance(metadata_filter, (dict, NotSetType)) and metadata_filter is not None:
            raise ValidationError("metadata_filter must be a dict or None.")
        include_invalid = True if isinstance(include_invalid_results, NotSetType) else include_invalid_results
        if not isinstance(include_invalid, bool):
            raise ValidationError("include_invalid_results must be True or False.")
        if strategy == "keyword":
            qvec = None
        else:
            qvec = self.query_vector(query, strategy) if isinstance(vector, NotSetType) else vector
        text = None if strategy == "vector" and qvec is not None else query
        search_query = SearchQuery(
            k=self._pool(k),
            now=now,
            vector=tuple(qvec) if qvec is not None else None,
            text=text,
            scope=scope,
            record_types=_record_types(record_types),
            include_invalid=include_invalid,
            metadata_filter=None if isinstance(metadata_filter, NotSetType) else metadata_filter,
            num_hops=0 if isinstance(num_hops, NotSetType) else num_hops,
            max_linked_results=DEFAULT_MAX_LINKED_RESULTS
            if isinstance(max_linked_results, NotSetType)
            else max_linked_results,
            fusion_k=k,  # the fused order must not depend on the refinements' larger pool
            fusion=self._retrieval.fusion,  # type: ignore[arg-type]
            dense_weight=self._retrieval.dense_weight,
            rrf_k=self._retrieval.rrf_k,
        )
        latest = self._retrieval.latest_weight > 0 and is_question and asks_for_latest(query)
        demoted = third_party_test(query) if self._retrieval.third_party_penalty > 0 and is_question else None
        versions = (
            self._retrieval.version_history and is_question and include_invalid and asks_across_versions(query)
        )
        pool, thinned = self._candidates(search_query, k, latest, demoted, versions)
        hits = self._refine(
            query,
            search_query,
            k,
            thinned,
            latest=latest,
            is_question=is_question,
            demoted=demoted,
            versions=versions,
            pool=pool,
        )
        results = [SearchResult.from_hit(hit, include_invalid_results=include_invalid) for hit in hits]
        return within_token_budgets(results, token_budget, soft_token_budget)
