"""Application layer: ports for the capabilities the use cases need from models.

Each port is one small Protocol shaped around what a use case asks (cosmicpython-style), with
plain data in and out. Adapters implement them with a remote model (OpenAI-compatible), a
local model (MiniLM), or honest heuristics; shipped fakes implement them for tests.
Text handed to these ports is untrusted user data: implementations that prompt a model must
tell it never to follow instructions found in messages, summaries or memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from palimpsest.domain.model import MemoryRecord, Message, RecordType

__all__ = [
    "Embedder",
    "ExtractedMemory",
    "ExtractionRequest",
    "Extractor",
    "ImageCaptioner",
    "LinkProposal",
    "LinkResolution",
    "LinkResolver",
    "RerankCandidate",
    "Reranker",
    "Summariser",
    "SummaryText",
]


@runtime_checkable
class Embedder(Protocol):
    """Texts → unit vectors of a fixed dimension."""

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def model_id(self) -> str:
        """A stable identifier of the model (and its settings); stores remember it so vectors
        of different models are never mixed."""
        ...

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Sequence[Sequence[float]]:
        """One unit vector per text, in order. ``is_query`` lets asymmetric models add a prefix."""
        ...


@runtime_checkable
class LearnsDimension(Protocol):
    """An embedder whose vector size may be unknown until its model server is asked (an
    OpenAI-compatible model given no ``dimension``). A client opening a store first offers it
    the model id the store records, so that a store this model filled opens without asking
    the server (which may be down)."""

    def adopt_recorded_model(self, model_id: str) -> bool:
        """Take the vector size from ``model_id`` (a store's record of its vectors' model) when
        it names this embedder's model; ``True`` if the size is known afterwards."""
        ...


@dataclass(frozen=True, slots=True)
class SummaryText:
    """A thread summary: dense text plus up to 8 retrieval topics.

    ``quotes`` is the library's bookkeeping (not compared, not shown; a summariser leaves it
    out): the id of the stored message each sentence of ``text`` was taken from (``None`` for a
    sentence found in none, an abstractive summary's own words), sentence by sentence as
    :func:`~palimpsest.application.quotes.summary_sentences` splits it. A context card builds
    its query vector from the quoted messages' stored vectors instead of embedding the summary
    again (ARCHITECTURE.md D27)."""

    text: str
    topics: tuple[str, ...] = ()
    quotes: tuple[str | None, ...] = field(default=(), compare=False, repr=False)


@runtime_checkable
class Summariser(Protocol):
    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        """Fold ``messages`` (oldest first) into ``previous`` and return the new summary of the
        whole conversation so far. ``token_limit`` bounds the input the implementation may use."""
        ...


@dataclass(frozen=True, slots=True)
class LinkProposal:
    """A link from a new memory to an existing one, proposed by a model or a rule."""

    target_id: str
    link_type: str


@dataclass(frozen=True, slots=True)
class ExtractedMemory:
    """One atomic memory found in the newest messages."""

    record_type: RecordType
    text: str
    entities: tuple[str, ...] = ()
    importance: int | None = None
    scope: str | None = None
    timestamp: datetime | None = None
    valid_to: datetime | None = None
    links: tuple[LinkProposal, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    """The ids of the ``target_messages`` the memory was drawn from (empty: not attributed, so
    all of them); the memory inherits their metadata and expiry, and keeps them as provenance."""
    replaces: tuple[int, ...] = ()
    """The positions (from 0) of earlier memories of the same answer that this one corrects (a
    fact corrected later in the same messages): with automatic linking on, this memory gets a
    ``supersedes`` link to each, which retires them."""


@dataclass(frozen=True, slots=True)
class ExtractionRequest:
    target_messages: Sequence[Message]
    history_messages: Sequence[Message] = ()
    summary: SummaryText | None = None
    past_memories: Sequence[MemoryRecord] = ()
    link_candidates: Sequence[MemoryRecord] = ()
    custom_instructions: str | None = None
    token_limit: int | None = None


@runtime_checkable
class Extractor(Protocol):
    """Memories from a thread's newest messages.

    An implementation may say it never reads ``past_memories`` with a ``reads_past_memories``
    attribute set to False (absent counts as True): a pass then does not search for them (nor
    embed its messages' text as that search's query) unless they are its link candidates too
    (``DURING_EXTRACTION``).
    """

    def extract(self, request: ExtractionRequest) -> Sequence[ExtractedMemory]:
        """Durable, atomic memories grounded in ``request.target_messages`` (possibly none).

        With ``link_candidates`` given, proposals may reference only those candidates' ids.
        """
        ...


@dataclass(frozen=True, slots=True)
class LinkResolution:
    source_id: str
    links: tuple[LinkProposal, ...] = ()
    updated_text: str | None = None


@runtime_checkable
class LinkResolver(Protocol):
    """Decides the links from new memories to their candidates.

    An implementation may say it asks a model with a ``uses_model`` attribute (absent counts as
    False): ``add_memory`` links a new memory on its own by default only with such a resolver,
    as the reference does only when a model is configured; extraction uses any resolver.
    """

    def resolve(
        self,
        sources: Sequence[MemoryRecord],
        candidates: Mapping[str, Sequence[MemoryRecord]],
        *,
        custom_instructions: str | None = None,
    ) -> Sequence[LinkResolution]:
        """For each new memory, links to some of its candidates (new → candidate), and
        optionally a consolidated text for the new memory."""
        ...


@dataclass(frozen=True, slots=True)
class RerankCandidate:
    """One search result a reranker judges: plain data, no store handle.

    ``text`` is the record's content (untrusted). ``timestamp`` is the record's event time when
    it has one, else its creation time (timezone-aware, UTC), or None when neither is known.
    """

    id: str
    text: str
    record_type: RecordType
    timestamp: datetime | None = None


@runtime_checkable
class Reranker(Protocol):
    """A query and a small, already ranked candidate list → one relevance score per candidate.

    Applied after fusion on a bounded candidate set; the caller decides how scores reorder (or
    blend with) the fused ranking. Scores are comparable within one call only.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the reranker (model and settings), for logs and benchmarks."""
        ...

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], *, now: datetime) -> list[float]:
        """One score per candidate, in the candidates' order, higher is better (finite floats).
        Never reorders or drops a candidate; no candidates → ``[]``. ``now`` (timezone-aware)
        is the moment recency is measured from."""
        ...


@runtime_checkable
class ImageCaptioner(Protocol):
    """Image bytes → a short description for search (a vision model). The image is untrusted
    user data: an implementation that prompts a model tells it never to follow instructions
    the image shows, only to describe it."""

    def describe(self, image: bytes, mime_type: str) -> str:
        """A non-empty description of the image (``mime_type``: ``image/png``, ``image/jpeg`` or
        ``image/webp``). Raises ``ModelError`` when the model fails."""
        ...
