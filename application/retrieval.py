"""Application layer: the refinements a search applies after the store's fused ranking (D20).

Each step takes the store's hits best first (a candidate pool larger than the caller's
``max_results``) and returns them re-ordered or thinned; the searcher cuts the result to
``max_results`` afterwards. Every step is pure except :func:`current_before_history` and
:func:`with_version_history`, which read the links of the memories they see; a memory they
bring in that the search did not return is scored by the searcher afterwards (:func:`brought_in`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import pairwise

from palimpsest.domain.links import is_lifecycle
from palimpsest.domain.model import MemoryRecord, Message, RecordLink
from palimpsest.domain.search import SearchHit, SearchQuery
from palimpsest.domain.subjects import asked_relations, names_in, third_party_of
from palimpsest.domain.text import keyword_terms, word_key, word_tokens

from .ports import RerankCandidate, Reranker

log = logging.getLogger("palimpsest")

NAME_CHARS = 3000
"""How much of a hit's text is searched for a name the question asks about."""

__all__ = [
    "HISTORY_WORDS",
    "LATEST_WORDS",
    "asks_across_versions",
    "asks_for_history",
    "asks_for_latest",
    "brought_in",
    "collapse_duplicates",
    "current_before_history",
    "demote_third_parties",
    "demoted_score",
    "latest_first",
    "maximal_marginal_relevance",
    "merge_provenance",
    "rerank",
    "source_message_ids",
    "third_party_test",
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


def current_before_history(
    hits: Sequence[SearchHit],
    query: SearchQuery,
    links_of: Callable[[str], Sequence[RecordLink]],
    load: Callable[[str], MemoryRecord | None],
    *,
    pool: Sequence[SearchHit] = (),
) -> list[SearchHit]:
    """Superseded memories rank below the memories that retired them.

    A direct hit that is an invalid memory retired by a lifecycle link (supersedes, refines,
    duplicates) gives its rank to its newest valid successor: the successor takes the hit's
    place (with its own hit when the search's ``pool`` has one, else loaded, see
    :func:`brought_in`, and only if the query's filters admit it) and the retired memory
    follows it. A retired memory whose successors are all out of reach keeps its rank.
    """
    order: list[SearchHit] = []
    placed: set[str] = set()
    present = {hit.id: hit for hit in pool}
    present.update((hit.id, hit) for hit in hits)
    for hit in hits:
        if hit.id in placed:
            continue
        record = hit.record
        if isinstance(record, MemoryRecord) and not record.is_valid:
            successor = _newest_valid_successor(record.id, query, links_of, load, present)
            if successor is not None and successor.id not in placed:
                order.append(successor)
                placed.add(successor.id)
        order.append(hit)
        placed.add(hit.id)
    return order


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
    """For a question across versions (:func:`asks_across_versions`): the other versions of
    each memory follow the hit that stands for it, newest first.

    The versions of a memory are the memories joined to it by ``supersedes`` links, in either
    direction and along the chain: what it replaced and what replaced it (at most
    ``max_versions``, the nearest first; refined and duplicated memories are the same fact, not
    another value). A message hit stands for the memories drawn from it alone that the search's
    ``pool`` (its hits before thinning) holds. A version keeps its own hit when the pool has
    one, else it is loaded (:func:`brought_in`); one the query's filters do not admit as a
    direct result (an invalid memory under ``include_invalid_results=False``, another type,
    scope or an expired one) is left out, and the chain is followed past it; one already placed
    stays where it is. The other hits keep their order after them. Only the hits among the
    first ``limit`` places are followed (the rest cannot reach a cut to ``limit``).
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
            for version in _versions(head.id, query, links_of, load, present, max_versions):
                if version.id not in placed:
                    order.append(version)
                    placed.add(version.id)
    return order


def _versions(
    record_id: str,
    query: SearchQuery,
    links_of: Callable[[str], Sequence[RecordLink]],
    load: Callable[[str], MemoryRecord | None],
    present: dict[str, SearchHit],
    max_versions: int,
) -> list[SearchHit]:
    """The admitted memories joined to ``record_id`` by ``supersedes`` links (breadth first,
    at most ``max_versions``, looking at no more than ``VERSION_VISITS`` memories), newest
    first: event time, else creation time."""
    found: list[SearchHit] = []
    seen = {record_id}
    frontier = [record_id]
    while frontier and len(found) < max_versions and len(seen) < VERSION_VISITS:
        reached: list[str] = []
        for current in frontier:
            for link in sorted(links_of(current), key=lambda l: (l.created_at, l.id)):
                if link.relation_type != "supersedes" or current not in (link.source_id, link.target_id):
                    continue
                other = link.target_id if link.source_id == current else link.source_id
                if other not in seen and len(seen) < VERSION_VISITS:
                    seen.add(other)
                    reached.append(other)
        for version_id in reached:
            if len(found) >= max_versions:
                break
            hit = _hit_for(version_id, present, load)
            if hit is not None and query.admits_record(hit.record, direct=True):
                found.append(hit)
        frontier = reached
    found.sort(key=lambda h: (h.record.timestamp or h.record.created_at, h.record.id), reverse=True)
    return found


def brought_in(hits: Sequence[SearchHit], pool: Sequence[SearchHit]) -> list[MemoryRecord]:
    """The memories among ``hits`` that the search did not return (not in its ``pool``): a
    refinement loaded them as placeholders (score 0, distance 1, no linked tree), which the
    searcher replaces by the hits the store gives them for the same query."""
    found = {hit.id for hit in pool}
    return [hit.record for hit in hits if hit.id not in found and isinstance(hit.record, MemoryRecord)]


def _hit_for(
    record_id: str, present: dict[str, SearchHit], load: Callable[[str], MemoryRecord | None]
) -> SearchHit | None:
    """The search's own hit for a record, else the record loaded as a placeholder hit (see
    :func:`brought_in`), else ``None`` (it is gone)."""
    hit = present.get(record_id)
    if hit is not None:
        return hit
    record = load(record_id)
    return None if record is None else SearchHit(record=record, score=0.0, distance=1.0)


def _newest_valid_successor(
    record_id: str,
    query: SearchQuery,
    links_of: Callable[[str], Sequence[RecordLink]],
    load: Callable[[str], MemoryRecord | None],
    present: dict[str, SearchHit],
    max_steps: int = 8,
) -> SearchHit | None:
    """Follow lifecycle links forwards (older target → newer source) to a valid memory."""
    current = record_id
    seen = {record_id}
    for _ in range(max_steps):
        newer = sorted(
            (l for l in links_of(current) if is_lifecycle(l.relation_type) and l.target_id == current),
            key=lambda l: (l.created_at, l.id),
            reverse=True,
        )
        step = next((l.source_id for l in newer if l.source_id not in seen), None)
        if step is None:
            return None
        seen.add(step)
        hit = _hit_for(step, present, load)
        if hit is None or (step not in present and not query.admits_record(hit.record, direct=False)):
            return None
        if isinstance(hit.record, MemoryRecord) and hit.record.is_valid:
            return hit
        current = step
    return None


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
    except Exception:
        log.warning("reranking failed; the fused order is kept", exc_info=True)
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
