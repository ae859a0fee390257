"""Adapters layer (heuristic): honest offline heuristics for the model ports — English patterns,
TextRank, link rules and lexical reranking, no model and no network.

* :class:`HeuristicExtractor` — the ``Extractor`` port by first-person English patterns and
  statements about each message's speaker;
* :class:`TextRankSummariser` — the ``Summariser`` port by extractive TextRank over sentences;
* :class:`RuleLinkResolver` — the ``LinkResolver`` port by conservative word-overlap rules;
* :class:`LexicalReranker` — the ``Reranker`` port by BM25 over the candidates plus a recency bonus.

They are useful offline and in tests of the whole pipeline; they are not a substitute for a
model on open-ended text (BENCHMARKS.md has their measured precision and recall).
"""

from __future__ import annotations

from .extractor import HeuristicExtractor
from .linker import RuleLinkResolver, classify_link
from .reranker import LexicalReranker
from .summariser import TextRankSummariser

__all__ = ["HeuristicExtractor", "LexicalReranker", "RuleLinkResolver", "TextRankSummariser", "classify_link"]
