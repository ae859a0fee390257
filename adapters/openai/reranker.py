"""Adapters layer (OpenAI-compatible): ``LlmReranker``, the ``Reranker`` port as one JSON-schema chat request."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from palimpsest.application.ports import RerankCandidate, Reranker
from palimpsest.domain.errors import ArgumentTypeError, ConfigurationError

from . import prompts
from .errors import ModelOutputError
from .llm import JsonModel, _UsesModel
from .schemas import RerankPayload

__all__ = ["LlmReranker"]

log = logging.getLogger("palimpsest.adapters.openai")

MAX_RERANK_CANDIDATES: Final = 30
"""Candidates shown to the model in one request; the rest keep the lowest score."""
MAX_CANDIDATE_CHARS: Final = 1_000
"""A longer candidate text is shown as its beginning and end around an omission marker."""
MAX_QUERY_CHARS: Final = 2_000
MAX_SCORE: Final = 10.0
OPERATION: Final = "rerank"


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, not {value!r}.")
    return value


class LlmReranker(_UsesModel, Reranker):
    """Implements the ``Reranker`` port with one JSON-schema chat request (operation ``"rerank"``).

    The first ``max_candidates`` candidates (the caller's fused order is the best guess of which
    matter) are shown by index, each text escaped and shortened to ``max_chars``; the model
    scores each from 0 to 10 and the scores come back divided by 10, so in ``[0, 1]``. A shown
    candidate the model left out, and every candidate beyond ``max_candidates``, gets the lowest
    score, 0. Entries naming an index that was not shown, repeating an index (the first one
    counts) or carrying a non-finite score are ignored; scores outside 0..10 are clamped.

    An answer that is not JSON, breaks the schema, or scores none of the shown candidates raises
    ``ModelOutputError``; transport failures raise ``ModelError``/``ConfigurationError``. Either
    way the caller keeps its fused order. An empty (or blank) query sends nothing and scores 0.
    """

    def __init__(
        self,
        model: JsonModel,
        *,
        max_candidates: int = MAX_RERANK_CANDIDATES,
        max_chars: int = MAX_CANDIDATE_CHARS,
        max_query_chars: int = MAX_QUERY_CHARS,
    ) -> None:
        self._model = model
        self._max_candidates = _positive_int("max_candidates", max_candidates)
        self._max_chars = _positive_int("max_chars", max_chars)
        self._max_query_chars = _positive_int("max_query_chars", max_query_chars)

    @property
    def max_candidates(self) -> int:
        return self._max_candidates

    @property
    def model_id(self) -> str:
        name = getattr(self._model, "model", None)
        return f"llm-rerank:{name if isinstance(name, str) and name else type(self._model).__name__}"

    def rerank(self, query: str, candidates: Sequence[RerankCandidate], *, now: datetime) -> list[float]:
        if not isinstance(query, str):
            raise ArgumentTypeError(f"rerank() takes the query as a string, not {type(query).__name__}.")
        if not isinstance(now, datetime):
            raise ArgumentTypeError(f"rerank() takes now as a datetime, not {type(now).__name__}.")
        items = list(candidates)
        if not items or not query.strip():
            return [0.0] * len(items)
        shown = items[: self._max_candidates]
        system, user = prompts.rerank_prompt(
            query, shown, now=now, max_chars=self._max_chars, max_query_chars=self._max_query_chars
        )
        payload = self._model.complete_json(system, user, RerankPayload, name=OPERATION)
        scores: list[float | None] = [None] * len(shown)
        ignored = 0
        for entry in payload.get("scores") or ():
            index, score = entry.get("index"), entry.get("score")
            if (
                not isinstance(index, int)
                or not 1 <= index <= len(shown)
                or scores[index - 1] is not None
                or not isinstance(score, int | float)
                or not math.isfinite(score)
            ):
                ignored += 1
                continue
            scores[index - 1] = min(MAX_SCORE, max(0.0, float(score))) / MAX_SCORE
        missing = scores.count(None)
        if missing == len(shown):
            raise ModelOutputError(f"{OPERATION}: the model scored none of the {len(shown)} candidates shown.")
        if missing or ignored:
            log.info("rerank: %d of %d candidates unscored (lowest score), %d entries ignored",
                     missing, len(shown), ignored)
        return [0.0 if s is None else s for s in scores] + [0.0] * (len(items) - len(shown))

    def __repr__(self) -> str:
        return f"LlmReranker({self._model!r}, max_candidates={self._max_candidates})"
