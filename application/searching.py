"""Application layer: turning the public ``search`` arguments into a store query, and back.

The scoping rules (which the client and thread share, with different defaults) live here:
a client search must name its user (``user_id=None`` means "unscoped records only"); an
agent id narrows exactly; a thread id narrows only with ``exact_thread_match=True``.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from palimpsest.domain.errors import InvalidSearchError, ModelUnavailableError, ValidationError
from palimpsest.domain.model import (
    MemoryRecord,
    Message,
    RecordLink,
)
from palimpsest.domain.ports import MemoryStore, SearchSession
from palimpsest.domain.search import (
    DEFAULT_MAX_LINKED_RESULTS,
    MAX_SEARCH_K,
    CandidateKey,
    ScopeFilter,
    SearchHit,
    SearchQuery,
    hydrate,
    run_search,
    shortest_path_trees,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .budgets import apply_token_budgets, warn_small_token_budget
from .config import RetrievalConfig
from .embedding import EmbedderHealth, RecentVectors
from .ports import Embedder, SummaryText
from .quotes import quoted
from .requests import SearchRequest, SearchScope, SearchStrategy, resolve_scope
from .requests import _record_types as _record_types
from .results import SearchResult
from .retrieval import (
    COLLAPSE_DUPLICATES,
    CURRENT_FIRST,
    MERGE_PROVENANCE,
    VERSION_HISTORY,
    Effect,
    Stage,
    StageContext,
    asks_across_versions,
    asks_for_latest,
    latest_stage,
    rerank_stage,
    run_stage,
    speaker_stage,
    third_party_stage,
    third_party_test,
    walk_query,
)

__all__ = ["SearchScope", "SearchStrategy", "Searcher", "resolve_scope", "within_token_budgets"]

DEFAULT_MAX_RESULTS = 10


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


RECENT_QUERIES = 256
"""How many query vectors a client keeps (by exact text; its embedder is fixed for its life)."""


DEEPER_SEARCHES = 2
"""How many times a search whose refined pool fell short of ``k`` usable hits is run again deeper."""
DEEPER_FACTOR = 4
"""How much deeper each time (pool and fusion lists, up to 1,000)."""


@dataclass(frozen=True, slots=True)
class _SessionGraph:
    """The link graph of one search session (:class:`~.retrieval.LinkGraph`), read with the
    refinements' :func:`~.retrieval.walk_query`."""

    session: SearchSession
    query: SearchQuery

    def links_around(self, frontier: Sequence[str]) -> Mapping[str, Sequence[RecordLink]]:
        return self.session.links_around(frontier, self.query)

    def load(self, record_ids: Sequence[str]) -> Mapping[str, MemoryRecord]:
        loaded = self.session.load([(False, record_id) for record_id in record_ids])
        return {key[1]: record for key, record in loaded.items() if isinstance(record, MemoryRecord)}


def _thinning(stages: Sequence[Stage]) -> tuple[Sequence[Stage], Sequence[Stage]]:
    """The leading ``DROP`` stages (run on every candidate pool tried, to count what is left)
    and the rest (run once, on the pool chosen)."""
    n = 0
    while n < len(stages) and stages[n].effect is Effect.DROP:
        n += 1
    return stages[:n], stages[n:]


def _row(vector: Sequence[float]) -> np.ndarray:
    """A vector as a float32 row, without a float-by-float copy of a float32 buffer (stores answer
    ``array("f")``)."""
    if isinstance(vector, array) and vector.typecode == "f":
        return np.frombuffer(vector, dtype=np.float32)
    return np.asarray(vector, dtype=np.float32)


class Searcher:
    """Runs public searches: embeds the query, runs the search pipeline and the refinements in
    one read of the store, wraps and budgets results."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None,
        strategy: SearchStrategy,
        retrieval: RetrievalConfig | None = None,
        health: EmbedderHealth | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._health = health if health is not None else EmbedderHealth()
        self._strategy = SearchStrategy.parse(strategy)
        self._retrieval = retrieval if retrieval is not None else RetrievalConfig()
        self._recent = RecentVectors(RECENT_QUERIES)
        self._summaries = RecentVectors(RECENT_QUERIES)  # a digest of a card's query and quotes -> its vector

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
            or r.speaker_penalty > 0
            or r.reranker is not None
        )

    def _pool(self, k: int) -> int:
        return min(MAX_SEARCH_K, max(k, self._retrieval.candidates)) if self.refines else k

    def stages(self, text: str, *, is_question: bool, include_invalid: bool) -> list[Stage]:
        """The refinements a search for ``text`` runs, in order (D20): thinning (provenance,
        duplicates), third parties demoted (D21), other speakers demoted, the reranker, the recency blend for a question
        about the latest state, then either current memories before their history or, for a
        question across versions, the version histories (D22) and the thinning again (a version
        placed early retires its message's later hit). ``is_question=False`` (the library's own
        lookups by a record's text) leaves out those that read the query's intent."""
        r = self._retrieval
        thinning = [
            stage
            for stage, on in ((MERGE_PROVENANCE, r.merge_provenance), (COLLAPSE_DUPLICATES, r.collapse_duplicates))
            if on
        ]
        stages = list(thinning)
        demoted = third_party_test(text) if r.third_party_penalty > 0 and is_question else None
        if demoted is not None:
            stages.append(third_party_stage(r.third_party_penalty, demoted))
        if r.speaker_penalty > 0 and is_question:
            stages.append(speaker_stage(r.speaker_penalty))
        if r.reranker is not None:
            stages.append(rerank_stage(r.reranker, r.rerank_candidates))
        if r.latest_weight > 0 and is_question and asks_for_latest(text):
            stages.append(latest_stage(r.latest_weight))
        across = is_question and asks_across_versions(text)
        if r.current_first and include_invalid and not across:
            stages.append(CURRENT_FIRST)
        if r.version_history and include_invalid and across:
            stages.append(VERSION_HISTORY)
            stages.extend(thinning)
        return stages

    def _first_pool(self, query: SearchQuery, k: int, stages: Sequence[Stage]) -> SearchQuery | None:
        """A shorter candidate pool that usually settles the best ``k``, or ``None``.

        A hybrid search's fused order does not depend on ``k`` as long as the fusion depth stays
        (D20), so the first ``j`` hits of a pool of ``j`` are the first ``j`` of the full pool.
        A stage that reads the whole pool (its ``settles`` is ``None``: a reranker, the recency
        blend, the version histories) rules a shorter pool out; the others say, from the hits
        the shorter pool leaves after thinning, whether those are the full pool's first ``k``
        (:meth:`_candidates`), without loading and thinning the rest.
        """
        if query.vector is None or query.text is None or any(stage.settles is None for stage in stages):
            return None
        first = k + max(k, 10)
        if first >= query.k:
            return None
        shorter = replace(query, k=first)
        return shorter if shorter.fusion_depth == query.fusion_depth else None

    def _candidates(
        self, session: SearchSession, query: SearchQuery, context: StageContext, stages: Sequence[Stage]
    ) -> tuple[list[SearchHit], list[SearchHit]]:
        """The search's hits for ``query`` and the same thinned (the leading ``DROP`` stages):
        from a shorter pool when that settles the best ``k`` (see :meth:`_first_pool`), else
        from the whole pool, searched deeper while the hits that count (a stage's ``counts``:
        not a demoted third party's) fall short of ``k``."""
        k = context.k
        thinning, _rest = _thinning(stages)
        counted = [stage.counts for stage in stages if stage.counts is not None]

        def thinned(hits: list[SearchHit]) -> list[SearchHit]:
            pool_context = replace(context, query=query, pool=hits)
            out = hits
            for stage in thinning:
                out = run_stage(stage, out, pool_context)
            return out

        shorter = self._first_pool(query, k, stages)
        if shorter is not None:
            hits = run_search(session, shorter)
            thin = thinned(hits)
            if len(hits) < shorter.k:  # the store had no more candidates
                return hits, thin
            bound = hits[-1].score
            if len(thin) >= k and all(stage.settles is not None and stage.settles(thin, k, bound) for stage in stages):
                return hits, thin
        for _ in range(DEEPER_SEARCHES + 1):
            hits = run_search(session, query)
            thin = thinned(hits)
            usable = sum(1 for hit in thin if all(count(hit) for count in counted))
            if usable >= k or len(hits) < query.k or query.k >= MAX_SEARCH_K:
                break
            # The refinements left fewer than k hits worth returning (repeats collapsed, third
            # parties demoted) and the store may hold more: look deeper.
            query = replace(query, k=min(MAX_SEARCH_K, query.k * DEEPER_FACTOR))
        return hits, thin

    def _refine(
        self, session: SearchSession, hits: list[SearchHit], context: StageContext, stages: Sequence[Stage]
    ) -> list[SearchHit]:
        """The stages after thinning (:meth:`_candidates` ran those), cut to ``k``, and every
        record an ``ADD`` stage brought in scored (:meth:`_scored`)."""
        _thinning_stages, rest = _thinning(stages)
        added: set[CandidateKey] = set()
        for stage in rest:
            before = {(isinstance(h.record, Message), h.id) for h in hits}
            hits = run_stage(stage, hits, context)
            if stage.effect is Effect.ADD:
                added.update(key for h in hits if (key := (isinstance(h.record, Message), h.id)) not in before)
        return self._scored(session, context.query, hits[: context.k], added)

    @staticmethod
    def _scored(
        session: SearchSession, query: SearchQuery, hits: list[SearchHit], added: set[CandidateKey]
    ) -> list[SearchHit]:
        """``hits`` with every memory a stage brought in (``added``: placeholders) replaced by
        the hit the same search gives it in the same read: its real score and its linked tree,
        as if the search had found it (one search narrowed to those records). A memory that
        matches neither the query's vector nor its words scores 0, with its real linked tree."""
        ids = [hit.id for hit in hits if (False, hit.id) in added and isinstance(hit.record, MemoryRecord)]
        if not ids:
            return hits
        found = Searcher._hits_for(session, query, ids)
        return [found.get(hit.id, hit) if (False, hit.id) in added else hit for hit in hits]

    @staticmethod
    def _hits_for(session: SearchSession, query: SearchQuery, ids: Sequence[str]) -> dict[str, SearchHit]:
        """The hits the search ``query`` gives the memories ``ids`` in the same read (one
        search narrowed to those records): their real scores and linked trees; a memory that
        matches neither the query's vector nor its words scores 0, with its real linked tree."""
        if not ids:
            return {}
        found = {hit.id: hit for hit in run_search(session, replace(query, k=len(ids), record_ids=frozenset(ids)))}
        missing = [record_id for record_id in ids if record_id not in found]
        if missing:
            trees = shortest_path_trees(
                missing,
                num_hops=query.num_hops,
                max_linked_results=query.max_linked_results,
                links_around=lambda frontier: session.links_around(frontier, query),
            )
            unmatched = hydrate(session, query, [((False, record_id), 0.0) for record_id in missing], trees)
            found.update((hit.id, hit) for hit in unmatched)
        return found

    def strategy_for(self, strategy: SearchStrategy | NotSetType) -> SearchStrategy:
        """The client's strategy, or a valid per-call one."""
        if isinstance(strategy, NotSetType):
            return self._strategy
        parsed = SearchStrategy.parse(strategy)
        if parsed is not SearchStrategy.KEYWORD and self._embedder is None:
            raise InvalidSearchError(f"search_strategy={parsed.value!r} needs a client with an embedder.")
        return parsed

    def query_vector(
        self, text: str, strategy: SearchStrategy | NotSetType = NOTSET
    ) -> tuple[float, ...] | None:
        """The query's vector, from the client's recent queries when it was embedded lately (a
        card on an unchanged thread asks with the same summary every time). ``None`` when the
        embedder is unavailable: the search is then a keyword search (D43; the outage's one
        WARNING line says so)."""
        if self._embedder is None or self.strategy_for(strategy) == "keyword":
            return None
        cached = self._recent.get(text)
        if cached is not None:
            return cached
        try:
            vector = tuple(map(float, self._embedder.embed([text], is_query=True)[0]))
        except ModelUnavailableError as exc:
            self._health.unavailable(exc)
            return None
        self._health.answered()
        self._recent.put(text, vector)
        return vector

    def query_vectors(self, texts: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The query vectors of ``texts`` (an embedder is required), from the recent queries when
        embedded lately; the others in one call."""
        assert self._embedder is not None
        found: dict[str, tuple[float, ...]] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            cached = self._recent.get(text)
            if cached is None:
                missing.append(text)
            else:
                found[text] = cached
        if missing:
            for text, raw in zip(missing, self._embedder.embed(missing, is_query=True), strict=True):
                vector = tuple(float(x) for x in raw)
                self._recent.put(text, vector)
                found[text] = vector
        return found

    def summary_vector(self, thread_id: str, query: str, summary: SummaryText) -> tuple[float, ...] | None:
        """A context card's query vector (ARCHITECTURE.md D27), for the card's ``query`` (the
        thread's ``summary`` and topics). When the summary quotes its thread's messages
        (:mod:`.quotes`): the mean of its sentences' vectors, each weighted by its length, a
        quoted sentence's vector being its message's stored one (read here: no model call) and
        any other sentence's its own query vector (one of the recent queries, or embedded).
        Without a quoted message that has a stored vector: the query's own vector
        (:meth:`query_vector`), as before. The vector is kept, like a recent query's, by the
        query and its quotes (a card whose summary did not change reads nothing; a quoted
        message edited outside its quoted sentences keeps its older vector there until the
        summary changes). ``None`` without an embedder, with the keyword strategy, or when the
        embedder is unavailable (the card's search is then a keyword search)."""
        if self._embedder is None or self._strategy == "keyword":
            return None
        try:
            return self._summary_vector(thread_id, query, summary)
        except ModelUnavailableError as exc:
            self._health.unavailable(exc)
            return None

    def _summary_vector(self, thread_id: str, query: str, summary: SummaryText) -> tuple[float, ...] | None:
        # Kept by what it is made of: a refresh that leaves the text and its quotes as they were
        # (a new revision of the same summary) finds it again.
        key = hashlib.blake2b("\x1f".join([query, *(i or "" for i in summary.quotes)]).encode()).hexdigest()
        cached = self._summaries.get(key)
        if cached is not None:
            return cached
        quotes = quoted(summary.text, summary.quotes)
        ids = list(dict.fromkeys(message_id for _, message_id in quotes if message_id is not None))
        stored: Mapping[str, Sequence[float]] = {}
        if ids:
            with self._store.reading() as uow:
                stored = uow.messages.vectors(thread_id, ids)
        vector: tuple[float, ...] | None = None
        if stored:
            own = self.query_vectors([sentence for sentence, message_id in quotes if message_id not in stored])
            rows = [stored[m] if m is not None and m in stored else own[sentence] for sentence, m in quotes]
            weights = np.array([len(sentence) for sentence, _ in quotes], dtype=np.float64)
            total = weights @ np.vstack([_row(row) for row in rows]).astype(np.float64)
            norm = float(np.linalg.norm(total))
            vector = tuple((total / norm).tolist()) if norm > 0 else None
        if vector is None:
            vector = self.query_vector(query)
        if vector is not None:
            self._summaries.put(key, vector)
        return vector

    def search(self, request: SearchRequest, *, now: datetime) -> list[SearchResult]:
        """A public search (client or thread), its request parsed and its scope resolved.
        A positive ``token_budget`` below 1000 is warned about (once), as the reference does."""
        warn_small_token_budget(request.token_budget)
        return self.run(
            request.query,
            now=now,
            scope=request.scoped,
            max_results=request.max_results,
            record_types=request.record_types,
            metadata_filter=request.metadata_filter,
            num_hops=request.num_hops,
            max_linked_results=request.max_linked_results,
            include_invalid_results=request.include_invalid_results,
            token_budget=request.token_budget,
            soft_token_budget=request.soft_token_budget,
            search_strategy=request.search_strategy,  # type: ignore[arg-type]
        )

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
        # The arguments are all checked (a query without its vector yet) before the query is embedded.
        search_query = SearchQuery(
            k=self._pool(k),
            now=now,
            text=query,
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
            neighbour_weight=self._retrieval.neighbour_weight,
            neighbour_radius=self._retrieval.neighbour_radius,
        )
        if strategy == "keyword":
            qvec = None
        else:
            qvec = self.query_vector(query, strategy) if isinstance(vector, NotSetType) else vector
        if qvec is not None:  # a vector search leaves the words out
            search_query = replace(search_query, vector=tuple(qvec), text=None if strategy == "vector" else query)
        stages = self.stages(query, is_question=is_question, include_invalid=include_invalid)
        with self._store.searching() as session:
            context = StageContext(
                text=query,
                query=search_query,
                k=k,
                pool=(),
                graph=_SessionGraph(session, walk_query(search_query)),
                scored=lambda ids: self._hits_for(session, search_query, ids),
            )
            pool, thinned = self._candidates(session, search_query, context, stages)
            hits = self._refine(session, thinned, replace(context, pool=pool), stages)
        results = [SearchResult.from_hit(hit, include_invalid_results=include_invalid) for hit in hits]
        return within_token_budgets(results, token_budget, soft_token_budget)
