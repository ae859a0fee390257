"""Application layer: deterministic test doubles of the model ports, shipped for tests and examples.

None of them calls a model or the network, and all are pure standard-library Python:

* :class:`HashingEmbedder` — the ``Embedder`` port by feature hashing of word unigrams and
  bigrams (texts sharing words get similar vectors, which is enough for search tests);
* :class:`ScriptedSummariser` — the ``Summariser`` port: a caller-supplied function, or an
  extractive default (previous text plus the first sentence of each new message);
* :class:`ScriptedExtractor` — the ``Extractor`` port: a caller-supplied function, or canned
  batches of :class:`~palimpsest.application.ports.ExtractedMemory` returned in order.

The summariser and extractor record every call they receive so tests can inspect what the
library asked for (``calls`` / ``requests``), without mocking.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from palimpsest.domain.model import MemoryRecord, Message

from .ports import ExtractedMemory, ExtractionRequest, LinkProposal, LinkResolution, SummaryText

__all__ = [
    "HashingEmbedder",
    "ScriptedExtractor",
    "ScriptedLinkResolver",
    "ScriptedSummariser",
    "SummariserCall",
]

_TOKEN: Final = re.compile(r"\w+")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
_EMPTY_FEATURE: Final = "\x00<no tokens>"
_MAX_TOPICS: Final = 8
_MAX_SENTENCE_CHARS: Final = 240

_STOPWORD_TEXT: Final = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves i'm im it's let lets
    also get got like want wants need needs please thanks thank yes okay ok right
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@functools.lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Where a feature lands and with which sign (memoised: chat text repeats its words)."""
    value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return value % dimension, (1.0 if (value >> 63) & 1 == 0 else -1.0)


class HashingEmbedder:
    """Implements the ``Embedder`` port by hashing word unigrams and bigrams into a signed vector.

    Each feature (a lowercased ``\\w+`` token, or two adjacent tokens) adds ±1 to one of
    ``dimension`` buckets, chosen (with the sign) by a BLAKE2b hash, so the result is the same
    on every machine and Python run. The vector is L2-normalised. A text without tokens gets
    the vector of a fixed placeholder feature, so every vector has a direction.
    """

    def __init__(self, dimension: int = 64) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 2:
            raise ValueError("dimension must be an integer of at least 2.")
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_id(self) -> str:
        return f"hashing-v1-{self._dimension}"

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string.")
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        tokens = _tokens(text)
        features = tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]
        if not features:
            features = [_EMPTY_FEATURE]
        vector = [0.0] * self._dimension
        self._add(vector, features)
        if not any(vector):  # the features cancelled out; the placeholder gives a direction
            self._add(vector, [_EMPTY_FEATURE])
        norm = math.hypot(*vector)
        return [x / norm for x in vector]

    def _add(self, vector: list[float], features: Iterable[str]) -> None:
        dimension = self._dimension
        for feature in features:
            bucket, sign = _bucket(feature, dimension)
            vector[bucket] += sign


    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"


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
    words = [t for t in _tokens(text) if t not in STOPWORDS and len(t) > 2 and not t.isdigit()]
    counts = Counter(words)
    first_seen = {w: i for i, w in reversed(list(enumerate(words)))}
    ranked = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))
    return tuple(ranked[:limit])


class ScriptedSummariser:
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


class ScriptedExtractor:
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
                    raise TypeError("each scripted batch must be a sequence of ExtractedMemory.")
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


class ScriptedLinkResolver:
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
