"""Adapters layer (heuristic): honest offline heuristics for the model ports — English patterns,
TextRank and link rules, no model and no network.

* :class:`HeuristicExtractor` — the ``Extractor`` port by first-person English patterns;
* :class:`TextRankSummariser` — the ``Summariser`` port by extractive TextRank over sentences;
* :class:`RuleLinkResolver` — the ``LinkResolver`` port by conservative word-overlap rules.

They are useful offline and in tests of the whole pipeline; they are not a substitute for a
model on open-ended text (see the labelled benchmark for their measured precision and recall).
"""

from __future__ import annotations

from .extractor import HeuristicExtractor
from .linker import RuleLinkResolver, classify_link
from .summariser import TextRankSummariser

__all__ = ["HeuristicExtractor", "RuleLinkResolver", "TextRankSummariser", "classify_link"]
