"""Application layer: linking new memories to older ones (the two automatic link modes).

DURING_EXTRACTION: the extractor saw numbered candidates and proposed links in the same call.
POST_EXTRACTION: each new memory gets its own bounded candidate list (k=7, same user and
agent, valid memories only, searched with the memory's own stored vector) and a
``LinkResolver`` decides, in batches of at most 10 sources.
Either way a proposal becomes a link only if its target was one of the shown candidates, and
a proposal that the lifecycle rules refuse (self-link, reverse orientation, repeat) is
skipped: a model's mistake can never corrupt the graph or undo the stored memories.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from palimpsest.domain.errors import AgentMemoryError
from palimpsest.domain.model import MEMORY_RECORD_TYPES, MemoryRecord
from palimpsest.domain.ports import Clock
from palimpsest.domain.search import MAX_SEARCH_K, ScopeFilter
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .budgets import estimate_tokens
from .embedding import EmbeddingHelper, Vector
from .ports import LinkProposal, LinkResolver
from .record_service import RecordService
from .searching import Searcher

__all__ = [
    "LINK_CANDIDATES",
    "RESOLVER_BATCH",
    "Linker",
    "request_tokens",
]

log = logging.getLogger("palimpsest")

LINK_CANDIDATES: Final = 7
RESOLVER_BATCH: Final = 10
_MEMORY_TYPES: Final = sorted(t.value for t in MEMORY_RECORD_TYPES)


def request_tokens(source: MemoryRecord, candidates: Sequence[MemoryRecord]) -> int:
    """The estimated tokens one source (its text and its candidates') adds to a resolver request."""
    return estimate_tokens(source.content) + sum(estimate_tokens(c.content) for c in candidates)


class Linker:
    """Turns link proposals into links, and runs post-extraction linking with the resolver."""

    def __init__(
        self,
        *,
        searcher: Searcher,
        clock: Clock,
        memory: RecordService,
        embeddings: EmbeddingHelper,
        resolver: LinkResolver | None,
    ) -> None:
        self._searcher = searcher
        self._clock = clock
        self._memory = memory
        self._embeddings = embeddings
        self._resolver = resolver

    @property
    def resolver(self) -> LinkResolver | None:
        return self._resolver

    def candidates_for(
        self, record: MemoryRecord, exclude: Iterable[str], vector: Vector | None | NotSetType = NOTSET
    ) -> list[MemoryRecord]:
        """The bounded candidate list of one new memory (never itself or its batch siblings),
        searched with ``vector``, the memory's stored vector (embedded again when not given).

        The search asks for enough results to skip every sibling, within the search's bound
        (``MAX_SEARCH_K``): past it, a memory of a very large pass may get fewer candidates
        (its nearest results being siblings), never an invalid search."""
        skip = set(exclude)
        if isinstance(vector, NotSetType):
            keyword = self._searcher.strategy == "keyword"
            vector = None if keyword else self._embeddings.documents([record.content])[0]
        found = self._searcher.run(
            record.content,
            vector=vector,
            now=self._clock.now(),
            scope=ScopeFilter(user_id=record.user_id, agent_id=record.agent_id),
            max_results=min(LINK_CANDIDATES + len(skip), MAX_SEARCH_K),
            record_types=_MEMORY_TYPES,
            include_invalid_results=False,
            is_question=False,
        )
        out = [r.record for r in found if isinstance(r.record, MemoryRecord) and r.record.id not in skip]
        return out[:LINK_CANDIDATES]

    def apply_proposals(
        self, source: MemoryRecord, proposals: Sequence[LinkProposal], allowed: Mapping[str, MemoryRecord]
    ) -> int:
        """Create the proposed links whose targets were shown; returns how many were created."""
        created = 0
        for proposal in proposals:
            if proposal.target_id not in allowed or proposal.target_id == source.id:
                continue
            try:
                self._memory.link(source.id, proposal.target_id, proposal.link_type)
                created += 1
            except AgentMemoryError as exc:
                log.info(
                    "skipped a proposed %s link %s -> %s: %s", proposal.link_type, source.id, proposal.target_id, exc
                )
        return created

    def resolve_after_extraction(
        self,
        new_records: Sequence[MemoryRecord],
        *,
        custom_instructions: str | None,
        token_limit: int | None = None,
        vectors: Sequence[Vector | None] | None = None,
    ) -> int:
        """POST_EXTRACTION: candidates per new memory, one resolver call per ≤10 sources.
        ``vectors`` (aligned with ``new_records``) are the vectors they were stored with.

        ``token_limit`` (the thread's ``memory_link_extraction_token_limit``) bounds the estimated
        tokens of all the pass's resolver requests together; a source that would exceed it is not
        sent (it is stored, only unlinked: logged); below 1, no request is made."""
        resolver = self._resolver
        if resolver is None or not new_records:
            return 0
        if token_limit is not None and token_limit < 1:
            return 0
        budget = token_limit
        batch_ids = {r.id for r in new_records}
        if LINK_CANDIDATES + len(batch_ids) > MAX_SEARCH_K:
            log.info(
                "post-extraction linking: a pass of %d memories; each one's candidate search is capped at "
                "%d results, so some may get fewer than %d candidates",
                len(batch_ids),
                MAX_SEARCH_K,
                LINK_CANDIDATES,
            )
        stored: dict[str, Vector | None] = {} if vectors is None else {r.id: v for r, v in zip(new_records, vectors)}
        created = 0
        skipped = 0
        for start in range(0, len(new_records), RESOLVER_BATCH):
            sources = list(new_records[start : start + RESOLVER_BATCH])
            candidates = {s.id: self.candidates_for(s, batch_ids, stored.get(s.id, NOTSET)) for s in sources}
            sources = [s for s in sources if candidates[s.id]]
            if budget is not None:
                within = []
                for source in sources:
                    cost = request_tokens(source, candidates[source.id])
                    if cost > budget:
                        skipped += 1
                        continue
                    budget -= cost
                    within.append(source)
                sources = within
            if not sources:
                continue
            resolutions = resolver.resolve(
                sources, {s.id: candidates[s.id] for s in sources}, custom_instructions=custom_instructions
            )
            by_id = {s.id: s for s in sources}
            for resolution in resolutions:
                found = by_id.get(resolution.source_id)
                if found is None:
                    continue
                source = found
                text = resolution.updated_text
                if text and text.strip() and text != source.content:
                    vector = self._embeddings.documents([text])[0]
                    source = self._memory.update_record(source.id, content=text, embedding=vector)
                allowed = {c.id: c for c in candidates[source.id]}
                created += self.apply_proposals(source, resolution.links, allowed)
        if skipped:
            log.info(
                "post-extraction linking: %d new memor%s left unlinked by the %d-token link budget",
                skipped,
                "y" if skipped == 1 else "ies",
                token_limit,
            )
        return created
