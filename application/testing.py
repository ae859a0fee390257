"""Application layer: the scripted test doubles of the model ports, shipped for tests and examples.

This module is the one home of the scripted doubles; nothing in the library's own code paths
uses it. None of them calls a model or the network, and all are pure standard-library Python.
(The model-free embedder, ``HashingEmbedder``, is a shipped adapter:
``palimpsest.adapters.hashing``.)

* :class:`ScriptedSummariser` — the ``Summariser`` port: a caller-supplied function, or an
  extractive default (previous text plus the first sentence of each new message);
* :class:`ScriptedExtractor` — the ``Extractor`` port: a caller-supplied function, or canned
  batches of :class:`~palimpsest.application.ports.ExtractedMemory` returned in order;
* :class:`ScriptedLinkResolver` — the ``LinkResolver`` port: a caller-supplied decision per
  source memory.

The summariser and extractor record every call they receive so tests can inspect what the
library asked for (``calls`` / ``requests``), without mocking.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from palimpsest.domain.errors import ArgumentTypeError
from palimpsest.domain.model import MemoryRecord, Message
from palimpsest.domain.text import STOP_WORDS, TOPIC_FILLERS, word_tokens

from .ports import (
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    LinkProposal,
    LinkResolution,
    LinkResolver,
    Summariser,
    SummaryText,
)

__all__ = [
    "ScriptedExtractor",
    "ScriptedLinkResolver",
    "ScriptedSummariser",
    "SummariserCall",
]

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
_MAX_TOPICS: Final = 8
_MAX_SENTENCE_CHARS: Final = 240
_NO_TOPIC: Final = STOP_WORDS | TOPIC_FILLERS


@dataclass(frozen=True, slots=True)
class SummariserCall:
    """One call a :class:`ScriptedSummariser` received."""

    previous: SummaryText | None
    messages: tuple[Message, ...]
    token_limit: int | None


SummariseFunction = Callable[[SummaryText | None, Sequence[Message]], SummaryText | str]


def _first_sentence(text: str) -> str:
    stripped = " ".join(text.split())
    if not stripped:
        return ""
    sentence = _SENTENCE_END.split(stripped, maxsplit=1)[0]
    return sentence[:_MAX_SENTENCE_CHARS]


def extractive_topics(text: str, limit: int = _MAX_TOPICS) -> tuple[str, ...]:
    """The most frequent non-stopword tokens of ``text`` (ties: first appearance), at most ``limit``."""
    words = [t for t in word_tokens(text) if t not in _NO_TOPIC and len(t) > 2 and not t.isdigit()]
    counts = Counter(words)
    first_seen = {w: i for i, w in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))
    return tuple(ranked[:limit])


class ScriptedSummariser(Summariser):
    """Implements the ``Summariser`` port without a model.

    With ``function``, each call returns ``function(previous, messages)`` (a ``SummaryText``
    or a plain string). Without it, the summary is extractive and deterministic: the previous
    text, then one line per new message with that message's first sentence; the topics are
    the most frequent non-stopword tokens of the resulting text (at most 8). Every call is
    recorded in :attr:`calls`.
    """

    def __init__(self, function: SummariseFunction | None = None) -> None:
        self._function = function
        self._lock = threading.Lock()
        self.calls: list[SummariserCall] = []

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Message], *, token_limit: int | None = None
    ) -> SummaryText:
        with self._lock:
            self.calls.append(SummariserCall(previous, tuple(messages), token_limit))
        if self._function is not None:
            result = self._function(previous, messages)
            return SummaryText(result) if isinstance(result, str) else result
        lines = [previous.text] if previous is not None and previous.text.strip() else []
        lines.extend(s for s in (_first_sentence(m.content) for m in messages) if s)
        text = "\n".join(lines)
        return SummaryText(text, extractive_topics(text))

    def __repr__(self) -> str:
        return f"ScriptedSummariser(calls={len(self.calls)})"


ExtractFunction = Callable[[ExtractionRequest], Iterable[ExtractedMemory]]


class ScriptedExtractor(Extractor):
    """Implements the ``Extractor`` port without a model.

    Pass either a function ``request -> memories`` or a list of batches (each a sequence of
    :class:`ExtractedMemory`): the n-th call returns the n-th batch, and every call after the
    last batch returns nothing. Every request is recorded in :attr:`requests`.
    """

    def __init__(self, script: ExtractFunction | Iterable[Sequence[ExtractedMemory]] | None = None) -> None:
        self._lock = threading.Lock()
        self._function: ExtractFunction | None = None
        self._batches: list[tuple[ExtractedMemory, ...]] = []
        if callable(script):
            self._function = script
        elif script is not None:
            for batch in script:
                items = tuple(batch)
                if not all(isinstance(m, ExtractedMemory) for m in items):
                    raise ArgumentTypeError("each scripted batch must be a sequence of ExtractedMemory.")
                self._batches.append(items)
        self.requests: list[ExtractionRequest] = []

    def extract(self, request: ExtractionRequest) -> list[ExtractedMemory]:
        with self._lock:
            self.requests.append(request)
            index = len(self.requests) - 1
        if self._function is not None:
            return list(self._function(request))
        return list(self._batches[index]) if index < len(self._batches) else []

    def __repr__(self) -> str:
        return f"ScriptedExtractor(requests={len(self.requests)})"


LinkFunction = Callable[[MemoryRecord, Sequence[MemoryRecord]], Sequence[LinkProposal]]


class ScriptedLinkResolver(LinkResolver):
    """Implements the ``LinkResolver`` port without a model.

    ``decide(source, candidates) -> proposals`` is called once per source memory; every call
    (source id and candidate ids) is recorded in :attr:`calls`, and every ``resolve`` batch
    size in :attr:`batches`. ``uses_model=True`` makes it stand in for a model-backed
    resolver, which ``add_memory`` asks by default (see the ``LinkResolver`` port).
    """

    def __init__(self, decide: LinkFunction, *, uses_model: bool = False) -> None:
        self._decide = decide
        self.uses_model = uses_model
        self._lock = threading.Lock()
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.batches: list[int] = []

    def resolve(
        self,
        sources: Sequence[MemoryRecord],
        candidates: Mapping[str, Sequence[MemoryRecord]],
        *,
        custom_instructions: str | None = None,
    ) -> list[LinkResolution]:
        with self._lock:
            self.batches.append(len(sources))
        out = []
        for source in sources:
            shown = list(candidates.get(source.id, ()))
            with self._lock:
                self.calls.append((source.id, tuple(c.id for c in shown)))
            out.append(LinkResolution(source.id, tuple(self._decide(source, shown))))
        return out

    def __repr__(self) -> str:
        return f"ScriptedLinkResolver(calls={len(self.calls)})"
