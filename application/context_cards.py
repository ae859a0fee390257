"""Application layer: ``ContextCardService``, the context-card use case (summary, topics, the
most relevant memories and messages, the newest messages), with its search fan-out.

The facade (``MemoryThread.get_context_card``) validates the arguments into a :class:`CardPlan`
and delegates here; a test can build the service from a store, a clock, a searcher and a
summary service, without a facade. The service owns the worker threads of its per-type search
fan-out (created on first use, shut down by :meth:`ContextCardService.close`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import MEMORY_RECORD_TYPES, RecordType, Thread
from palimpsest.domain.ports import Clock, MemoryStore
from palimpsest.domain.search import ScopeFilter
from palimpsest.domain.sentinel import ANY, NotSetType

from .config import ThreadSettings
from .ports import SummaryText
from .results import ContextCard, SearchResult
from .retrieval import maximal_marginal_relevance
from .searching import Searcher, within_token_budgets
from .summaries import SummaryService

__all__ = ["CARD_MAX_RELEVANT_DEFAULT", "CARD_TYPE_KEYS", "MAX_SEARCH_WORKERS", "CardPlan", "ContextCardService"]

log = logging.getLogger("palimpsest")

CARD_MAX_RELEVANT_DEFAULT = 5
CARD_TYPE_KEYS = frozenset({"message", "memory", "fact", "guideline", "preference"})
MAX_SEARCH_WORKERS = 8


class ContextCardService:
    """Builds context cards and the summaries they start from."""

    def __init__(self, *, store: MemoryStore, clock: Clock, searcher: Searcher, summaries: SummaryService) -> None:
        self._store = store
        self._clock = clock
        self._searcher = searcher
        self._summaries = summaries
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _search_pool(self) -> ThreadPoolExecutor:
        """Worker threads for concurrent per-type card searches, created on first use.

        A long-lived pool: store connections are per thread, so fresh threads per card would
        reopen them every time."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=MAX_SEARCH_WORKERS, thread_name_prefix="palimpsest-search")
            return self._pool

    @property
    def pool_open(self) -> bool:
        """Whether the search worker threads exist (they are created by the first concurrent card)."""
        with self._pool_lock:
            return self._pool is not None

    def close(self) -> None:
        """Shut the search worker threads down (waiting for running searches); idempotent. A
        card built afterwards starts a new pool."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def summary_text(
        self, thread: Thread, settings: ThreadSettings, except_last: int, *, fallback_message_count: int
    ) -> SummaryText:
        """The thread's summary, or (``except_last``) the summary of all but its newest messages."""
        limit = settings.context_card_token_limit
        if except_last == 0:
            return self._summaries.current(thread, token_limit=limit, fallback_message_count=fallback_message_count)
        with self._store.reading() as uow:
            tail = uow.messages.list_for_thread(thread.id, now=self._clock.now(), last_n=except_last + 1)
        if len(tail) <= except_last:
            return SummaryText("")
        return self._summaries.prefix(
            thread, tail[0].seq, token_limit=limit, fallback_message_count=fallback_message_count
        )

    def card(
        self,
        thread: Thread,
        settings: ThreadSettings,
        plan: CardPlan,
        metadata_filter: Any,
        token_budget: Any,
        soft_token_budget: Any,
    ) -> ContextCard:
        """Summary, topics, the most relevant records and (optionally) the newest messages."""
        now = self._clock.now()
        window = max(plan.except_last, plan.recent, 1)
        with self._store.reading() as uow:
            tail = uow.messages.list_for_thread(thread.id, now=now, last_n=window + 1)
        if not tail:
            return ContextCard("")
        recent = tuple(tail[len(tail) - plan.recent :]) if plan.recent else ()
        excluded_ids = {m.id for m in tail[len(tail) - plan.except_last :]} if plan.except_last else set()
        if plan.except_last and len(tail) <= plan.except_last:
            log.warning("context card: no messages remain after excluding the last %d", plan.except_last)
            return ContextCard("", recent_messages=recent)
        summary = self.summary_text(thread, settings, plan.except_last, fallback_message_count=plan.fallback)
        query = summary.text + ("\n" + "; ".join(summary.topics) if summary.topics else "")
        results: list[SearchResult] = []
        if query.strip():
            vector = self._searcher.summary_vector(thread.id, query, summary)
            results = self._results(thread, settings, query, vector, plan, metadata_filter, excluded_ids, now)
        results = within_token_budgets(results, token_budget, soft_token_budget)
        return ContextCard(summary.text, summary.topics, tuple(results), recent)

    def _results(
        self,
        thread: Thread,
        settings: ThreadSettings,
        query: str,
        vector: tuple[float, ...] | None,
        plan: CardPlan,
        metadata_filter: Any,
        excluded_ids: set[str],
        now: datetime,
    ) -> list[SearchResult]:
        searcher = self._searcher
        memory_scope = ScopeFilter(user_id=thread.user_id, agent_id=thread.agent_id, thread_id=ANY)
        message_scope = ScopeFilter(user_id=thread.user_id, agent_id=thread.agent_id, thread_id=thread.id)
        memory_types = [t.value for t in sorted(MEMORY_RECORD_TYPES, key=lambda t: t.value)]

        diversity = searcher.retrieval.card_diversity

        def run(types: list[str], k: int) -> list[SearchResult]:
            is_message = types == ["message"]
            # With diversity on, slots are chosen from a larger pool by maximal marginal relevance.
            pool = k if diversity is None else max(3 * k, k + 10)
            found = searcher.run(
                query,
                now=now,
                scope=message_scope if is_message else memory_scope,
                max_results=min(pool + (len(excluded_ids) if is_message else 0), 1000),
                record_types=types,
                metadata_filter=metadata_filter,
                include_invalid_results=plan.include_invalid,
                vector=vector,
            )
            if is_message:
                found = [r for r in found if r.id not in excluded_ids]
            if diversity is not None and len(found) > k:
                by_id = {r.id: r for r in found}
                picked = maximal_marginal_relevance(
                    [(r.id, r.record.content) for r in found], k, balance=diversity
                )
                found = [by_id[i] for i in picked]
            return found[:k]

        jobs = [([key], count) for key, count in plan.minimums.items()]
        jobs.append((memory_types, plan.max_relevant))
        jobs.append((["message"], plan.max_relevant))
        workers = min(settings.context_card_type_search_concurrency, len(jobs))
        if workers > 1:
            # Jobs go in waves of at most ``workers``.
            pool = self._search_pool()
            batches: list[list[SearchResult]] = []
            for wave in range(0, len(jobs), workers):
                batches.extend(pool.map(lambda job: run(*job), jobs[wave : wave + workers]))
        else:
            batches = [run(*job) for job in jobs]
        merged: list[SearchResult] = []
        seen: set[tuple[RecordType, str]] = set()
        for batch in batches:
            for result in batch:
                key = (result.record_type, result.id)
                if key not in seen:
                    seen.add(key)
                    merged.append(result)
        return merged[: plan.max_relevant]


@dataclass(frozen=True, slots=True)
class CardPlan:
    """A context card request, validated: what every argument of ``get_context_card`` resolves to."""

    fallback: int
    max_relevant: int
    recent: int
    except_last: int
    minimums: dict[str, int]
    include_invalid: bool

    @staticmethod
    def _count(name: str, value: Any, default: int, *, minimum: int = 0) -> int:
        if isinstance(value, NotSetType):
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"{name} must be an integer.")
        if value < minimum:
            raise ValidationError(f"{name} must be at least {minimum}.")
        return value

    @classmethod
    def validate(
        cls,
        fallback: Any,
        max_relevant: Any,
        recent: Any,
        except_last: Any,
        minimums: Any,
        include_invalid: Any,
    ) -> CardPlan:
        if not isinstance(except_last, NotSetType) and isinstance(except_last, int) and except_last < 0:
            raise ValidationError("except_last_messages must be non-negative.")
        skip = cls._count("except_last_messages", except_last, 0)
        tail = cls._count("max_recent_messages", recent, 0)
        if skip and tail not in (0, skip):
            raise ValidationError("except_last_messages requires max_recent_messages to be zero or the same count.")
        mins: dict[str, int] = {}
        if not isinstance(minimums, NotSetType) and minimums is not None:
            if not isinstance(minimums, Mapping):
                raise ValidationError("min_relevant_results_by_type must be a mapping.")
            unsupported = sorted(repr(key) for key in set(minimums) - CARD_TYPE_KEYS)
            if unsupported:
                raise ValidationError(
                    f"min_relevant_results_by_type contains unsupported record type(s): {', '.join(unsupported)} "
                    f"(supported: {', '.join(sorted(CARD_TYPE_KEYS))})."
                )
            for key, count in minimums.items():
                if isinstance(count, bool) or not isinstance(count, int):
                    raise ValidationError("min_relevant_results_by_type counts must be integers.")
                if count < 1:
                    raise ValidationError("min_relevant_results_by_type counts must be positive integers.")
                mins[key] = count
        total = sum(mins.values())
        if isinstance(max_relevant, NotSetType):
            cap = max(CARD_MAX_RELEVANT_DEFAULT, total)
        else:
            cap = cls._count("max_relevant_results", max_relevant, CARD_MAX_RELEVANT_DEFAULT, minimum=1)
            if total > cap:
                raise ValidationError("min_relevant_results_by_type total must not exceed max_relevant_results.")
        if not isinstance(include_invalid, (bool, NotSetType)):
            raise ValidationError("include_invalid_results must be True or False.")
        return cls(
            fallback=cls._count("fallback_message_count", fallback, 5),
            max_relevant=cap,
            recent=tail,
            except_last=skip,
            minimums=mins,
            include_invalid=True if isinstance(include_invalid, NotSetType) else include_invalid,
        )
