"""Reliability helpers: the deterministic write plan of the crash test, shared by writer and checker.

Batch ``n`` is one public call, hence one transaction, with ids derived from ``n``:

* ``n % 3 == 0``: ``thread.add_messages`` of ``1 + n % 5`` messages to one of two threads;
* ``n % 3 == 1``: ``add_memory`` of record ``r{n}``, linked in the same call
  (``memory_id_to_link``) to an earlier record when there is one;
* ``n % 3 == 2``: ``link_records`` from the record of batch ``n - 1`` to another earlier record
  (or, while there is none, another unlinked ``add_memory``).

Links always run from a newer record to an older one, each with a pair of its own, so the plan
never asks for a link the lifecycle rules refuse; the relation types mix lifecycle links
(which retire their target) with others.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

USER_ID = "crash-user"
THREAD_IDS = ("crash-t0", "crash-t1")
LINK_TYPES = ("supersedes", "refines", "duplicates", "supports", "contradicts", "mentions")
MEMORY_TYPES = ("memory", "fact", "preference", "guideline")


@dataclass(frozen=True, slots=True)
class Batch:
    n: int
    kind: str  # "messages", "memory" or "link"
    thread_id: str | None = None
    message_ids: tuple[str, ...] = ()
    record_id: str | None = None
    memory_type: str | None = None
    link_id: str | None = None
    link_source: str | None = None
    link_target: str | None = None
    link_type: str | None = None

    @property
    def size(self) -> int:
        """How many rows the batch writes (messages, record, link)."""
        return len(self.message_ids) + (self.record_id is not None) + (self.link_id is not None)


def _records_before(n: int) -> list[str]:
    return [record for m in range(1, n) if (record := batch(m).record_id) is not None]


def _memory(n: int, rng: random.Random, target: str | None) -> Batch:
    return Batch(
        n,
        "memory",
        record_id=f"r{n:05d}",
        memory_type=MEMORY_TYPES[n % len(MEMORY_TYPES)],
        link_id=None if target is None else f"l{n:05d}",
        link_source=None if target is None else f"r{n:05d}",
        link_target=target,
        link_type=None if target is None else rng.choice(LINK_TYPES),
    )


@cache
def batch(n: int) -> Batch:
    rng = random.Random(n)
    if n % 3 == 0:
        count = 1 + n % 5
        return Batch(
            n,
            "messages",
            thread_id=THREAD_IDS[(n // 3) % 2],
            message_ids=tuple(f"m{n:05d}-{i}" for i in range(count)),
        )
    earlier = _records_before(n)
    if n % 3 == 1:
        return _memory(n, rng, rng.choice(earlier) if earlier else None)
    previous = batch(n - 1)
    candidates = [r for r in earlier if r not in (previous.record_id, previous.link_target)]
    if previous.record_id is None or not candidates:
        return _memory(n, rng, None)
    return Batch(
        n,
        "link",
        link_id=f"l{n:05d}",
        link_source=previous.record_id,
        link_target=rng.choice(candidates),
        link_type=rng.choice(LINK_TYPES),
    )


def content(message_or_record_id: str) -> str:
    """The text written under an id (the checker compares it)."""
    return f"reliability text {message_or_record_id}: the user likes sourdough pizza and long walks."
