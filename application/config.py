"""Application layer: configuration objects, resolved field by field (operation → thread → client → default).

Every field defaults to ``NOTSET`` so that "not configured at this level" is distinguishable
from an explicit value (including ``None``); :meth:`MemoryExtractionConfig.resolve` merges the
layers and fills the library defaults, and the resolved values are what a thread persists.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from palimpsest.domain.errors import ConfigurationError, InvalidSearchError, ValidationError
from palimpsest.domain.model import MAX_COUNTER, Thread
from palimpsest.domain.search import (
    DEFAULT_DENSE_WEIGHT,
    RRF_K,
    Fusion,
    check_dense_weight,
    check_fusion,
    check_neighbour_radius,
    check_neighbour_weight,
)
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .caller_warnings import warn_caller
from .indexing import check_index_context
from .ports import Reranker

__all__ = [
    "BackgroundExtractionQueueFullBehavior",
    "ExtractionRetryPolicy",
    "ExtractionRunsIn",
    "ImageInputLimitConfig",
    "MemoryExtractionConfig",
    "MemoryExtractionImageContext",
    "MemoryExtractionMode",
    "MemoryLinkExtractionMode",
    "MemoryRetentionConfig",
    "MemorySearchConfig",
    "RetrievalConfig",
    "ThreadSettings",
    "TopKMemorySearchConfig",
    "extraction_counter",
    "stored_thread_settings",
]


class MemoryExtractionMode(str, enum.Enum):
    """INLINE finishes extraction before ``add_messages`` returns; BACKGROUND queues it after the raw write."""

    INLINE = "INLINE"
    BACKGROUND = "BACKGROUND"


class MemoryLinkExtractionMode(str, enum.Enum):
    """How new memories are linked to older ones during automatic extraction."""

    DISABLED = "DISABLED"
    DURING_EXTRACTION = "DURING_EXTRACTION"
    POST_EXTRACTION = "POST_EXTRACTION"


class MemoryExtractionImageContext(str, enum.Enum):
    """How images in messages reach extraction (the reference API's names).

    ``DISABLED`` extracts from the text alone; ``CAPTION`` writes each image into its message
    as ``[image: <description>]``. ``IMAGE`` (raw images for a vision extractor) acts as
    ``CAPTION``: the ``Extractor`` port takes text. ``"memory"`` is refused, as in the reference."""

    DISABLED = "disabled"
    IMAGE = "image"
    CAPTION = "caption"


class ExtractionRunsIn(str, enum.Enum):
    """Where a client's extraction jobs run: CLIENT, in the client's own background threads
    (or inline, as ``extraction_mode`` says); WORKERS, in worker processes
    (``palimpsest worker --store ...``): the client records each job with its messages and runs
    none (ARCHITECTURE.md D34)."""

    CLIENT = "CLIENT"
    WORKERS = "WORKERS"

    @classmethod
    def parse(cls, value: object) -> ExtractionRunsIn:
        """``value`` as a member (by value or name, any case); ``ConfigurationError`` otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        allowed = ", ".join(repr(m.value.lower()) for m in cls)
        raise ConfigurationError(f"extraction_runs_in must be one of {allowed}, got {value!r}.")


class BackgroundExtractionQueueFullBehavior(str, enum.Enum):
    DROP = "DROP"
    WAIT_THEN_DROP = "WAIT_THEN_DROP"
    WAIT_THEN_RAISE = "WAIT_THEN_RAISE"


_DEFAULTS: dict[str, Any] = {
    "memory_extraction_window": -1,
    "context_summary_update_frequency": -1,
    "memory_extraction_frequency": -1,
    "memory_extraction_token_limit": 100_000,
    "extract_memories": True,
    "enable_context_summary": True,
    "memory_extraction_custom_instructions": None,
    "memory_link_extraction_custom_instructions": None,
    "memory_extraction_image_context": MemoryExtractionImageContext.DISABLED,
    "memory_extraction_inherit_message_metadata": True,
    "extraction_mode": MemoryExtractionMode.BACKGROUND,
    "memory_link_extraction_mode": MemoryLinkExtractionMode.POST_EXTRACTION,
    "memory_link_extraction_token_limit": 100_000,
    "background_extraction_queue_full_behavior": BackgroundExtractionQueueFullBehavior.DROP,
    "background_extraction_queue_put_timeout_seconds": 300.0,
}

_ENUMS: dict[str, type[enum.Enum]] = {
    "memory_extraction_image_context": MemoryExtractionImageContext,
    "extraction_mode": MemoryExtractionMode,
    "memory_link_extraction_mode": MemoryLinkExtractionMode,
    "background_extraction_queue_full_behavior": BackgroundExtractionQueueFullBehavior,
}

_INTS = (
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "memory_link_extraction_token_limit",
)


def _coerce_enum(name: str, value: Any) -> enum.Enum:
    enum_type = _ENUMS[name]
    if name == "memory_extraction_image_context" and value in ("memory", "MEMORY"):
        raise ConfigurationError("The 'memory' memory extraction image context is not supported.")
    try:
        return enum_type(value)
    except ValueError:
        try:
            return enum_type[str(value).upper()]
        except KeyError:
            allowed = ", ".join(m.name for m in enum_type)
            raise ConfigurationError(f"Invalid {name.replace('_', ' ')}: {value!r} (expected one of {allowed}).") from None


@dataclass(frozen=True, slots=True)
class MemoryExtractionConfig:
    """When and how memories are extracted from a thread. Omitted fields inherit.

    ``memory_link_extraction_token_limit`` bounds the estimated tokens of one pass's
    post-extraction link requests (below 1: none). In BACKGROUND mode a client queues at most
    128 jobs (16 of one thread); when the queue is full, ``background_extraction_queue_full_behavior``
    DROP leaves the job in the store (it runs, in order, once the queue has room: nothing is
    lost), WAIT_THEN_DROP first waits ``background_extraction_queue_put_timeout_seconds`` for
    room, WAIT_THEN_RAISE waits, then raises ``WaitTimeoutError`` (the messages are stored).

    ``memory_extraction_image_context`` says whether a message's images reach extraction as
    their descriptions (see :class:`MemoryExtractionImageContext`).
    """

    memory_extraction_window: int | NotSetType = NOTSET
    context_summary_update_frequency: int | NotSetType = NOTSET
    memory_extraction_frequency: int | NotSetType = NOTSET
    memory_extraction_token_limit: int | NotSetType = NOTSET
    extract_memories: bool | NotSetType = NOTSET
    enable_context_summary: bool | NotSetType = NOTSET
    memory_extraction_custom_instructions: str | None | NotSetType = NOTSET
    memory_link_extraction_custom_instructions: str | None | NotSetType = NOTSET
    memory_extraction_image_context: MemoryExtractionImageContext | str | NotSetType = NOTSET
    memory_extraction_inherit_message_metadata: bool | Sequence[str] | NotSetType = NOTSET
    extraction_mode: MemoryExtractionMode | str | NotSetType = NOTSET
    memory_link_extraction_mode: MemoryLinkExtractionMode | str | NotSetType = NOTSET
    memory_link_extraction_token_limit: int | NotSetType = NOTSET
    background_extraction_queue_full_behavior: BackgroundExtractionQueueFullBehavior | str | NotSetType = NOTSET
    background_extraction_queue_put_timeout_seconds: float | NotSetType = NOTSET

    def __post_init__(self) -> None:
        for name in _INTS:
            value = getattr(self, name)
            if value is not NOTSET and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigurationError(f"{name} must be an integer.")
        for name in ("extract_memories", "enable_context_summary"):
            value = getattr(self, name)
            if value is not NOTSET and not isinstance(value, bool):
                raise ConfigurationError(f"{name} must be True or False.")
        for name in ("memory_extraction_custom_instructions", "memory_link_extraction_custom_instructions"):
            value = getattr(self, name)
            if value is not NOTSET and value is not None and not isinstance(value, str):
                raise ConfigurationError(f"{name} must be a string or None.")
        for name in _ENUMS:
            value = getattr(self, name)
            if value is not NOTSET:
                object.__setattr__(self, name, _coerce_enum(name, value))
        inherit = self.memory_extraction_inherit_message_metadata
        if inherit is not NOTSET and not isinstance(inherit, bool):
            if isinstance(inherit, str) or not isinstance(inherit, Sequence):
                raise ConfigurationError(
                    "memory_extraction_inherit_message_metadata must be True, False or a sequence of keys."
                )
            keys = list(inherit)
            if not all(isinstance(k, str) and k for k in keys) or len(set(keys)) != len(keys):
                raise ConfigurationError("inherited metadata keys must be unique, non-empty strings.")
            object.__setattr__(self, "memory_extraction_inherit_message_metadata", tuple(keys))
        timeout = self.background_extraction_queue_put_timeout_seconds
        if timeout is not NOTSET and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
            raise ConfigurationError("background_extraction_queue_put_timeout_seconds must be a non-negative number.")

    def merged_over(self, base: MemoryExtractionConfig | None) -> MemoryExtractionConfig:
        """This config's set fields over ``base``'s (the more specific layer wins)."""
        if base is None:
            return self
        values = {
            f.name: getattr(self, f.name) if getattr(self, f.name) is not NOTSET else getattr(base, f.name)
            for f in fields(self)
        }
        return MemoryExtractionConfig(**values)

    @classmethod
    def resolve(cls, *layers: MemoryExtractionConfig | None) -> MemoryExtractionConfig:
        """Merge layers, most specific first, and fill every remaining field with its default."""
        result = cls(**_DEFAULTS)
        for layer in reversed([l for l in layers if l is not None]):
            result = layer.merged_over(result)
        return result

    def to_json(self) -> dict[str, Any]:
        """The set fields as JSON values (enums by value) — what a thread persists."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is NOTSET:
                continue
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> MemoryExtractionConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})


@dataclass(frozen=True, slots=True)
class MemoryRetentionConfig:
    """Store-wide TTL policy: a default for writes that omit ``ttl_days`` and a cap for all
    (positive numbers of days, or None)."""

    default_ttl_days: float | None | NotSetType = NOTSET
    max_ttl_days: float | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        for name in ("default_ttl_days", "max_ttl_days"):
            value = getattr(self, name)
            if value is NOTSET or value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigurationError(f"{name} must be a finite, non-negative number of days or None.")
            if value == 0:  # as ttl_days=0: every record it applies to would expire at once
                raise ConfigurationError(f"{name}=0 would make records expire at once; use a positive number or None.")
        default, cap = self.default, self.maximum
        if default is not None and cap is not None and default > cap:
            raise ConfigurationError("default_ttl_days must be less than or equal to max_ttl_days.")

    def to_json(self) -> dict[str, Any]:
        """What the store keeps (its ``memory_retention_config`` setting)."""
        return {"default_ttl_days": self.default, "max_ttl_days": self.maximum}

    @classmethod
    def from_json(cls, data: object) -> MemoryRetentionConfig:
        """The policy a stored setting holds, checked like the constructor's arguments."""
        if not isinstance(data, Mapping):
            raise ConfigurationError("a retention policy must be a JSON object.")
        unknown = sorted(set(data) - {"default_ttl_days", "max_ttl_days"})
        if unknown:
            raise ConfigurationError(f"unknown field(s): {', '.join(map(str, unknown))}.")
        return cls(default_ttl_days=data.get("default_ttl_days"), max_ttl_days=data.get("max_ttl_days"))

    @property
    def default(self) -> float | None:
        return None if isinstance(self.default_ttl_days, NotSetType) else self.default_ttl_days

    @property
    def maximum(self) -> float | None:
        return None if isinstance(self.max_ttl_days, NotSetType) else self.max_ttl_days


@dataclass(frozen=True, slots=True)
class ExtractionRetryPolicy:
    """How a client retries a failed extraction attempt in its own process.

    An attempt that fails (the model errs or answers badly) is retried after
    ``base_delay_seconds`` × 2^(attempt-1), jittered by up to a quarter and capped at
    ``max_delay_seconds``, until ``max_attempts`` attempts have failed; then the job is kept as
    failed with its reason. A storage fault (``StoreBusyError``: another writer held the store;
    ``StoreUnavailableError``: a server store's connection was lost) is not the job's failure: it is retried on the same schedule without counting an attempt.
    ``exit_wait_seconds`` bounds how long the interpreter's exit waits for queued extraction of
    a client that was never closed; what is left stays durable for the next client.
    ``lease_seconds`` is a claim's lease: an attempt under way renews it every sixth of it (at
    most every 5 s), so the job of a process that died (SIGKILL, a lost machine) is taken over
    by another client or worker once it ends; shorter means a faster take-over and more renewals.
    """

    max_attempts: int = 5
    base_delay_seconds: float = 1.0
    max_delay_seconds: float = 30.0
    exit_wait_seconds: float = 30.0
    lease_seconds: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigurationError("max_attempts must be a positive integer.")
        for name in ("base_delay_seconds", "max_delay_seconds", "exit_wait_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ConfigurationError(f"{name} must be a non-negative, finite number of seconds.")
        if self.base_delay_seconds > self.max_delay_seconds:
            raise ConfigurationError("base_delay_seconds must not exceed max_delay_seconds.")
        lease = self.lease_seconds
        if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not 0.1 <= lease <= 86_400:
            raise ConfigurationError("lease_seconds must be a number of seconds between 0.1 and 86400.")

    def delay(self, failures: int, jitter: float) -> float:
        """Seconds to wait after the ``failures``-th failure (1, 2, ...); ``jitter`` in [0, 1)."""
        exponent = min(max(failures - 1, 0), 32)
        wait = min(self.base_delay_seconds * (2.0**exponent), self.max_delay_seconds)
        return min(wait * (1.0 + 0.25 * jitter), self.max_delay_seconds)


DEFAULT_THIRD_PARTY_PENALTY = 1.0
"""``RetrievalConfig.third_party_penalty``'s default (measured: BENCHMARKS.md "Retrieval quality")."""
DEFAULT_NEIGHBOUR_WEIGHT = 0.7
DEFAULT_NEIGHBOUR_RADIUS = 2
DEFAULT_SPEAKER_PENALTY = 0.33
"""Conversation-context defaults, chosen on LoCoMo's development half by leave-one-conversation-out
(BENCHMARKS.md "LoCoMo")."""

@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How searches rank what they find; one object for ``search``, context cards and
    extraction's candidate lookups (ARCHITECTURE.md D20).

    * ``fusion``: how a hybrid search merges its dense and keyword lists, ``"rrf"``
      (reciprocal rank fusion, only ranks count), ``"score"`` (each list's scores min-max
      normalised, then weighted) or ``"absolute"`` (cosine similarity and the share of the
      query's ideal BM25 score, weighted; see :func:`~palimpsest.domain.search.fuse`);
    * ``dense_weight``: the dense list's weight, 0 (keyword only) to 1 (dense only); the keyword
      list gets ``1 - dense_weight``;
    * ``rrf_k``: the rank offset of reciprocal rank fusion;
    * ``merge_provenance``: a memory extracted from one message and that message are one piece
      of evidence: a message its memory outranks is left out (a memory is never left out for
      its message);
    * ``collapse_duplicates``: hits with the same words (case and punctuation aside) take one
      slot, the best ranked (a valid memory before a retired copy of it);
    * ``current_first``: a superseded (or refined, or duplicated) memory found by a search
      gives its rank to the newest valid memory that retired it, and follows it, unless the
      question asks across versions (about the past: "previously", "used to", "originally",
      ...; or in the speaker's present perfect: "What jobs have I had?");
    * ``version_history``: for a question across versions (about the past, or in the
      speaker's present perfect: "What jobs have I had?"), the other versions of a memory
      hit (the memories joined to it by ``supersedes`` links, either way along the chain)
      follow it, newest first (a message hit stands for the memories drawn from it); invalid
      memories must be included (``include_invalid_results``, on by default);
    * ``card_diversity``: maximal marginal relevance for context-card slots, the share of
      relevance against novelty (1 keeps the relevance order; ``None`` turns it off);
    * ``latest_weight``: for a query about the latest state ("current", "latest", "now", ...),
      the weight of recency (event time, else creation time) against rank among the
      candidates; 0 turns it off;
    * ``reranker``: a :class:`~palimpsest.application.ports.Reranker` that re-scores the best
      ``rerank_candidates`` fused candidates (the rest keep their order after them); a
      reranker that fails leaves the fused order;
    * ``third_party_penalty``: for a question in the first person, the share of its score a
      hit loses when it states a fact about someone the speaker names by their relation
      ("My sister lives in Oslo." for "Where do I live?"; English heuristics of
      :mod:`palimpsest.domain.subjects`); a question naming the relation ("my sister") keeps
      that relation's statements; 0 turns it off;
    * ``neighbour_weight`` and ``neighbour_radius``: conversation context for message hits: a
      message is lifted ``neighbour_weight`` of the way to its best-scoring neighbour (the
      messages of its thread within ``neighbour_radius`` places), in keyword relevance and in
      the fused score, and a neighbour not found enters so (a turn answering the question of
      the turn before it); 0 turns it off (:func:`~palimpsest.domain.search.with_neighbours`);
    * ``speaker_penalty``: when a question names exactly one of the speakers of the messages
      found (``metadata["speaker"]``, an input message's ``name``), the share of its score
      a message of another speaker loses; 0 turns it off;
    * ``candidates``: how many fused candidates the refinements above choose from;
    * ``index_context``: what a message's vector is made from besides its content, any of
      ``"role"`` (who said it) and ``"date"`` (when): see :mod:`palimpsest.application.indexing`.
      The store records it; changing it needs ``allow_embedding_model_change=True`` and
      ``reembed()``, like a model change.

    The defaults are the measured best of ``python -m benchmarks.quality`` (BENCHMARKS.md).
    """

    fusion: Fusion | str = Fusion.ABSOLUTE
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    rrf_k: int = RRF_K
    merge_provenance: bool = True
    collapse_duplicates: bool = True
    current_first: bool = True
    version_history: bool = True
    card_diversity: float | None = None
    latest_weight: float = 0.0
    third_party_penalty: float = DEFAULT_THIRD_PARTY_PENALTY
    reranker: Reranker | None = None
    rerank_candidates: int = 20
    candidates: int = 50
    index_context: tuple[str, ...] = ()
    neighbour_weight: float = DEFAULT_NEIGHBOUR_WEIGHT
    neighbour_radius: int = DEFAULT_NEIGHBOUR_RADIUS
    speaker_penalty: float = DEFAULT_SPEAKER_PENALTY

    def __post_init__(self) -> None:
        for name in ("merge_provenance", "collapse_duplicates", "current_first", "version_history"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False.")
        diversity = self.card_diversity
        if diversity is not None and (
            isinstance(diversity, bool) or not isinstance(diversity, (int, float)) or not 0.0 <= diversity <= 1.0
        ):
            raise ConfigurationError("card_diversity must be None (off) or a number between 0 and 1.")
        weight = self.latest_weight
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
            raise ConfigurationError("latest_weight must be a number between 0 and 1.")
        for name in ("third_party_penalty", "speaker_penalty"):
            penalty = getattr(self, name)
            if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0.0 <= penalty <= 1.0:
                raise ConfigurationError(f"{name} must be a number between 0 and 1.")
        if self.reranker is not None and not isinstance(self.reranker, Reranker):
            raise ConfigurationError("reranker must implement the Reranker port (rerank(query, candidates, now=...)).")
        if (
            isinstance(self.rerank_candidates, bool)
            or not isinstance(self.rerank_candidates, int)
            or not 1 <= self.rerank_candidates <= 1000
        ):
            raise ConfigurationError("rerank_candidates must be an integer between 1 and 1000.")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or not 1 <= self.candidates <= 1000:
            raise ConfigurationError("candidates must be an integer between 1 and 1000.")
        try:
            object.__setattr__(self, "fusion", check_fusion(self.fusion))
            object.__setattr__(self, "dense_weight", check_dense_weight(self.dense_weight))
            object.__setattr__(self, "neighbour_weight", check_neighbour_weight(self.neighbour_weight))
            object.__setattr__(self, "neighbour_radius", check_neighbour_radius(self.neighbour_radius))
        except InvalidSearchError as exc:
            raise ConfigurationError(str(exc)) from None
        object.__setattr__(self, "index_context", check_index_context(self.index_context))
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, int) or self.rrf_k < 1:
            raise ConfigurationError("rrf_k must be a positive integer.")


# -- post-search configuration ------------------------------------------------------------------

MAX_SEARCH_CONFIG_RESULTS = 1000


@dataclass(frozen=True, slots=True)
class MemorySearchConfig:
    """Defaults of a thread's (or a client's) searches and context cards: the token budgets.
    An argument passed to ``search``/``get_context_card`` overrides them; omitted fields leave
    the library's defaults."""

    token_budget: int | None | NotSetType = NOTSET
    soft_token_budget: int | None | NotSetType = NOTSET

    def __post_init__(self) -> None:
        for name in ("token_budget", "soft_token_budget"):
            value = getattr(self, name)
            if value is not NOTSET and value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigurationError(f"{name} must be an integer or None.")

    def to_json(self) -> dict[str, Any]:
        """The persisted form (``{"type": ...}`` and the fields that were set; no reranker)."""
        out: dict[str, Any] = {"type": "base"}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "reranker" and value is not NOTSET:
                out[f.name] = value
        return out

    @staticmethod
    def from_json(data: object) -> MemorySearchConfig | None:
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ConfigurationError("search_config must be a JSON object.")
        kind = data.get("type")
        known = {"base": MemorySearchConfig, "top_k": TopKMemorySearchConfig}
        if kind not in known:
            raise ConfigurationError(f"search_config type must be 'top_k' or 'base', got {kind!r}.")
        cls = known[kind]
        names = {f.name for f in fields(cls)} - {"reranker"}
        unknown = sorted(set(data) - names - {"type"})
        if unknown:
            raise ConfigurationError(f"search_config does not take: {', '.join(unknown)}.")
        return cls(**{k: v for k, v in data.items() if k != "type"})


@dataclass(frozen=True, slots=True)
class TopKMemorySearchConfig(MemorySearchConfig):
    """Top-k search defaults (the reference's default search configuration): ``max_results``
    (≤1000) and the budgets; ``reranker``/``reranker_max_candidates`` (≤1000) as in the
    reference, though a reranker object is not persisted with a thread. Persisted as
    ``{"type": "top_k", ...}``."""

    reranker: Reranker | None | NotSetType = NOTSET
    reranker_max_candidates: int | NotSetType = NOTSET
    max_results: int | NotSetType = NOTSET

    def __post_init__(self) -> None:
        MemorySearchConfig.__post_init__(self)
        for name in ("max_results", "reranker_max_candidates"):
            value = getattr(self, name)
            if value is NOTSET:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive integer.")
            if value > MAX_SEARCH_CONFIG_RESULTS:
                what = "search result count" if name == "max_results" else "reranker candidate count"
                raise ConfigurationError(f"{name} exceeds the maximum allowed {what}.")
        if self.reranker is not NOTSET and self.reranker is not None:
            if not isinstance(self.reranker, Reranker):
                raise ConfigurationError("reranker must implement the Reranker port.")
            # Honest until searches take a per-call reranker: the client's RetrievalConfig has one.
            raise ConfigurationError(
                "a reranker on a search config is not supported; pass RetrievalConfig(reranker=...) to the client."
            )

    def to_json(self) -> dict[str, Any]:
        return {**MemorySearchConfig.to_json(self), "type": "top_k"}


def check_search_config(value: object) -> MemorySearchConfig | None:
    if value is None or isinstance(value, NotSetType):
        return None
    if not isinstance(value, MemorySearchConfig):
        raise ConfigurationError("search_config must be a MemorySearchConfig.")
    return value


def check_llm(llm: object) -> None:
    """``llm=`` on a thread: only ``None`` (or omitted) is accepted. A handle's own model
    (the reference's per-thread LLM) is not supported: the models are the client's ports."""
    if llm is not None and not isinstance(llm, NotSetType):
        raise ConfigurationError(
            "llm= on a thread is accepted only as None here: configure the client's summariser and extractor instead."
        )


def search_defaults(config: MemorySearchConfig | None) -> dict[str, Any]:
    """The search (and card) arguments a search config gives defaults for, as keywords."""
    if config is None:
        return {}
    names = ("max_results", "token_budget", "soft_token_budget")
    return {n: getattr(config, n) for n in names if getattr(config, n, NOTSET) is not NOTSET}


DEPRECATED_EXTRACTION_KEYWORDS = (
    "extract_memories",
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "memory_extraction_custom_instructions",
    "memory_extraction_inherit_message_metadata",
    "enable_context_summary",
)


def fold_deprecated_extraction(
    config: MemoryExtractionConfig | NotSetType, *deprecated: Any
) -> MemoryExtractionConfig | NotSetType:
    """``memory_extraction_config``, or the deprecated inline extraction keywords (their values
    in the order of :data:`DEPRECATED_EXTRACTION_KEYWORDS`) folded into one, with a
    ``DeprecationWarning`` at the caller's line; both at once is a ``ConfigurationError``."""
    named = dict(zip(DEPRECATED_EXTRACTION_KEYWORDS, deprecated, strict=True))
    given = {k: v for k, v in named.items() if v is not NOTSET}
    if not given:
        return config
    if not isinstance(config, NotSetType):
        raise ConfigurationError("Pass memory_extraction_config or deprecated extraction parameters, not both.")
    warn_caller(
        f"{', '.join(sorted(given))}: pass memory_extraction_config=MemoryExtractionConfig(...) instead; "
        "these keywords are deprecated.",
        DeprecationWarning,
    )
    return MemoryExtractionConfig(**given)


# -- a thread's resolved settings ---------------------------------------------------------------


MIB: int = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ImageInputLimitConfig:
    """Limits on images: the bytes of one image, and the count and total bytes of the images
    one model request may carry. Resolved field by field (request → thread → client → default);
    a value above the absolute maximum, or below 1, is refused: the limits cannot be switched
    off."""

    max_raw_image_bytes: int | NotSetType = NOTSET
    max_images_per_llm_request: int | NotSetType = NOTSET
    max_total_raw_image_bytes_per_llm_request: int | NotSetType = NOTSET

    DEFAULTS: ClassVar[Mapping[str, int]] = {
        "max_raw_image_bytes": 10 * MIB,
        "max_images_per_llm_request": 100,
        "max_total_raw_image_bytes_per_llm_request": 100 * MIB,
    }
    MAXIMA: ClassVar[Mapping[str, int]] = {
        "max_raw_image_bytes": 32 * MIB,
        "max_images_per_llm_request": 512,
        "max_total_raw_image_bytes_per_llm_request": 256 * MIB,
    }

    def __post_init__(self) -> None:
        for name, maximum in self.MAXIMA.items():
            value = getattr(self, name)
            if isinstance(value, NotSetType):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
                raise ConfigurationError(f"{name} must be an integer between 1 and {maximum}.")

    def merged_over(self, base: ImageInputLimitConfig | None) -> ImageInputLimitConfig:
        """This config's set fields over ``base``'s."""
        if base is None:
            return self
        values = {f: getattr(self, f) for f in self.MAXIMA}
        return ImageInputLimitConfig(
            **{f: getattr(base, f) if isinstance(v, NotSetType) else v for f, v in values.items()}
        )

    @classmethod
    def resolve(cls, *layers: ImageInputLimitConfig | None) -> ImageInputLimitConfig:
        """The first layer that sets each field (nearest first), else the default: every field set."""
        values: dict[str, int] = {}
        for name, default in cls.DEFAULTS.items():
            chosen = default
            for layer in layers:
                if layer is None:
                    continue
                if not isinstance(layer, ImageInputLimitConfig):
                    raise ConfigurationError("image_input_limit_config must be an ImageInputLimitConfig.")
                value = getattr(layer, name)
                if not isinstance(value, NotSetType):
                    chosen = value
                    break
            values[name] = chosen
        return cls(**values)

    def limit(self, name: str) -> int:
        """A field's value, its default when unset."""
        value = getattr(self, name)
        return self.DEFAULTS[name] if isinstance(value, NotSetType) else int(value)

    def to_json(self) -> dict[str, int]:
        return {name: self.limit(name) for name in self.DEFAULTS}

    @classmethod
    def from_json(cls, data: object) -> ImageInputLimitConfig:
        if data is None:
            return cls.resolve()
        if not isinstance(data, Mapping):
            raise ConfigurationError("image_input_limit_config must be a JSON object.")
        return cls.resolve(cls(**{k: v for k, v in data.items() if k in cls.DEFAULTS}))


@dataclass(frozen=True, slots=True)
class ThreadSettings:
    """A thread's resolved settings. Everything but the search concurrency is persisted.

    ``message_shortening_input_token_limit`` (30,000 tokens; ≤0 disables) is the reference's
    cap on what a model call that shortens an oversized message may read. Prompts here shorten
    oversized messages by truncation (no model call), so it is stored and reported but bounds
    nothing yet. ``search_config`` holds the defaults of the thread's searches and cards."""

    extraction: MemoryExtractionConfig
    max_message_token_length: int = 15_000
    context_card_token_limit: int = 100_000
    context_card_type_search_concurrency: int = 5
    message_shortening_input_token_limit: int = 30_000
    search_config: MemorySearchConfig | None = None
    # images part: the resolved image limits (persisted as ``image_input_limit_config``)
    image_limits: ImageInputLimitConfig = field(default_factory=ImageInputLimitConfig.resolve)

    @staticmethod
    def _positive(name: str, value: Any, default: int) -> int:
        if isinstance(value, NotSetType):
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"{name} must be an integer.")
        if name == "context_card_type_search_concurrency" and value < 1:
            raise ValidationError("context_card_type_search_concurrency must be at least 1.")
        return value

    @classmethod
    def create(
        cls,
        *,
        client_config: MemoryExtractionConfig | None,
        thread_config: MemoryExtractionConfig | None,
        max_message_token_length: Any = NOTSET,
        context_card_token_limit: Any = NOTSET,
        context_card_type_search_concurrency: Any = NOTSET,
        message_shortening_input_token_limit: Any = NOTSET,
        search_config: Any = NOTSET,
        client_search_config: MemorySearchConfig | None = None,
    ) -> ThreadSettings:
        if thread_config is not None and not isinstance(thread_config, MemoryExtractionConfig):
            raise ConfigurationError("memory_extraction_config must be a MemoryExtractionConfig.")
        return cls(
            message_shortening_input_token_limit=cls._positive(
                "message_shortening_input_token_limit", message_shortening_input_token_limit, 30_000
            ),
            search_config=client_search_config if isinstance(search_config, NotSetType) else check_search_config(search_config),
            extraction=MemoryExtractionConfig.resolve(thread_config, client_config),
            max_message_token_length=cls._positive("max_message_token_length", max_message_token_length, 15_000),
            context_card_token_limit=cls._positive("context_card_token_limit", context_card_token_limit, 100_000),
            context_card_type_search_concurrency=cls._positive(
                "context_card_type_search_concurrency", context_card_type_search_concurrency, 5
            ),
        )

    def overridden(
        self,
        *,
        memory_extraction_config: Any = NOTSET,
        max_message_token_length: Any = NOTSET,
        context_card_token_limit: Any = NOTSET,
        context_card_type_search_concurrency: Any = NOTSET,
        message_shortening_input_token_limit: Any = NOTSET,
        search_config: Any = NOTSET,
    ) -> ThreadSettings:
        extraction = self.extraction
        if not isinstance(memory_extraction_config, NotSetType):
            if not isinstance(memory_extraction_config, MemoryExtractionConfig):
                raise ConfigurationError("memory_extraction_config must be a MemoryExtractionConfig.")
            extraction = memory_extraction_config.merged_over(extraction)
        return ThreadSettings(
            image_limits=self.image_limits,
            extraction=extraction,
            message_shortening_input_token_limit=self._positive(
                "message_shortening_input_token_limit",
                message_shortening_input_token_limit,
                self.message_shortening_input_token_limit,
            ),
            search_config=self.search_config
            if isinstance(search_config, NotSetType)
            else check_search_config(search_config),
            max_message_token_length=self._positive(
                "max_message_token_length", max_message_token_length, self.max_message_token_length
            ),
            context_card_token_limit=self._positive(
                "context_card_token_limit", context_card_token_limit, self.context_card_token_limit
            ),
            context_card_type_search_concurrency=self._positive(
                "context_card_type_search_concurrency",
                context_card_type_search_concurrency,
                self.context_card_type_search_concurrency,
            ),
        )

    def check_capabilities(self, *, has_extractor: bool) -> None:
        if self.extraction.extract_memories and not has_extractor:
            raise ConfigurationError(
                "Memory extraction is enabled but this client has no extractor: pass extractor=... "
                "or memory_extraction_config=MemoryExtractionConfig(extract_memories=False)."
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_extraction_config": self.extraction.to_json(),
            "max_message_token_length": self.max_message_token_length,
            "context_card_token_limit": self.context_card_token_limit,
            "message_shortening_input_token_limit": self.message_shortening_input_token_limit,
            "search_config": None if self.search_config is None else self.search_config.to_json(),
            "image_input_limit_config": self.image_limits.to_json(),
        }

    def with_image_limits(self, *layers: ImageInputLimitConfig | None | NotSetType) -> ThreadSettings:
        """These settings with image limits resolved from ``layers`` (nearest first) over the
        current ones; ``NOTSET`` and ``None`` layers are skipped."""
        chosen: list[ImageInputLimitConfig] = []
        for layer in layers:
            if layer is None or isinstance(layer, NotSetType):
                continue
            if not isinstance(layer, ImageInputLimitConfig):
                raise ConfigurationError("image_input_limit_config must be an ImageInputLimitConfig.")
            chosen.append(layer)
        return replace(self, image_limits=ImageInputLimitConfig.resolve(*chosen, self.image_limits))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThreadSettings:
        """The settings a stored thread ``config`` holds, checked as :meth:`create` checks its
        arguments: a value that does not parse is a :class:`ConfigurationError` naming it."""
        try:
            extraction = data.get("memory_extraction_config")
            if extraction is not None and not isinstance(extraction, Mapping):
                raise ConfigurationError("memory_extraction_config must be a JSON object.")
            return cls(
                image_limits=ImageInputLimitConfig.from_json(data.get("image_input_limit_config")),
                extraction=MemoryExtractionConfig.resolve(MemoryExtractionConfig.from_json(extraction)),
                max_message_token_length=cls._positive(
                    "max_message_token_length", data.get("max_message_token_length", NOTSET), 15_000
                ),
                context_card_token_limit=cls._positive(
                    "context_card_token_limit", data.get("context_card_token_limit", NOTSET), 100_000
                ),
                message_shortening_input_token_limit=cls._positive(
                    "message_shortening_input_token_limit",
                    data.get("message_shortening_input_token_limit", NOTSET),
                    30_000,
                ),
                search_config=MemorySearchConfig.from_json(data.get("search_config")),
            )
        except (ConfigurationError, ValidationError) as exc:
            raise ConfigurationError(f"thread config: {exc}") from None


def extraction_counter(state: Mapping[str, Any]) -> int:
    """The seq of the last message a thread handed to extraction, from its stored ``state``
    (0 before the first); a :class:`ConfigurationError` when it does not parse."""
    counters = state.get("memory_extraction_state")
    if counters is None:
        return 0
    if not isinstance(counters, Mapping):
        raise ConfigurationError("thread state: memory_extraction_state must be a JSON object.")
    done = counters.get("last_memory_extraction_counter", 0)
    if isinstance(done, bool) or not isinstance(done, int) or not 0 <= done <= MAX_COUNTER:
        raise ConfigurationError("thread state: last_memory_extraction_counter must be a non-negative integer.")
    return done


def stored_thread_settings(thread: Thread) -> ThreadSettings:
    """A stored thread's settings, its state checked too: what opening and appending to it read."""
    extraction_counter(thread.state)
    return ThreadSettings.from_json(thread.config)
