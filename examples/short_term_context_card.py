"""Seed 001, "Use Agent Memory short-term APIs", without LangGraph, run offline on palimpsest.

The seed wraps a LangGraph agent in middleware that persists each turn and, once the prompt
grows too large, replaces the history with a context card. This example keeps the memory
part of that recipe and drops the agent: it creates the seed's thread, appends its turns
(with canned assistant replies instead of a chat model), then builds the card both ways the
seed describes and prints the resulting prompts:

* external tail — ``get_context_card(except_last_messages=N, max_recent_messages=0)``; the
  prompt is the card followed by the last N raw messages (prompt-cache friendly);
* self-contained — ``get_context_card(except_last_messages=N, max_recent_messages=N)``; the
  prompt is the card alone, its ``<recent_messages>`` holding the raw tail.

The client uses the embedded store in a folder of your choice, the hashing embedder and the
extractive summariser; automatic extraction is off, as the seed advises when derived text
must be reviewed before it is reused.

The seed's own listing, middleware and agent included, runs in
``examples/langgraph_short_term_memory.py``.

Run it with ``python examples/short_term_context_card.py`` (a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.application.testing import ScriptedSummariser

TURNS = [
    (
        "I'm Maya. I'm migrating our nightly invoice reconciliation workflow from cron jobs to LangGraph.",
        "Nice to meet you, Maya. Moving invoice reconciliation to LangGraph makes the steps easier to observe.",
    ),
    (
        "The failing step right now is ledger enrichment after reconciliation.",
        "Ledger enrichment failing after reconciliation often means a lookup times out.",
    ),
    (
        "What workflow am I migrating, which step is failing, and who am I?",
        "You're Maya, migrating the nightly invoice reconciliation workflow, and ledger enrichment is failing.",
    ),
]
"""The seed's three user turns, each with the kind of reply its agent gives."""

NO_CARD_YET = "<context_card>\n  No relevant short-term context yet.\n</context_card>"


def main(folder: str | Path) -> dict[str, Any]:
    """Build both prompt shapes on a store in ``folder``; returns the names defined here.

    The client owns the store (``close_store=True``): close both with ``names["agent_memory"].close()``."""
    agent_memory = AgentMemory(
        store=EmbeddedStore(Path(folder) / "short-term-memory.db"),
        close_store=True,
        embedder=HashingEmbedder(),
        summariser=ScriptedSummariser(),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    thread_id = "langgraph_short_term_demo"
    user_id = "user_123"
    agent_id = "assistant_456"
    kept_message_count = 3

    thread = agent_memory.create_thread(
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        memory_extraction_config=MemoryExtractionConfig(context_summary_update_frequency=4),
    )

    # Persist each turn as it happens, as the seed's middleware does.
    for user_text, assistant_text in TURNS:
        thread.add_messages(
            [
                {"role": "user", "content": user_text},
                {"role": "assistant", "content": assistant_text},
            ]
        )

    raw_tail = [
        {"role": message.role, "content": message.content}
        for message in thread.get_messages(start=-kept_message_count)
    ]

    # External-tail pattern: LLM prompt = [context card, last N raw messages].
    external_tail_card = thread.get_context_card(
        except_last_messages=kept_message_count,
        max_recent_messages=0,
    ).content
    if not external_tail_card:
        external_tail_card = NO_CARD_YET
    external_tail_prompt = [{"role": "user", "content": external_tail_card}, *raw_tail]

    # Self-contained-card pattern: LLM prompt = [context card only].
    self_contained_card = thread.get_context_card(
        except_last_messages=kept_message_count,
        max_recent_messages=kept_message_count,
    ).content
    if not self_contained_card:
        self_contained_card = NO_CARD_YET
    self_contained_prompt = [{"role": "user", "content": self_contained_card}]

    print("== External-tail prompt ==")
    for message in external_tail_prompt:
        print(f"[{message['role']}]\n{message['content']}")
    print("\n== Self-contained prompt ==")
    for message in self_contained_prompt:
        print(f"[{message['role']}]\n{message['content']}")

    return locals()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        names = main(folder)
        names["agent_memory"].close()
