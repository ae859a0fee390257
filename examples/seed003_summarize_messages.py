"""Seed 003, "Short-term memory", pattern *summarise messages*, run offline on palimpsest.

The seed replaces the early messages of a long conversation with a model-written summary
(LangChain's ``SummarizationMiddleware``: ``trigger=("tokens", 4000)``, ``keep=("messages", 20)``),
then asks "what's my name?" after four turns and gets "Your name is Bob!".

This example runs the seed's four turns twice, with ``PalimpsestSaver(memory)`` as the checkpointer
both times, and with thresholds small enough for four turns (``trigger=("tokens", 250)``, keep 3;
the two poems are long):

* thread ``"1"``, the seed's way: ``SummarizationMiddleware`` with a fake summary model; the
  checkpointed state becomes the summary message plus the newest messages, and the summarised ones
  exist nowhere any more in the graph state (no palimpsest middleware here; combined with it, the
  palimpsest thread keeps the summarised turns and does not store the summary: ARCHITECTURE.md D42);
* thread ``"2"``, palimpsest's way: ``ShortTermMemoryMiddleware(compaction_token_trigger=250,
  except_last_messages=3)``; the state becomes one context-card message plus the newest three
  messages, the card summarising (offline, no model call) what the prompt no longer holds, while
  the palimpsest thread keeps every turn: compaction by the middleware deletes nothing.

The chat models are LangChain's fakes with canned replies (pass any chat model as ``model``,
``summary_model`` or ``card_model``). Needs the ``langgraph`` extra. Run it with
``python examples/seed003_summarize_messages.py`` (a temporary folder is used).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware

TURNS = ["hi, my name is bob", "write a short poem about cats", "now do the same but for dogs", "what's my name?"]
_CATS = (
    "Soft paws on the windowsill, a cat keeps the morning sun all to itself. "
    "It blinks at the birds, it naps through the noon, it wakes for the sound of a tin. "
)
_DOGS = (
    "A dog waits at the door, tail wagging the whole afternoon away. "
    "It fetches the stick, it rolls in the grass, it sleeps at your feet when you come home. "
)
REPLIES = ["Hi Bob! How can I help you today?", _CATS * 4, _DOGS * 4, "Your name is Bob!"]
SUMMARY = "The user, Bob, introduced himself and asked for short poems about cats and dogs."
"""The seed's four user turns, a canned reply to each, and the fake summary model's summary."""

TOKEN_TRIGGER = 250
KEEP = 3


def canned_chat_model(replies: list[str]) -> GenericFakeChatModel:
    """A chat model that replies with ``replies`` in order."""
    return GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in replies))


def summary_chat_model() -> GenericFakeChatModel:
    """A chat model that gives :data:`SUMMARY` whenever it is asked for a summary."""
    return GenericFakeChatModel(messages=(AIMessage(content=SUMMARY) for _ in itertools.count()))


def main(
    folder: str | Path, model: Any = None, summary_model: Any = None, card_model: Any = None
) -> dict[str, Any]:
    """Run the seed's four turns with ``SummarizationMiddleware`` (thread ``"1"``) and with the
    palimpsest middleware (thread ``"2"``) on a store in ``folder``. Returns the store's path and
    each run's final state; the client is closed."""
    path = Path(folder) / "seed003-summarize.db"
    results: dict[str, Any] = {"path": path}
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        checkpointer = PalimpsestSaver(memory)
        summarizing = SummarizationMiddleware(
            model=summary_model if summary_model is not None else summary_chat_model(),
            trigger=("tokens", TOKEN_TRIGGER),
            keep=("messages", KEEP),
        )
        compacting = ShortTermMemoryMiddleware(
            memory, user_id="bob", agent_id="assistant", compaction_token_trigger=TOKEN_TRIGGER, except_last_messages=KEEP
        )
        for name, thread_id, middleware, chat_model in (
            ("summarization", "1", summarizing, model),
            ("palimpsest", "2", compacting, card_model),
        ):
            agent = create_agent(
                chat_model if chat_model is not None else canned_chat_model(REPLIES),
                tools=[],
                middleware=[middleware],
                checkpointer=checkpointer,
            )
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            for text in TURNS:
                final_response = agent.invoke({"messages": text}, config)
            print(final_response["messages"][0].content)  # the summary, or palimpsest's context card
            final_response["messages"][-1].pretty_print()
            results[name] = {"config": config, "state": final_response}
    return results


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
