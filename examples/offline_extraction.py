"""Fully offline: memories extracted and linked automatically, with no model server or key.

Two seed scenarios on ``open_memory``'s offline defaults (the heuristic extractor, TextRank
summaries, the rule link resolver, and the MiniLM embedder when its weights are installed):

* seed 004's pizza preferences, said in conversation: "thin crust" is superseded by
  "now sourdough", which is refined by "Neapolitan sourdough"; a 2-hop search shows the chain;
* seed 001's Maya: who she is, what she migrates and which step fails, as facts, and a
  context card (external-tail pattern) that carries them.

Run it with ``python examples/offline_extraction.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from palimpsest.adapters import open_memory
from palimpsest.application import OracleSearchResultFormatConfig


def main(folder: str | Path) -> dict[str, Any]:
    """Run both scenarios against a store in ``folder``; returns what a test wants to check."""
    with open_memory(Path(folder) / "offline.db") as memory:
        pizza = memory.create_thread(thread_id="pizza-preferences", user_id="graph-demo-user")
        for turn in (
            "My preferred pizza style is thin crust.",
            "I now prefer sourdough pizza.",
            "My preferred pizza style is sourdough, especially Neapolitan sourdough.",
        ):
            pizza.add_messages([{"role": "user", "content": turn}])
            pizza.wait_for_memory_extraction()
        preferences = memory.list_memories(user_id="graph-demo-user")
        results = memory.search(
            "What pizza should I recommend?",
            user_id="graph-demo-user",
            record_types=["preference"],
            max_results=5,
            num_hops=2,
            max_linked_results=20,
            include_invalid_results=False,
        )
        format_config = OracleSearchResultFormatConfig(
            include_invalid_results=True, show_timestamp=False, show_role=False, show_status=True
        )
        print("== Pizza preferences, current first, with their history ==")
        for result in results:
            print(result.format_content(format_config))

        maya = memory.create_thread(thread_id="langgraph_short_term_demo", user_id="user_123", agent_id="assistant_456")
        maya.add_messages(
            [
                {
                    "role": "user",
                    "content": "I'm Maya. I'm migrating our nightly invoice reconciliation workflow "
                    "from cron jobs to LangGraph.",
                },
                {"role": "assistant", "content": "Nice to meet you, Maya. What is failing right now?"},
                {"role": "user", "content": "The failing step right now is ledger enrichment after reconciliation."},
                {"role": "assistant", "content": "Understood: ledger enrichment fails after reconciliation."},
                {"role": "user", "content": "What workflow am I migrating, which step is failing, and who am I?"},
            ]
        )
        maya.wait_for_memory_extraction()
        facts = memory.list_memories(user_id="user_123")
        card = maya.get_context_card(except_last_messages=1, max_recent_messages=0, max_relevant_results=6)
        print("== Maya's context card (external tail: the last message is sent raw) ==")
        print(card.content)
        return {"preferences": preferences, "results": results, "facts": facts, "card": card}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="palimpsest-offline-") as folder:
        main(folder)
