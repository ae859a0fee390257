"""Adapters layer: ``HashingEmbedder``, a model-free ``Embedder`` by feature hashing (standard library only).

Texts that share words get similar vectors, which is enough for tests, examples, demos and
smoke benchmarks, and it needs no model files, no network and no numpy. It is what
``palimpsest --embedder hashing`` uses. Its figures say nothing about a real embedding model.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Final

from palimpsest.application.observability import observed_embedder
from palimpsest.application.ports import Embedder
from palimpsest.domain.errors import ArgumentTypeError, ConfigurationError
from palimpsest.domain.text import word_tokens

__all__ = ["HashingEmbedder"]

_EMPTY_FEATURE: Final = "\x00<no tokens>"


@functools.lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Where a feature lands and with which sign (memoised: chat text repeats its words)."""
    value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return value % dimension, (1.0 if (value >> 63) & 1 == 0 else -1.0)


def _features(text: str) -> list[str]:
    """The text's word tokens and adjacent token pairs. The text is lower-cased before it is
    split (as the first version did), so stored vectors stay valid for the rare characters
    whose lower case changes a word boundary."""
    tokens = word_tokens(text.lower())
    return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


class HashingEmbedder(Embedder):
    """Implements the ``Embedder`` port by hashing word unigrams and bigrams into a signed vector.

    Each feature (a word token of :func:`palimpsest.domain.text.word_tokens`, or two adjacent
    tokens) adds ±1 to one of ``dimension`` buckets, chosen (with the sign) by a BLAKE2b hash,
    so the result is the same on every machine and Python run. The vector is L2-normalised. A
    text without tokens gets the vector of a fixed placeholder feature, so every vector has a
    direction.
    """

    def __init__(self, dimension: int = 64) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 2:
            raise ConfigurationError("dimension must be an integer of at least 2.")
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_id(self) -> str:
        return f"hashing-v1-{self._dimension}"

    @observed_embedder
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        if isinstance(texts, str):
            raise ArgumentTypeError("embed() takes a sequence of texts, not one string.")
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        features = _features(text) or [_EMPTY_FEATURE]
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
