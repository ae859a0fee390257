"""Seed 003, "Short-term memory", patterns *before model* and *after model*, run offline on palimpsest.

The seed reads and changes the short-term memory around each model call: ``@before_model``
``trim_messages`` (the first message and the newest three or four, by ``RemoveMessage``) and
``@after_model`` ``validate_response``, which removes a reply containing a stop word
("password", "secret").

Here both hooks run as the seed writes them on an agent whose checkpointer is ``PalimpsestSaver(memory)``, with
``ShortTermMemoryMiddleware`` keeping the conversation as a palimpsest thread. The middleware is
listed *first* on purpose: it stores the model's reply at the end of the turn, after every
``after_model`` hook wherever it is listed, so the reply ``validate_response`` removes is never
stored, and the messages the trim removes are deleted (ARCHITECTURE.md D42). One more step, not
in the seed: the removed reply was in the checkpoint written right after the model call, so the
saver is given ``CheckpointRetention(keep_latest=1)`` and each thread keeps only its newest
checkpoint (pass ``retention=None`` to keep the whole history, reply included).

The chat model is LangChain's fake with canned replies (pass any chat model as ``model``).
Needs the ``langgraph`` extra. Run it with ``python examples/seed003_model_hooks.py``
(a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import after_model, before_model
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import CheckpointRetention, PalimpsestSaver, ShortTermMemoryMiddleware

TURNS = ["hi, my name is bob", "what's the office wifi password?", "write a short poem about cats", "what's my name?"]
REPLIES = [
    "Hi Bob! How can I help?",
    "The wifi password is hunter2.",
    "Soft paws on the sill, a cat keeps the sun for itself.",
    "Your name is Bob. You told me that earlier.",
]
"""Four user turns and a canned reply to each; the second reply gives a secret away."""

KEEP_NEWEST = CheckpointRetention(keep_latest=1)


def canned_chat_model() -> GenericFakeChatModel:
    """A chat model that replies with :data:`REPLIES` in order."""
    return GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in REPLIES))


@before_model
def trim_messages(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """Keep only the last few messages to fit context window (the seed's hook, as written)."""
    messages = state["messages"]

    if len(messages) <= 3:
        return None  # No changes needed

    first_msg = messages[0]
    recent_messages = messages[-3:] if len(messages) % 2 == 0 else messages[-4:]
    new_messages = [first_msg, *recent_messages]

    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new_messages]}


@after_model
def validate_response(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """Remove messages containing sensitive words (the seed's hook; ids checked for the type checker)."""
    stop_words = ["password", "secret"]
    last_message = state["messages"][-1]
    if any(word in last_message.content for word in stop_words) and last_message.id is not None:
        return {"messages": [RemoveMessage(id=last_message.id)]}
    return None


def main(
    folder: str | Path, model: Any = None, retention: CheckpointRetention | None = KEEP_NEWEST
) -> dict[str, Any]:
    """Run the four turns on a store in ``folder``; returns the store's path, the config and the
    final state. The client is closed."""
    path = Path(folder) / "seed003-hooks.db"
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        agent = create_agent(
            model if model is not None else canned_chat_model(),
            tools=[],
            middleware=[
                ShortTermMemoryMiddleware(memory, user_id="bob", agent_id="assistant", compaction_token_trigger=8_000),
                trim_messages,
                validate_response,
            ],
            checkpointer=PalimpsestSaver(memory, retention=retention),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "1"}}
        for text in TURNS:
            final_response = agent.invoke({"messages": text}, config)
            print([(message.type, message.content) for message in final_response["messages"]])
        final_response["messages"][-1].pretty_print()
        print([(m.role, m.content) for m in memory.get_thread("1").get_messages()])
    return {"path": path, "config": config, "state": final_response}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
