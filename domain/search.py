"""Domain layer: search requests, results, graph expansion and rank fusion (pure Python).

A store implements *how* candidates are found (numpy scan, BM25 posting index, Oracle vector index); what a
request means, how linked records are chosen around a hit, and how ranked lists are fused are
defined here once, so every store answers the same question the same way.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, TypeVar

from .errors import InvalidSearchError, ValidationError, VectorDimensionError
from .metadata_filter import matches, validate_filter
from .model import (
    SEARCHABLE_RECORD_TYPES,
    MemoryRecord,
    Message,
    RecordLink,
    RecordType,
    check_id,
    check_optional_id,
    check_time,
    parse_record_type,
)
from .sentinel import ANY, AnyType

__all__ = [
    "DEFAULT_DENSE_WEIGHT",
    "DEFAULT_MAX_LINKED_RESULTS",
    "MAX_NUM_HOPS",
    "MAX_SEARCH_K",
    "NO_KEYWORD_CANDIDATES",
    "RRF_K",
    "CandidateKey",
    "Fusion",
    "KeywordCandidates",
    "LinkedRecord",
    "ScopeFilter",
    "SearchHit",
    "SearchQuery",
    "TreeEdge",
    "build_tree",
    "check_neighbour_radius",
    "check_neighbour_weight",
    "check_vector",
    "fuse",
    "hydrate",
    "keyword_score",
    "reciprocal_rank_fusion",
    "run_search",
    "shortest_path_tree",
    "shortest_path_trees",
    "with_keyword_neighbours",
    "with_neighbours",
]

MAX_NUM_HOPS: Final = 5
MAX_SEARCH_K: Final = 1000
DEFAULT_MAX_LINKED_RESULTS: Final = 100
RRF_K: Final = 60
DEFAULT_DENSE_WEIGHT: Final = 0.5

K = TypeVar("K", bound=Hashable)

ScopeValue = str | None | AnyType


@dataclass(frozen=True, slots=True)
class ScopeFilter:
    """Which scopes a search may return, per dimension.

    ``ANY`` leaves a dimension unconstrained; a string matches exactly; ``None`` matches only
    records that are unscoped on that dimension.
    """

    user_id: ScopeValue = ANY
    agent_id: ScopeValue = ANY
    thread_id: ScopeValue = ANY

    def __post_init__(self) -> None:
        for name in ("user_id", "agent_id", "thread_id"):
            value = getattr(self, name)
            if value is not ANY:
                check_optional_id(value, name)

    def admits(self, user_id: str | None, agent_id: str | None, thread_id: str | None) -> bool:
        return (
            (self.user_id is ANY or self.user_id == user_id)
            and (self.agent_id is ANY or self.agent_id == agent_id)
            and (self.thread_id is ANY or self.thread_id == thread_id)
        )


class Fusion(str, enum.Enum):
    """How a hybrid (vector + keyword) search merges its two ranked lists (see :func:`fuse`)."""

    RRF = "rrf"
    SCORE = "score"
    ABSOLUTE = "absolute"


def check_vector(vector: Sequence[float], dimension: int | None = None) -> tuple[float, ...]:
    """A non-empty, finite vector (of ``dimension`` entries when given), as a tuple of floats."""
    try:
        values = tuple(map(float, vector))
    except (TypeError, ValueError):
        raise VectorDimensionError("a vector must be a sequence of numbers.") from None
    if not values:
        raise VectorDimensionError("a vector must not be empty.")
    # A finite sum (one pass in C) means finite values; only another sum needs the value-by-value check.
    if not math.isfinite(sum(values)) and not all(math.isfinite(x) for x in values):
        raise VectorDimensionError("a vector must contain only finite values.")
    if dimension is not None and len(values) != dimension:
        raise VectorDimensionError(
            f"vector has {len(values)} dimensions but this store holds {dimension}-dimensional vectors."
        )
    if not any(values):
        raise VectorDimensionError("a vector must not be all zeros (it has no direction).")
    return values


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One store search.

    At least one of ``vector`` (dense) and ``text`` (keyword) is given; with both, the two
    ranked lists are fused by :func:`fuse` (``fusion``, ``dense_weight``, ``rrf_k``), each list
    :attr:`fusion_depth` deep. ``now``
    decides which records have expired. ``include_invalid`` applies to direct hits only: linked context may show
    history. ``record_types=None`` means every searchable type. ``record_ids`` narrows the direct
    hits to those memory records (no message): each is scored as the same search scores it
    (cosine, BM25 over the whole collection; fusions that rank or normalise within their lists,
    RRF and min–max, do so within the narrowed lists), which is how a refinement that brings a
    record in learns its score and its linked tree.
    """

    k: int
    now: datetime
    vector: tuple[float, ...] | None = None
    text: str | None = None
    scope: ScopeFilter = field(default_factory=ScopeFilter)
    record_types: frozenset[RecordType] | None = None
    include_invalid: bool = True
    metadata_filter: Mapping[str, Any] | None = None
    num_hops: int = 0
    max_linked_results: int = DEFAULT_MAX_LINKED_RESULTS
    fusion: Fusion = Fusion.ABSOLUTE
    rrf_k: int = RRF_K
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    fusion_k: int | None = None
    record_ids: frozenset[str] | None = None
    neighbour_weight: float = 0.0
    neighbour_radius: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise InvalidSearchError("k must be at least 1; allow at least one search result.")
        if self.k > MAX_SEARCH_K:
            raise InvalidSearchError(f"k must be at most {MAX_SEARCH_K}.")
        check_time(self.now, "now")
        if self.vector is None and self.text is None:
            raise InvalidSearchError("a search needs a query vector, query text, or both.")
        if self.vector is not None:
            object.__setattr__(self, "vector", check_vector(self.vector))
        if self.text is not None and (not isinstance(self.text, str) or not self.text.strip()):
            raise InvalidSearchError("query text must be a non-empty string.")
        if not isinstance(self.scope, ScopeFilter):
            raise InvalidSearchError("scope must be a ScopeFilter.")
        if self.record_types is not None:
            if isinstance(self.record_types, str):
                raise InvalidSearchError("record_types must be a collection of type names, not a string.")
            types = frozenset(parse_record_type(t) for t in self.record_types)
            if not types:
                raise InvalidSearchError("record_types must not be empty (omit it to search every type).")
            object.__setattr__(self, "record_types", types)
        object.__setattr__(self, "metadata_filter", validate_filter(self.metadata_filter))
        if not isinstance(self.num_hops, int) or isinstance(self.num_hops, bool) or not 0 <= self.num_hops <= MAX_NUM_HOPS:
            raise InvalidSearchError(f"num_hops must be between 0 and {MAX_NUM_HOPS}.")
        if (
            not isinstance(self.max_linked_results, int)
            or isinstance(self.max_linked_results, bool)
            or self.max_linked_results < 0
        ):
            raise InvalidSearchError("max_linked_results must be non-negative.")
        if not isinstance(self.rrf_k, int) or isinstance(self.rrf_k, bool) or self.rrf_k < 1:
            raise InvalidSearchError("rrf_k must be a positive integer.")
        if self.fusion_k is not None and (
            not isinstance(self.fusion_k, int) or isinstance(self.fusion_k, bool) or not 1 <= self.fusion_k <= MAX_SEARCH_K
        ):
            raise InvalidSearchError(f"fusion_k must be between 1 and {MAX_SEARCH_K}, or None.")
        object.__setattr__(self, "fusion", check_fusion(self.fusion))
        object.__setattr__(self, "dense_weight", check_dense_weight(self.dense_weight))
        object.__setattr__(self, "neighbour_weight", check_neighbour_weight(self.neighbour_weight))
        object.__setattr__(self, "neighbour_radius", check_neighbour_radius(self.neighbour_radius))
        if self.record_ids is not None:
            if isinstance(self.record_ids, str) or not isinstance(self.record_ids, Iterable):
                raise InvalidSearchError("record_ids must be a collection of record ids, not a string.")
            try:
                ids = frozenset(check_id(i, "record id") for i in self.record_ids)
            except ValidationError as exc:
                raise InvalidSearchError(f"record_ids: {exc}") from None
            if not ids or len(ids) > MAX_SEARCH_K:
                raise InvalidSearchError(f"record_ids must name between 1 and {MAX_SEARCH_K} records.")
            object.__setattr__(self, "record_ids", ids)

    @property
    def fusion_depth(self) -> int:
        """How many candidates each list (dense, keyword) contributes to a hybrid fusion:
        ``max(50, 4 × fusion_k)`` (and at least ``k``), where ``fusion_k`` defaults to ``k``. A
        caller that asks for a larger ``k`` only to refine the best hits itself sets ``fusion_k``
        to the count it will keep: as long as ``k`` stays within that depth, the fused order is
        exactly that of a search for ``fusion_k`` results."""
        return max(50, 4 * (self.k if self.fusion_k is None else self.fusion_k), self.k)

    @property
    def types(self) -> frozenset[RecordType]:
        return self.record_types if self.record_types is not None else SEARCHABLE_RECORD_TYPES

    def admits_record(self, record: MemoryRecord | Message, *, direct: bool) -> bool:
        """The full filter, in pure Python: scope, type, expiry, metadata, and (direct) status."""
        if record.record_type not in self.types:
            return False
        if not self.scope.admits(record.user_id, record.agent_id, record.thread_id):
            return False
        if record.is_expired(self.now):
            return False
        if direct and not self.include_invalid and isinstance(record, MemoryRecord) and not record.is_valid:
            return False
        if direct and self.record_ids is not None and not (
            isinstance(record, MemoryRecord) and record.id in self.record_ids
        ):
            return False
        return matches(record.metadata, self.metadata_filter)


@dataclass(frozen=True, slots=True)
class LinkedRecord:
    """A record reached from a hit through links: one node of the shortest-path tree."""

    link: RecordLink
    parent_id: str
    record: MemoryRecord
    depth: int
    children: tuple[LinkedRecord, ...] = ()

    @property
    def relation_label(self) -> str:
        """The label read from the parent towards this record (direction-aware)."""
        return self.link.label_from(self.parent_id)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A direct search result. ``score`` is higher-is-better; ``distance`` lower-is-better."""

    record: MemoryRecord | Message
    score: float
    distance: float
    linked: tuple[LinkedRecord, ...] = ()

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def record_type(self) -> RecordType:
        return self.record.record_type


@dataclass(frozen=True, slots=True)
class TreeEdge:
    """A flat entry of a shortest-path tree: how ``record_id`` is reached (before hydration)."""

    record_id: str
    parent_id: str
    link: RecordLink
    depth: int


def shortest_path_tree(
    root_id: str,
    *,
    num_hops: int,
    max_linked_results: int,
    links_of: Callable[[str], Iterable[RecordLink]],
    admits: Callable[[str], bool],
) -> list[TreeEdge]:
    """The deterministic shortest-path tree around ``root_id``, ranked and capped.

    Links are followed in both directions. Every record on a path must pass ``admits``
    (scope, type, expiry, metadata); a record never repeats on a path. Each reached record
    keeps one parent: minimal depth, then earliest link ``created_at``, link id, parent id.
    The result is ranked by (depth, link created_at, link id, record id) and cut at
    ``max_linked_results``; ranking by depth first keeps every kept node's parent kept.
    :func:`shortest_path_trees` with one root (``admits`` is asked once per record).
    """
    verdicts: dict[str, bool] = {}

    def admitted(record_id: str) -> bool:
        if record_id not in verdicts:
            verdicts[record_id] = admits(record_id)
        return verdicts[record_id]

    def links_around(frontier: Sequence[str]) -> dict[str, list[RecordLink]]:
        return {
            node: [link for link in links_of(node) if admitted(link.other_end(node))] for node in frontier
        }

    trees = shortest_path_trees(
        [root_id], num_hops=num_hops, max_linked_results=max_linked_results, links_around=links_around
    )
    return trees.get(root_id, [])


def build_tree(
    root_id: str, edges: Sequence[TreeEdge], records: Mapping[str, MemoryRecord]
) -> tuple[LinkedRecord, ...]:
    """Nest flat tree edges under their parents, keeping rank order among siblings."""
    children: dict[str, list[TreeEdge]] = {}
    for edge in edges:
        children.setdefault(edge.parent_id, []).append(edge)

    def grow(parent_id: str) -> tuple[LinkedRecord, ...]:
        return tuple(
            LinkedRecord(
                link=e.link,
                parent_id=e.parent_id,
                record=records[e.record_id],
                depth=e.depth,
                children=grow(e.record_id),
            )
            for e in children.get(parent_id, ())
            if e.record_id in records
        )

    return grow(root_id)


def check_fusion(value: object) -> Fusion:
    """A :class:`Fusion` from itself or its name (``"rrf"``, ``"score"``, ``"absolute"``)."""
    if isinstance(value, Fusion):
        return value
    if isinstance(value, str):
        try:
            return Fusion(value)
        except ValueError:
            pass
    raise InvalidSearchError(f"fusion must be one of {', '.join(repr(f.value) for f in Fusion)}.")


MAX_NEIGHBOUR_RADIUS: Final = 10


def check_neighbour_weight(value: object) -> float:
    """How much of its best neighbour's score a message gains (:func:`with_neighbours`): 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidSearchError("neighbour_weight must be a number between 0 and 1.")
    return float(value)


def check_neighbour_radius(value: object) -> int:
    """How many places before and after a message its neighbours reach: 0 to 10."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NEIGHBOUR_RADIUS:
        raise InvalidSearchError(f"neighbour_radius must be an integer between 0 and {MAX_NEIGHBOUR_RADIUS}.")
    return value


def check_dense_weight(value: object) -> float:
    """The dense list's weight in a fusion: a number from 0 (keyword only) to 1 (dense only)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidSearchError("dense_weight must be a number between 0 and 1.")
    return float(value)


def fuse(
    dense: Sequence[tuple[K, float]],
    keyword: Sequence[tuple[K, float]],
    *,
    fusion: Fusion = Fusion.ABSOLUTE,
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
    rrf_k: int = RRF_K,
    keyword_scale: float | None = None,
) -> list[tuple[K, float]]:
    """One ranking from a dense and a keyword candidate list, best first.

    Each list is ``(key, score)`` best first, scores higher-is-better (cosine similarity;
    keyword relevance such as ``-bm25``). ``dense_weight`` ``w`` weighs the dense list and
    ``1 - w`` the keyword list; a list of weight 0 is ignored.

    * ``Fusion.RRF``: ``Σ w_i / (rrf_k + rank_i)`` (1-based ranks), normalised to sum to 1.
      Only ranks matter, so the two score scales never meet.
    * ``Fusion.SCORE``: each list's scores are min–max normalised over the list (a list whose
      scores are all equal gives 1.0), then ``w · dense + (1 - w) · keyword``, a key absent from
      a list counting 0 there. Scores stay in [0, 1] and keep how far apart candidates are.
    * ``Fusion.ABSOLUTE``: no per-list normalisation. The dense score is the cosine similarity
      (clipped to [0, 1]); the keyword score is the BM25 score divided by ``keyword_scale``, the
      query's *ideal* score (the sum of its terms' idf: what a text holding every query term
      once, at average length, would score), clipped to [0, 1]: how much of the query the text
      covers, rare terms counting more. Then ``w · dense + (1 - w) · keyword``. Unlike min–max,
      a keyword list whose best hit matches one common word of the query stays weak instead
      of being stretched to 1 (measured in D20). Without a scale the keyword scores are taken
      as already in [0, 1].

    Ties keep the order of first appearance (dense list first): the result is deterministic.
    """
    fusion = check_fusion(fusion)
    w = check_dense_weight(dense_weight)
    lists = [(items, weight) for items, weight in ((dense, w), (keyword, 1.0 - w)) if weight > 0.0]
    if fusion is Fusion.RRF:
        return reciprocal_rank_fusion(
            [[key for key, _score in items] for items, _weight in lists],
            k=rrf_k,
            weights=[weight for _items, weight in lists],
        )
    scores: dict[K, float] = {}
    if fusion is Fusion.ABSOLUTE:
        scale = keyword_scale if keyword_scale is not None and keyword_scale > 0 else 1.0
        for items, weight, divisor in ((dense, w, 1.0), (keyword, 1.0 - w, scale)):
            if weight <= 0.0:
                continue
            for key, score in items:
                scores[key] = scores.get(key, 0.0) + weight * min(1.0, max(0.0, score / divisor))
        order = {key: i for i, key in enumerate(scores)}
        return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    for items, weight in lists:
        if not items:
            continue
        values = [score for _key, score in items]
        low, high = min(values), max(values)
        span = high - low
        for key, score in items:
            normalised = (score - low) / span if span > 0 else 1.0
            scores[key] = scores.get(key, 0.0) + weight * normalised
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse ranked lists: ``score(d) = Σ w / (k + rank_d)`` with 1-based ranks.

    Scores are normalised to sum to 1. Ties keep the order of first appearance, so the
    result is deterministic.
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    scores: dict[K, float] = {}
    for items, weight in zip(ranked_lists, weights):
        for rank, key in enumerate(items, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    total = sum(scores.values()) or 1.0
    order = {key: i for i, key in enumerate(scores)}
    fused = sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    return [(key, score / total) for key, score in fused]


# --- the search pipeline, written once over a store's primitives ------------------------------

CandidateKey = tuple[bool, str]
"""A direct candidate's identity: (is it a message, id). Messages and memory records are separate
id spaces, so the same id may name one of each."""


@dataclass(frozen=True, slots=True)
class KeywordCandidates:
    """A store's keyword candidates: ``ranked`` holds (key, raw relevance), best first (raw
    relevance is higher-is-better and non-negative, BM25 or the store's engine's own score);
    ``ideal`` is the raw relevance a text holding every query term once would get (BM25: the sum
    of the query terms' idf; Oracle Text: 100), the scale that makes a keyword score comparable
    across queries (:func:`keyword_score`)."""

    ranked: Sequence[tuple[CandidateKey, float]]
    ideal: float


NO_KEYWORD_CANDIDATES: Final = KeywordCandidates((), 1.0)


def keyword_score(raw: float, ideal: float) -> float:
    """A keyword hit's score on the one scale every store reports: its raw relevance over the
    query's ideal relevance, clipped to [0, 1] (how much of the query the text covers, rare terms
    counting more). 1.0 for a text at least as relevant as the ideal one."""
    if ideal <= 0:
        return 1.0 if raw > 0 else 0.0
    return min(1.0, max(0.0, raw / ideal))


def _fused(
    query: SearchQuery, dense: Sequence[tuple[CandidateKey, float]], keyword: KeywordCandidates
) -> list[tuple[CandidateKey, float]]:
    """The direct candidates ranked under the one score convention (see :func:`run_search`)."""
    if query.vector is not None and query.text is not None:
        return fuse(
            dense,
            keyword.ranked,
            fusion=query.fusion,
            dense_weight=query.dense_weight,
            rrf_k=query.rrf_k,
            keyword_scale=keyword.ideal,
        )
    if query.vector is not None:
        return list(dense)
    return [(key, keyword_score(raw, keyword.ideal)) for key, raw in keyword.ranked]


def _best_neighbour(
    ranked: Sequence[tuple[CandidateKey, float]], neighbours: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """For each message next to a ranked message (``neighbours`` lists each one's), the best
    positive score among its ranked neighbours."""
    best: dict[str, float] = {}
    for key, score in ranked:
        if key[0] and score > 0.0:
            for other in neighbours.get(key[1], ()):
                if other != key[1] and score > best.get(other, 0.0):
                    best[other] = score
    return best


def _lifted(
    ranked: Sequence[tuple[CandidateKey, float]], neighbours: Mapping[str, Sequence[str]], weight: float
) -> list[tuple[CandidateKey, float]]:
    best = _best_neighbour(ranked, neighbours) if weight > 0.0 else {}
    if not best:
        return list(ranked)
    out: dict[CandidateKey, float] = {
        key: score + weight * max(0.0, best.get(key[1], 0.0) - score) if key[0] else score for key, score in ranked
    }
    for message_id, gain in best.items():
        out.setdefault((True, message_id), weight * gain)
    order = {key: i for i, key in enumerate(out)}
    return sorted(out.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def with_keyword_neighbours(
    keyword: KeywordCandidates, neighbours: Mapping[str, Sequence[str]], weight: float
) -> KeywordCandidates:
    """Keyword candidates with conversation context (:func:`with_neighbours` over the raw
    relevance): a turn that holds few of the question's words ("Adoption agencies.") is lifted
    towards the turn next to it that holds them ("What are you researching, Caroline?"). The
    ideal stays the query's."""
    return KeywordCandidates(_lifted(keyword.ranked, neighbours, weight), keyword.ideal)


def with_neighbours(
    ranked: Sequence[tuple[CandidateKey, float]],
    neighbours: Mapping[str, Sequence[str]],
    weight: float,
) -> list[tuple[CandidateKey, float]]:
    """The ranking with conversation context: a message of score ``s`` whose best-scoring
    ranked neighbour (``neighbours`` lists each message's) scores ``b`` is lifted ``weight`` of
    the way to it, ``s + weight · max(0, b - s)`` (``s`` taken as 0 for a neighbour not ranked,
    which enters the ranking so). A turn is read in its conversation: it never passes its best
    neighbour, neighbours that match alike lift nothing, and memory records keep their scores.
    Ties keep the order of ``ranked``, then of first mention."""
    return _lifted(ranked, neighbours, weight)


def shortest_path_trees(
    roots: Sequence[str],
    *,
    num_hops: int,
    max_linked_results: int,
    links_around: Callable[[Sequence[str]], Mapping[str, Sequence[RecordLink]]],
) -> dict[str, list[TreeEdge]]:
    """:func:`shortest_path_tree` for several roots at once, one depth at a time.

    ``links_around(frontier)`` maps each record id of a frontier (the union over every root
    still growing, sorted) to the links touching it whose other end is admitted; it is called
    once per depth. Each root's tree is exactly the one :func:`shortest_path_tree` builds with
    the same links and an ``admits`` that accepts the admitted other ends.
    """
    if num_hops <= 0 or max_linked_results <= 0 or not roots:
        return {}
    ranked: dict[str, list[TreeEdge]] = {root: [] for root in roots}
    seen: dict[str, set[str]] = {root: {root} for root in roots}
    frontier: dict[str, list[str]] = {root: [root] for root in roots}
    growing = list(dict.fromkeys(roots))
    for depth in range(1, num_hops + 1):
        if not growing:
            break
        links = links_around(sorted({node for root in growing for node in frontier[root]}))
        still: list[str] = []
        for root in growing:
            level: dict[str, tuple[tuple[Any, str, str], RecordLink]] = {}
            known = seen[root]
            for parent in frontier[root]:
                for link in links.get(parent, ()):
                    other = link.target_id if parent == link.source_id else link.source_id
                    if other in known:
                        continue
                    key = (link.created_at, link.id, parent)
                    current = level.get(other)
                    if current is None or key < current[0]:
                        level[other] = (key, link)
            if not level:
                continue
            edges = ranked[root]
            for record_id, ((_created_at, _link_id, parent), link) in sorted(
                level.items(), key=lambda item: (item[1][0][0], item[1][0][1], item[0])
            ):
                edges.append(TreeEdge(record_id, parent, link, depth))
            if len(edges) >= max_linked_results:
                continue  # deeper records rank after every record found so far
            known.update(level)
            frontier[root] = sorted(level)
            still.append(root)
        growing = still
    return {root: edges[:max_linked_results] for root, edges in ranked.items()}


def run_search(session: Any, query: SearchQuery) -> list[SearchHit]:
    """Answer ``query`` from a store's search primitives (``session``: a
    :class:`~palimpsest.domain.ports.SearchSession`): the one pipeline every store runs.

    1. candidates: the dense list (``query.vector``) and the keyword list (``query.text``), each
       ``query.fusion_depth`` deep for a hybrid search, else ``query.k``;
    2. ranking, under **one score convention** (``SearchHit.score`` higher-is-better,
       ``distance = 1 - score``):

       * dense only: the cosine similarity of the record's vector to the query vector, in
         [-1, 1]; comparable across queries of one embedding model;
       * keyword only: :func:`keyword_score`, the raw relevance over the query's ideal
         relevance, in [0, 1]; comparable across queries and stores;
       * hybrid: the :func:`fuse` score. ``Fusion.ABSOLUTE`` (the default) is
         ``w · clip(cosine) + (1 - w) · keyword_score`` in [0, 1] and comparable across
         queries; ``RRF`` and ``SCORE`` normalise within one query's lists, so their scores
         rank one query's hits and mean nothing across queries;

    3. linked records: for memory hits, :func:`shortest_path_trees` over
       ``session.links_around`` (status is not filtered);
    4. hydration: ``session.load`` of the hits and their trees, each row re-checked with
       :meth:`SearchQuery.admits_record` (a row the read no longer admits is left out).
    """
    dense: Sequence[tuple[CandidateKey, float]] = ()
    keyword = NO_KEYWORD_CANDIDATES
    depth = query.fusion_depth if query.vector is not None and query.text is not None else query.k
    if query.vector is not None:
        dense = session.dense_candidates(query, depth)
    if query.text is not None:
        keyword = session.keyword_candidates(query, depth)
    neighbours: Mapping[str, Sequence[str]] = {}
    if query.neighbour_weight > 0 and query.neighbour_radius > 0:
        messages = list(dict.fromkeys(key[1] for key, _score in (*dense, *keyword.ranked) if key[0]))
        if messages:
            neighbours = session.message_neighbours(messages, query.neighbour_radius)
            keyword = with_keyword_neighbours(keyword, neighbours, query.neighbour_weight)
    scored = _fused(query, dense, keyword)
    extra = 0
    if neighbours:
        ranked = {key for key, _score in scored}
        scored = with_neighbours(scored, neighbours, query.neighbour_weight)
        # a neighbour brought in may not pass the query's filters (hydration re-checks it):
        # load one more candidate for each such newcomer among the first k
        extra = sum(1 for key, _score in scored[: query.k] if key not in ranked)
    scored = scored[: query.k + extra]
    trees = shortest_path_trees(
        [key[1] for key, _score in scored if not key[0]],
        num_hops=query.num_hops,
        max_linked_results=query.max_linked_results,
        links_around=lambda frontier: session.links_around(frontier, query),
    )
    return hydrate(session, query, scored, trees)[: query.k]


def hydrate(
    session: Any,
    query: SearchQuery,
    scored: Sequence[tuple[CandidateKey, float]],
    trees: Mapping[str, Sequence[TreeEdge]],
) -> list[SearchHit]:
    """The hits of ``scored`` (in order) with their linked trees, loaded in one ``session.load``
    and re-checked with the query's filters (see :func:`run_search`, step 4)."""
    if not scored:
        return []
    in_trees: dict[str, None] = {}  # every linked record once, however many trees hold it
    for edges in trees.values():
        in_trees.update(dict.fromkeys(edge.record_id for edge in edges))
    keys: dict[CandidateKey, None] = dict.fromkeys(key for key, _score in scored)
    keys.update(dict.fromkeys((False, record_id) for record_id in in_trees))
    loaded = session.load(list(keys))
    linked_records: dict[str, MemoryRecord] = {}
    for record_id in in_trees:
        record = loaded.get((False, record_id))
        if isinstance(record, MemoryRecord) and query.admits_record(record, direct=False):
            linked_records[record_id] = record
    hits: list[SearchHit] = []
    for key, score in scored:
        item = loaded.get(key)
        if item is None or not query.admits_record(item, direct=True):
            continue
        tree = None if key[0] else trees.get(key[1])
        linked = build_tree(key[1], tree, linked_records) if tree else ()
        hits.append(SearchHit(record=item, score=score, distance=1.0 - score, linked=linked))
    return hits
