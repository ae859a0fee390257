"""Application layer: the refinements a search applies after the fused ranking (D20).

Each refinement is a :class:`Stage` with a declared :class:`Effect`: it takes the search's hits
best first (a candidate pool larger than the caller's ``max_results``) and returns them
re-ordered (``REORDER``), thinned (``DROP``) or with records brought in (``ADD``); the searcher
runs the stages in order, checks each keeps to its effect (:func:`run_stage`) and cuts the
result to ``max_results``. Every stage is pure except :data:`CURRENT_FIRST` and
:data:`VERSION_HISTORY`, which walk the link graph of the search's own read (a
:class:`LinkGraph`); a record they bring in is scored by the searcher afterwards, by the same
search in the same read.
"""

from __future__ import annotations

import enum
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise
from typing import Final, Protocol

from palimpsest.domain.errors import StageEffectError
from palimpsest.domain.links import is_lifecycle
from palimpsest.domain.model import MemoryRecord, Message, RecordLink
from palimpsest.domain.search import CandidateKey, LinkedRecord, ScopeFilter, SearchHit, SearchQuery
from palimpsest.domain.subjects import asked_relations, names_in, third_party_of
from palimpsest.domain.text import keyword_terms, word_key, word_tokens

from .event_log import log_failure
from .ports import RerankCandidate, Reranker

log = logging.getLogger("palimpsest")

NAME_CHARS = 3000
"""How much of a hit's text is searched for a name the question asks about."""

__all__ = [
    "COLLAPSE_DUPLICATES",
    "CURRENT_FIRST",
    "HISTORY_WORDS",
    "LATEST_WORDS",
    "MERGE_PROVENANCE",
    "VERSION_HISTORY",
    "Effect",
    "LinkGraph",
    "Stage",
    "StageContext",
    "StageEffectError",
    "asks_across_versions",
    "asks_for_history",
    "asks_for_latest",
    "collapse_duplicates",
    "current_before_history",
    "demote_third_parties",
    "demoted_score",
    "follow_versions",
    "latest_first",
    "latest_stage",
    "maximal_marginal_relevance",
    "merge_provenance",
    "named_speaker",
    "record_by_record",
    "rerank",
    "rerank_stage",
    "run_stage",
    "source_message_ids",
    "speaker_stage",
    "third_party_stage",
    "third_party_test",
    "walk_query",
    "with_version_history",
]

HISTORY_WORDS = frozenset(
    "previous previously before earlier originally original history formerly former used past "
    "old older changed change changes first initially".split()
)
"""Words that make a query ask about how something was, not how it is: with one of them,
superseded memories keep their own rank."""


LATEST_WORDS = frozenset("latest last recent recently current currently now newest today lately".split())
"""Words that make a query ask for the newest state of something."""


def asks_for_history(query: str) -> bool:
    return any(token in HISTORY_WORDS for token in word_tokens(query))


PERFECT_PAIRS = frozenset(
    {
        ("have", "i"),
        ("have", "we"),
        ("i", "ve"),
        ("we", "ve"),
        ("have", "my"),
        ("has", "my"),
        ("have", "our"),
        ("has", "our"),
        ("have", "been"),
        ("has", "been"),
    }
)
"""Word pairs of the speaker's present perfect ("What jobs have I had?", "Who have my managers
been?", "Which sports have been my favourite?"): a question over everything so far."""


VERSION_VISITS = 64
"""How many memories of one version chain :func:`with_version_history` looks at, at most (a
chain whose members the query's filters exclude is not walked without end)."""


def asks_across_versions(query: str) -> bool:
    """Whether a question spans the versions of what it asks about: it asks about the past
    (:data:`HISTORY_WORDS`) or is in the speaker's present perfect (:data:`PERFECT_PAIRS`)."""
    tokens = word_tokens(query)
    return any(token in HISTORY_WORDS for token in tokens) or any(
        pair in PERFECT_PAIRS for pair in pairwise(tokens)
    )


def asks_for_latest(query: str) -> bool:
    return any(token in LATEST_WORDS for token in word_tokens(query)) and not asks_for_history(query)


def latest_first(hits: Sequence[SearchHit], weight: float) -> list[SearchHit]:
    """Re-rank for a question about the latest state: each hit's rank score ``1 - rank / n``
    is blended with its recency (event time, else creation time; min-max over the hits),
    ``(1 - weight) · rank + weight · recency``. Ties keep the search's order."""
    n = len(hits)
    if n < 2 or weight <= 0.0:
        return list(hits)
    times = [(h.record.timestamp or h.record.created_at).timestamp() for h in hits]
    low, high = min(times), max(times)
    span = high - low
    if span <= 0:
        return list(hits)
    blended = [
        ((1.0 - weight) * (1.0 - rank / n) + weight * (times[rank] - low) / span, -rank) for rank in range(n)
    ]
    order = sorted(range(n), key=lambda i: blended[i], reverse=True)
    return [hits[i] for i in order]


def source_message_ids(record: MemoryRecord | Message) -> tuple[str, ...]:
    """The messages an extracted memory was drawn from (its provenance); none for a message."""
    if not isinstance(record, MemoryRecord):
        return ()
    managed = (record.metadata or {}).get("$agent_memory")
    if not isinstance(managed, dict):
        return ()
    ids = managed.get("source_message_ids")
    if not isinstance(ids, list):
        return ()
    return tuple(i for i in ids if isinstance(i, str))


def merge_provenance(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """One piece of evidence, one slot, and never a memory hidden behind its message: a message
    that a memory drawn from it alone outranks is dropped (the memory stands for it, with its
    type and status, and still names it). A memory is never dropped: a message that outranks
    its memory keeps its slot and the memory its own. Decided hit by hit in the fused order,
    so a shorter candidate pool thins its hits exactly as the whole pool does (D20)."""
    kept: list[SearchHit] = []
    represented: set[str] = set()  # messages that a memory kept so far was drawn from alone
    for hit in hits:
        record = hit.record
        if isinstance(record, Message):
            if record.id in represented:
                continue
        else:
            sources = source_message_ids(record)
            if len(sources) == 1:
                represented.add(sources[0])
        kept.append(hit)
    return kept


def _is_retired(record: MemoryRecord | Message) -> bool:
    return isinstance(record, MemoryRecord) and not record.is_valid


def collapse_duplicates(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """One text, one slot: of hits whose contents have the same words (case and punctuation
    aside), only the best ranked stays, in its place. Chat repeats itself ("Can you suggest a
    board game?" in five sessions), and five copies of one line would crowd out everything
    else. A retired memory never hides a valid one: when the best ranked copy is retired and a
    later copy is valid, the valid one takes the slot."""
    kept: list[SearchHit] = []
    slot_of: dict[str, int] = {}
    for hit in hits:
        key = word_key(hit.record.content) or hit.record.content
        slot = slot_of.get(key)
        if slot is None:
            slot_of[key] = len(kept)
            kept.append(hit)
        elif _is_retired(kept[slot].record) and not _is_retired(hit.record):
            kept[slot] = hit
    return kept


def third_party_test(query: str) -> Callable[[SearchHit], bool] | None:
    """For a question in the first person, whether a hit states a fact about someone else
    whose relation the question does not name ("My sister lives in Oslo." for "Where do I
    live?", not for "Where does my sister live?") nor any name the question asks about (not
    "My sister Anna ..." for "What did I buy for Anna?"), remembered per record for the search;
    ``None`` for any other question (:mod:`palimpsest.domain.subjects`)."""
    relations = asked_relations(query)
    if relations is None:
        return None
    names = names_in(query)
    seen: dict[str, bool] = {}

    def about_someone_else(hit: SearchHit) -> bool:
        answer = seen.get(hit.id)
        if answer is None:
            about = third_party_of(hit.record.content)
            answer = about is not None and about not in relations
            if answer and names and not names.isdisjoint(word_tokens(hit.record.content[:NAME_CHARS])):
                answer = False  # "My sister Anna loves jazz." for "What did I buy for Anna?"
            seen[hit.id] = answer
        return answer

    return about_someone_else


def demoted_score(hit: SearchHit, penalty: float, demoted: Callable[[SearchHit], bool]) -> float:
    """The hit's score, less ``penalty`` of it when ``demoted`` says so."""
    return hit.score - penalty * abs(hit.score) if demoted(hit) else hit.score


def demote_third_parties(
    hits: Sequence[SearchHit], penalty: float, demoted: Callable[[SearchHit], bool]
) -> list[SearchHit]:
    """Hits that ``demoted`` picks (:func:`third_party_test`) lose ``penalty`` of their score,
    then the hits are sorted again (ties keep their order). A penalty of 0 changes nothing."""
    if penalty <= 0 or not any(demoted(hit) for hit in hits):
        return list(hits)
    order = sorted(range(len(hits)), key=lambda i: (-demoted_score(hits[i], penalty, demoted), i))
    return [hits[i] for i in order]


class LinkGraph(Protocol):
    """The link graph as one search's read sees it, for the refinements' walks: the same two
    primitives the linked-record trees are built from (:class:`~palimpsest.domain.ports.SearchSession`
    ``links_around`` and ``load``, over :func:`walk_query`)."""

    def links_around(self, frontier: Sequence[str]) -> Mapping[str, Sequence[RecordLink]]:
        """For each memory record id of ``frontier``, the links touching it (either direction)
        whose other end is a memory record the walk may pass through."""
        ...

    def load(self, record_ids: Sequence[str]) -> Mapping[str, MemoryRecord]:
        """The memory records stored under ``record_ids`` (an id with no record is left out)."""
        ...


def walk_query(query: SearchQuery) -> SearchQuery:
    """The query the refinements read the link graph with: the search's own, without its scope,
    record types, metadata filter and ``record_ids``. A version chain is followed past a memory
    the search's filters reject (another type, scope or metadata), which :func:`follow_versions`
    then leaves out by the search's own filter, as :func:`current_before_history` leaves out a
    successor it may not show. Expiry stays: an expired memory is gone for the walk, as it is for
    every read after ``query.now`` (and for good once purged)."""
    return replace(query, scope=ScopeFilter(), record_types=None, metadata_filter=None, record_ids=None)


@dataclass(frozen=True, slots=True)
class _RecordByRecord:
    links_of: Callable[[str], Sequence[RecordLink]]
    get: Callable[[str], MemoryRecord | None]

    def links_around(self, frontier: Sequence[str]) -> Mapping[str, Sequence[RecordLink]]:
        return {record_id: self.links_of(record_id) for record_id in frontier}

    def load(self, record_ids: Sequence[str]) -> Mapping[str, MemoryRecord]:
        return {record_id: record for record_id in record_ids if (record := self.get(record_id)) is not None}


def record_by_record(
    links_of: Callable[[str], Sequence[RecordLink]], get: Callable[[str], MemoryRecord | None]
) -> LinkGraph:
    """A :class:`LinkGraph` over per-record lookups (the links touching one record, one record
    by id), for callers that hold such a view rather than a search's read."""
    return _RecordByRecord(links_of, get)


def _not_scored(record_ids: Sequence[str]) -> Mapping[str, SearchHit]:
    """No hit for any record (a stage given no way to score records)."""
    return {}


SUCCESSOR_SHARE: Final = 0.05
"""The share of a retired hit's score its successor must reach to take the hit's place (see
:func:`current_before_history`): below it, the successor is not about what was asked. Scores of
short memories are small and uneven ("Which company do I work at?": the old employer 0.088, the
new one 0.010, a share of 0.11), while an unrelated text that replaced a matching one scores near
0 (the audited case: 0.009 against 0.954, a share of 0.009). On the synthetic set a share of 0.1
already lost one current value of 20 (BENCHMARKS.md, D40's section); 0.05 loses none. Checked on
the LoCoMo development half (``benchmarks/locomo/successors.py``; BENCHMARKS.md, "current_first's
successor share on LoCoMo"): 0, 0.05, 0.2 and 1.0 cannot be told apart there (the default
extractor and linker retire 20 of 422 memories; 3 of 760 questions move, R@10 equal on every
fold), so 0.05 stays."""


def current_before_history(
    hits: Sequence[SearchHit],
    query: SearchQuery,
    graph: LinkGraph,
    *,
    pool: Sequence[SearchHit] = (),
    limit: int | None = None,
    scored: Callable[[Sequence[str]], Mapping[str, SearchHit]] = _not_scored,
) -> list[SearchHit]:
    """Superseded memories rank below the memories that retired them, when those are relevant.

    A direct hit that is an invalid memory retired by a lifecycle link (supersedes, refines,
    duplicates) gives its rank to its newest valid successor when the successor is itself
    relevant to the query: its hit in the same search (in ``pool`` or ``hits``, else as
    ``scored`` gives it: its real score and linked tree) has a positive score of at least
    ``SUCCESSOR_SHARE`` of the retired hit's. The successor then takes the hit's place and the
    retired memory follows it. A successor that is not relevant (an
    unrelated text that replaced a matching one; only the query's filters admit it, as linked
    context) outranks nothing: the retired hit keeps its rank and carries the successor in its
    linked records, joined by the links that retired it, so the result says what replaced it.
    A retired memory whose successors are all out of reach keeps its rank. Only the hits among
    the first ``limit`` are followed (all by default); the rest keep their order after them.
    Every hit given is returned, each once.
    """
    followed = list(hits) if limit is None else list(hits[:limit])
    present = {hit.id: hit for hit in pool}
    present.update((hit.id, hit) for hit in hits)
    retired = [hit.id for hit in followed if isinstance(hit.record, MemoryRecord) and not hit.record.is_valid]
    successors = _newest_valid_successors(retired, query, graph, present)
    unscored = sorted({successor.id for successor, _path in successors.values() if successor.id not in present})
    rescored = scored(unscored) if unscored else {}
    order: list[SearchHit] = []
    placed: set[str] = set()
    for hit in followed:
        if hit.id in placed:
            continue
        found = successors.get(hit.id)
        if found is not None:
            successor, path = found
            successor = present.get(successor.id) or rescored.get(successor.id) or successor  # else: a placeholder
            if 0 < successor.score and successor.score >= SUCCESSOR_SHARE * hit.score:
                if successor.id not in placed:
                    order.append(successor)
                    placed.add(successor.id)
            else:
                hit = replace(hit, linked=_graft(hit.linked, hit.id, path, 1))
        order.append(hit)
        placed.add(hit.id)
    order.extend(hit for hit in hits[len(followed) :] if hit.id not in placed)
    return order


Step = tuple[RecordLink, MemoryRecord]
"""One step of a walk along lifecycle links: the link, and the memory it leads to."""


def _graft(nodes: tuple[LinkedRecord, ...], parent_id: str, path: Sequence[Step], depth: int) -> tuple[LinkedRecord, ...]:
    """The linked-record tree ``nodes`` (children of ``parent_id``, at ``depth``) with the walk
    ``path`` in it: the steps already in the tree are followed, the rest hang below the last."""
    if not path:
        return nodes
    (link, record), rest = path[0], path[1:]
    for i, node in enumerate(nodes):
        if node.record.id == record.id:
            grown = replace(node, children=_graft(node.children, record.id, rest, depth + 1))
            return (*nodes[:i], grown, *nodes[i + 1 :])
    branch = LinkedRecord(
        link=link, parent_id=parent_id, record=record, depth=depth, children=_graft((), record.id, rest, depth + 1)
    )
    return (*nodes, branch)


def with_version_history(
    hits: Sequence[SearchHit],
    pool: Sequence[SearchHit],
    query: SearchQuery,
    links_of: Callable[[str], Sequence[RecordLink]],
    load: Callable[[str], MemoryRecord | None],
    *,
    limit: int,
    max_versions: int = 8,
) -> list[SearchHit]:
    """:func:`follow_versions` over per-record lookups (:func:`record_by_record`)."""
    return follow_versions(hits, pool, query, record_by_record(links_of, load), limit=limit, max_versions=max_versions)


def follow_versions(
    hits: Sequence[SearchHit],
    pool: Sequence[SearchHit],
    query: SearchQuery,
    graph: LinkGraph,
    *,
    limit: int,
    max_versions: int = 8,
) -> list[SearchHit]:
    """For a question across versions (:func:`asks_across_versions`): the other versions of
    each memory follow the hit that stands for it, newest first.

    The versions of a memory are the memories joined to it by ``supersedes`` links, in either
    direction and along the chain: what it replaced and what replaced it (at most
    ``max_versions``, the nearest first; refined and duplicated memories are the same fact, not
    another value). A message hit stands for the memories drawn from it alone that the search's
    ``pool`` (its hits before thinning) holds. A version keeps its own hit when the pool has
    one, else it is loaded as a placeholder the searcher scores; one the query's filters do not
    admit as a direct result (an invalid memory under ``include_invalid_results=False``, another
    type, scope or metadata) is left out, and the chain is followed past it (``graph`` reads
    with :func:`walk_query`); one already placed stays where it is. The other hits keep their
    order after them. Only the hits among the first ``limit`` places are followed (the rest
    cannot reach a cut to ``limit``).
    """
    present = {hit.id: hit for hit in pool}
    present.update((hit.id, hit) for hit in hits)
    drawn_from: dict[str, list[MemoryRecord]] = {}
    for hit in pool:
        sources = source_message_ids(hit.record)
        if isinstance(hit.record, MemoryRecord) and len(sources) == 1:
            drawn_from.setdefault(sources[0], []).append(hit.record)
    order: list[SearchHit] = []
    placed: set[str] = set()
    for hit in hits:
        if hit.id in placed:
            continue
        order.append(hit)
        placed.add(hit.id)
        if len(order) > limit:
            continue
        record = hit.record
        heads = [record] if isinstance(record, MemoryRecord) else drawn_from.get(record.id, [])
        for head in heads:
            for version in _versions(head.id, query, graph, present, max_versions):
                if version.id not in placed:
                    order.append(version)
                    placed.add(version.id)
    return order


def _versions(
    record_id: str,
    query: SearchQuery,
    graph: LinkGraph,
    present: dict[str, SearchHit],
    max_versions: int,
) -> list[SearchHit]:
    """The admitted memories joined to ``record_id`` by ``supersedes`` links (breadth first, one
    read of the graph per depth, at most ``max_versions``, looking at no more than
    ``VERSION_VISITS`` memories), newest first: event time, else creation time."""
    found: list[SearchHit] = []
    seen = {record_id}
    frontier = [record_id]
    while frontier and len(found) < max_versions and len(seen) < VERSION_VISITS:
        links = graph.links_around(frontier)
        reached: list[str] = []
        for current in frontier:
            for link in sorted(links.get(current, ()), key=lambda l: (l.created_at, l.id)):
                if link.relation_type != "supersedes" or current not in (link.source_id, link.target_id):
                    continue
                other = link.target_id if link.source_id == current else link.source_id
                if other not in seen and len(seen) < VERSION_VISITS:
                    seen.add(other)
                    reached.append(other)
        loaded = graph.load([version_id for version_id in reached if version_id not in present])
        for version_id in reached:
            if len(found) >= max_versions:
                break
            hit = _hit_for(version_id, present, loaded)
            if hit is not None and query.admits_record(hit.record, direct=True):
                found.append(hit)
        frontier = reached
    found.sort(key=lambda h: (h.record.timestamp or h.record.created_at, h.record.id), reverse=True)
    return found


def _hit_for(record_id: str, present: dict[str, SearchHit], loaded: Mapping[str, MemoryRecord]) -> SearchHit | None:
    """The search's own hit for a record, else the record loaded as a placeholder hit (score 0,
    distance 1, no linked tree: the searcher replaces it by the hit the search gives it), else
    ``None`` (it is gone)."""
    hit = present.get(record_id)
    if hit is not None:
        return hit
    record = loaded.get(record_id)
    return None if record is None else SearchHit(record=record, score=0.0, distance=1.0)


def _newest_valid_successors(
    record_ids: Sequence[str],
    query: SearchQuery,
    graph: LinkGraph,
    present: dict[str, SearchHit],
    max_steps: int = 8,
) -> dict[str, tuple[SearchHit, list[Step]]]:
    """For each of ``record_ids``, the valid memory reached by following lifecycle links
    forwards (older target → newer source, the newest link first), when there is one within
    ``max_steps``, with the steps that lead there: every walk takes its next step in one read
    of the graph. A walk stops at a step the query's filters do not admit (as linked context)."""
    walks: dict[str, tuple[str, set[str], list[Step]]] = {
        record_id: (record_id, {record_id}, []) for record_id in record_ids
    }
    found: dict[str, tuple[SearchHit, list[Step]]] = {}
    for _ in range(max_steps):
        if not walks:
            break
        links = graph.links_around(sorted({current for current, _seen, _path in walks.values()}))
        steps: dict[str, RecordLink] = {}
        for root, (current, seen, _path) in walks.items():
            newer = sorted(
                (l for l in links.get(current, ()) if is_lifecycle(l.relation_type) and l.target_id == current),
                key=lambda l: (l.created_at, l.id),
                reverse=True,
            )
            step = next((l for l in newer if l.source_id not in seen), None)
            if step is not None:
                steps[root] = step
        loaded = graph.load(sorted({link.source_id for link in steps.values() if link.source_id not in present}))
        going: dict[str, tuple[str, set[str], list[Step]]] = {}
        for root, link in steps.items():
            step_id = link.source_id
            hit = _hit_for(step_id, present, loaded)
            if hit is None or (step_id not in present and not query.admits_record(hit.record, direct=False)):
                continue
            if not isinstance(hit.record, MemoryRecord):  # pragma: no cover - lifecycle links join memories
                continue
            _current, seen, path = walks[root]
            path = [*path, (link, hit.record)]
            if hit.record.is_valid:
                found[root] = (hit, path)
                continue
            seen.add(step_id)
            going[root] = (step_id, seen, path)
        walks = going
    return found


def rerank(
    reranker: Reranker, query: str, hits: Sequence[SearchHit], count: int, *, now: datetime
) -> list[SearchHit]:
    """The best ``count`` hits re-ordered by the reranker's scores (ties keep the fused order),
    followed by the rest unchanged. A reranker that raises, or answers with the wrong number of
    scores or a non-finite one, leaves the fused order (and a warning in the log)."""
    head, tail = list(hits[:count]), list(hits[count:])
    if len(head) < 2:
        return [*head, *tail]
    candidates = [
        RerankCandidate(
            id=hit.id,
            text=hit.record.content,
            record_type=hit.record.record_type,
            timestamp=hit.record.timestamp or hit.record.created_at,
        )
        for hit in head
    ]
    try:
        scores = list(reranker.rerank(query, candidates, now=now))
    except Exception as exc:  # noqa: BLE001 - a reranker's failure only costs its order
        log_failure(log, exc, "reranking failed; the fused order is kept")
        return [*head, *tail]
    if len(scores) != len(head) or not all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in scores
    ):
        log.warning(
            "the reranker answered %d scores for %d candidates; the fused order is kept",
            len(scores),
            len(head),
        )
        return [*head, *tail]
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    return [*(head[i] for i in order), *tail]


def maximal_marginal_relevance(
    candidates: Sequence[tuple[str, str]],
    count: int,
    *,
    balance: float,
) -> list[str]:
    """Choose ``count`` of ``(id, text)`` candidates (best first), by maximal
    marginal relevance: each pick maximises ``balance · relevance − (1 − balance) · the
    highest similarity to an earlier pick``.

    Relevance is rank-based (``1 − rank / n``, comparable whatever the search's score scale);
    similarity is the overlap (Jaccard) of the two texts' content words, so five paraphrases
    of one fact do not fill five slots. ``balance`` 1 keeps the relevance order.
    """
    n = len(candidates)
    if count <= 0 or n == 0:
        return []
    terms = [frozenset(keyword_terms(text)) for _id, text in candidates]
    relevance = [1.0 - rank / n for rank in range(n)]
    chosen: list[int] = []
    closest = [0.0] * n  # highest similarity to a chosen candidate so far
    remaining = list(range(n))
    while remaining and len(chosen) < count:
        best = max(remaining, key=lambda i: (balance * relevance[i] - (1.0 - balance) * closest[i], -i))
        chosen.append(best)
        remaining.remove(best)
        for i in remaining:
            closest[i] = max(closest[i], _jaccard(terms[i], terms[best]))
    return [candidates[i][0] for i in chosen]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


# --- the refinements as pipeline stages --------------------------------------------------------


class Effect(enum.Enum):
    """What a :class:`Stage` may do to the hits it is given (checked by :func:`run_stage`)."""

    REORDER = "reorder"
    """Returns a permutation of its hits: nothing dropped, nothing brought in."""
    DROP = "drop"
    """Returns some of its hits, each once, nothing brought in. Not always a subsequence:
    :func:`collapse_duplicates` moves a valid copy up into its retired twin's slot."""
    ADD = "add"
    """Returns every hit it is given, each once, in any order, and may bring in records the
    search did not return (placeholders the searcher scores: real score and linked tree)."""


@dataclass(frozen=True, slots=True)
class StageContext:
    """What a stage may read besides the hits: the question's ``text``, the store ``query``,
    the caller's ``k``, the search's ``pool`` (its hits before any stage), the link ``graph``
    of the search's own read, and ``scored``: the hits the same search gives the memories of
    the ids given, whether or not it returned them (their real score and linked tree; by
    default none)."""

    text: str
    query: SearchQuery
    k: int
    pool: Sequence[SearchHit]
    graph: LinkGraph
    scored: Callable[[Sequence[str]], Mapping[str, SearchHit]] = _not_scored


Settles = Callable[[Sequence[SearchHit], int, float], bool]
"""``settles(hits, k, bound)``: given the hits a shorter candidate pool leaves after the thinning
stages, and ``bound``, the best score any hit after that pool can have, whether this stage's first
``k`` are the first ``k`` the whole pool would give."""


@dataclass(frozen=True, slots=True)
class Stage:
    """One refinement of a search's hits, best first (D20).

    ``apply(hits, context)`` returns the refined hits and must keep to ``effect``. The pool
    logic of the searcher reads the rest: ``settles`` (see :data:`Settles`; ``None`` when the
    stage reads the whole pool, a reranker or a recency blend, and then no shorter pool is
    tried) and ``counts`` (which hits count towards the ``k`` worth returning, for which a
    search that fell short looks deeper; ``None``: every hit).
    """

    name: str
    effect: Effect
    apply: Callable[[list[SearchHit], StageContext], list[SearchHit]]
    settles: Settles | None = None
    counts: Callable[[SearchHit], bool] | None = None


def _key(hit: SearchHit) -> CandidateKey:
    return (isinstance(hit.record, Message), hit.id)


def run_stage(stage: Stage, hits: Sequence[SearchHit], context: StageContext) -> list[SearchHit]:
    """``stage`` applied to ``hits``, checked against its declared effect (:class:`Effect`);
    raises :class:`StageEffectError` when it does not keep to it."""
    out = stage.apply(list(hits), context)
    before, after = Counter(map(_key, hits)), Counter(map(_key, out))
    if any(n > 1 for n in after.values()):
        raise StageEffectError(f"the {stage.name} stage returned a hit twice.")
    if stage.effect is Effect.REORDER and after != before:
        raise StageEffectError(f"the {stage.name} stage may only reorder its hits.")
    if stage.effect is Effect.DROP and not after.keys() <= before.keys():
        raise StageEffectError(f"the {stage.name} stage may only drop hits, not bring any in.")
    if stage.effect is Effect.ADD and not before.keys() <= after.keys():
        raise StageEffectError(f"the {stage.name} stage may bring records in but not drop any.")
    return out


def _always(hits: Sequence[SearchHit], k: int, bound: float) -> bool:
    return True


def _no_retired_first(hits: Sequence[SearchHit], k: int, bound: float) -> bool:
    """A retired memory among the first ``k`` may give its slot to a later valid copy, which
    only the whole pool can hold."""
    return not any(_is_retired(hit.record) for hit in hits[:k])


MERGE_PROVENANCE = Stage(
    "merge_provenance", Effect.DROP, lambda hits, context: merge_provenance(hits), settles=_always
)
""":func:`merge_provenance`, decided hit by hit in the fused order."""

COLLAPSE_DUPLICATES = Stage(
    "collapse_duplicates", Effect.DROP, lambda hits, context: collapse_duplicates(hits), settles=_no_retired_first
)
""":func:`collapse_duplicates`, decided hit by hit but for a retired copy's slot."""


def third_party_stage(penalty: float, demoted: Callable[[SearchHit], bool]) -> Stage:
    """:func:`demote_third_parties` for a first-person question (``demoted``: its
    :func:`third_party_test`); a demoted hit does not count towards the ``k`` worth returning."""

    def settles(hits: Sequence[SearchHit], k: int, bound: float) -> bool:
        # Every hit after the shorter pool scores at most ``bound``, so the k-th best demoted
        # score must reach it for the first k to stay the first k.
        if not any(demoted(hit) for hit in hits):
            return True
        scores = sorted((demoted_score(hit, penalty, demoted) for hit in hits), reverse=True)
        return len(scores) >= k and scores[k - 1] >= bound

    return Stage(
        "third_party_penalty",
        Effect.REORDER,
        lambda hits, context: demote_third_parties(hits, penalty, demoted),
        settles=settles,
        counts=lambda hit: not demoted(hit),
    )


def named_speaker(text: str, hits: Sequence[SearchHit]) -> str | None:
    """The one speaker of the message hits (``Message.speaker``) whose name ``text`` holds, word
    for word (case aside); ``None`` when it names none of them or several."""
    words = set(word_tokens(text))
    if not words:
        return None
    named: set[str] = set()
    for hit in hits:
        speaker = hit.record.speaker if isinstance(hit.record, Message) else None
        if speaker is not None and speaker not in named:
            tokens = word_tokens(speaker)
            if tokens and words.issuperset(tokens):
                named.add(speaker)
                if len(named) > 1:
                    return None
    return next(iter(named), None)


def speaker_stage(penalty: float) -> Stage:
    """For a question naming one speaker of the message hits (:func:`named_speaker`), the other
    speakers' messages lose ``penalty`` of their score (memory records keep theirs): who said
    it is matched as a field, not as one more word of the text. The speakers found decide
    whether one is named, so a pool with a named message is read whole; one without settles
    (no hit it leaves can be demoted, and a later one can only fall)."""

    def apply(hits: list[SearchHit], context: StageContext) -> list[SearchHit]:
        speaker = named_speaker(context.text, hits)
        if speaker is None:
            return hits

        def demoted(hit: SearchHit) -> bool:
            return isinstance(hit.record, Message) and hit.record.speaker not in (None, speaker)

        return demote_third_parties(hits, penalty, demoted)

    def settles(hits: Sequence[SearchHit], k: int, bound: float) -> bool:
        return not any(isinstance(hit.record, Message) and hit.record.speaker is not None for hit in hits)

    return Stage("speaker_penalty", Effect.REORDER, apply, settles=settles)


def rerank_stage(reranker: Reranker, count: int) -> Stage:
    """:func:`rerank` of the best ``count`` hits; it reads the whole pool."""
    return Stage(
        "reranker",
        Effect.REORDER,
        lambda hits, context: rerank(reranker, context.text, hits, count, now=context.query.now),
    )


def latest_stage(weight: float) -> Stage:
    """:func:`latest_first` for a question about the latest state; the blend reads every hit's
    rank and time, so the whole pool."""
    return Stage("latest_weight", Effect.REORDER, lambda hits, context: latest_first(hits, weight))


def _current_first(hits: list[SearchHit], context: StageContext) -> list[SearchHit]:
    if not any(_is_retired(hit.record) for hit in hits[: context.k]):
        return hits
    return current_before_history(
        hits, context.query, context.graph, pool=context.pool, limit=context.k, scored=context.scored
    )


CURRENT_FIRST = Stage("current_first", Effect.ADD, _current_first, settles=_always)
""":func:`current_before_history` over the first ``k`` hits (it reads only those, and brings in
the successors it needs, so a shorter pool settles it)."""

VERSION_HISTORY = Stage(
    "version_history",
    Effect.ADD,
    lambda hits, context: follow_versions(hits, context.pool, context.query, context.graph, limit=context.k),
)
""":func:`follow_versions` over the first ``k`` places; a message's memories may rank anywhere in
the pool, so it reads the whole pool."""
