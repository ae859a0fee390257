"""Application layer: a summary's *quotes*, which stored message each of its sentences was taken
from (ARCHITECTURE.md D27).

An extractive summary (TextRank) is made of its thread's sentences, and every message's vector is
already stored. A summary that knows where its sentences come from lets a context card build its
query vector from those stored vectors (:meth:`~.searching.Searcher.summary_vector`) instead of
embedding the whole summary again each time it changes. The summary service finds the quotes
when it makes a summary, from the quotes of the revision it folds new messages into and from the
new messages themselves (no store read, no model), and keeps them with the stored revision (in
its metadata: one message id per sentence), so the first card of a thread in a new process
reads them too.

A sentence found in no message (an abstractive summary's own words) is quoted with ``None``: the
card embeds such sentences, as it embedded whole summaries before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from palimpsest.domain.text import normalise_apostrophes

__all__ = ["QUOTES_KEY", "Quote", "find_quotes", "quoted", "quotes_from_metadata", "quotes_metadata", "summary_sentences"]

Quote = tuple[str, str | None]
"""A sentence of a summary and the id of the message it was taken from (``None``: none found)."""

QUOTES_KEY: Final = "quotes"
"""The key of a stored summary revision's metadata that holds its quotes."""

_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+|\n+")


def _collapsed(text: str) -> str:
    return " ".join(normalise_apostrophes(text).split())


def summary_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as an extractive summariser takes them from messages: split
    after ``.!?;`` and at line breaks, apostrophes normalised, white space collapsed."""
    parts = (" ".join(p.split()) for p in _SENTENCE_END.split(normalise_apostrophes(text)))
    return [p for p in parts if p]


def find_quotes(
    text: str, sources: Iterable[tuple[str, str]], known: Iterable[tuple[str, str]] = ()
) -> tuple[str | None, ...]:
    """For each sentence of ``text`` (:func:`summary_sentences`), the id of the message it was
    taken from: first among ``known`` sentences (``(sentence, message id)``: the quotes of the
    summary ``text`` was folded from), then among ``sources`` (``(text, message id)``, in the
    order to try them), as one of their sentences or, failing that, inside one (a sentence cut
    short: a summary trimmed to its budget); ``None`` when none has it."""
    sentences = summary_sentences(text)
    if not sentences:
        return ()
    known = list(known)
    sources = list(sources)
    exact: dict[str, str] = {}
    for sentence, source_id in known:
        exact.setdefault(sentence, source_id)
    for source_text, source_id in sources:
        for sentence in summary_sentences(source_text):
            exact.setdefault(sentence, source_id)
    haystacks: list[tuple[str, str]] | None = None  # built on the first sentence not found as such
    ids: list[str | None] = []
    for sentence in sentences:
        found = exact.get(sentence)
        if found is None:
            if haystacks is None:
                haystacks = known + [(_collapsed(source_text), source_id) for source_text, source_id in sources]
            found = next((source_id for haystack, source_id in haystacks if sentence in haystack), None)
        ids.append(found)
    return tuple(ids)


def quoted(text: str, ids: Sequence[str | None]) -> tuple[Quote, ...]:
    """The sentences of ``text`` with the message ids ``ids`` (:func:`find_quotes`); ``()`` when
    they do not line up (quotes of another text)."""
    sentences = summary_sentences(text)
    return tuple(zip(sentences, ids, strict=True)) if ids and len(sentences) == len(ids) else ()


def quotes_metadata(ids: Sequence[str | None], metadata: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``metadata`` with the quotes' message ids (one per sentence, in order) under
    :data:`QUOTES_KEY`; nothing is kept when no sentence quotes a message."""
    out = dict(metadata or {})
    out.pop(QUOTES_KEY, None)
    if any(message_id is not None for message_id in ids):
        out[QUOTES_KEY] = list(ids)
    return out or None


def quotes_from_metadata(metadata: Mapping[str, Any] | None) -> tuple[str | None, ...]:
    """The quotes' message ids kept in a stored revision's metadata; ``()`` when it has none or
    they are not what :func:`quotes_metadata` writes (metadata is data, never trusted to be ours;
    :func:`quoted` checks they line up with the text)."""
    ids = metadata.get(QUOTES_KEY) if metadata else None
    if not isinstance(ids, list) or not all(i is None or isinstance(i, str) for i in ids):
        return ()
    return tuple(ids)
