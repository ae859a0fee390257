"""Seed 003, "Short-term memory", pattern *delete messages*, run offline on palimpsest.

The seed deletes messages for good with ``RemoveMessage``: an ``@after_model`` hook removes the
earliest two messages once there are more than two, and its streamed output shows the state
shrinking to the second exchange; ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` clears the whole
history.

Here the checkpointer is ``PalimpsestSaver(memory)`` and ``ShortTermMemoryMiddleware`` keeps the
conversation as a palimpsest thread; a deleted message is gone from the checkpointed state *and*
from the thread (ARCHITECTURE.md D42). The seed's ``delete_old_messages`` runs as the seed writes it; its
"delete all" function is used in a ``@before_model`` hook (``forget_on_request``, not in the seed)
that, when the user says "forget everything", removes all messages but that request, so the
history the model gets still starts with a user message, as the seed advises.
``memory.delete_thread(thread_id)`` (not shown) deletes a thread's turns and its checkpoints at once.

The chat model is LangChain's fake with canned replies (pass any chat model as ``model``).
Needs the ``langgraph`` extra. Run it with ``python examples/seed003_delete_messages.py``
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
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware

TURNS = ["hi! I'm bob", "what's my name?", "forget everything"]
REPLIES = [
    "Hi Bob! Nice to meet you. How can I help you today?",
    "Your name is Bob. How can I help you today, Bob?",
    "Done: I no longer have our earlier messages.",
]
"""The seed's two user turns, a third that clears the history, and a canned reply to each."""

FORGET = "forget everything"


def canned_chat_model() -> GenericFakeChatModel:
    """A chat model that replies with :data:`REPLIES` in order."""
    return GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in REPLIES))


@after_model
def delete_old_messages(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """Remove old messages to keep conversation manageable (the seed's hook; ids checked for the type checker)."""
    messages = state["messages"]
    if len(messages) > 2:
        # remove the earliest two messages
        return {"messages": [RemoveMessage(id=m.id) for m in messages[:2] if m.id is not None]}
    return None


@before_model
def forget_on_request(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """The seed's "delete all" on request, keeping the request itself for the model."""
    messages = state["messages"]
    if messages[-1].content != FORGET:
        return None
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), messages[-1]]}


def main(folder: str | Path, model: Any = None) -> dict[str, Any]:
    """Stream the three turns on a store in ``folder``; returns the store's path, the config and
    each streamed state as ``(type, content)`` pairs, as the seed prints them (a state the
    middleware's own steps stream again unchanged is printed once). The client is closed."""
    path = Path(folder) / "seed003-delete.db"
    streamed: list[list[tuple[str, Any]]] = []
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        agent = create_agent(
            model if model is not None else canned_chat_model(),
            tools=[],
            system_prompt="Please be concise and to the point.",
            middleware=[
                forget_on_request,
                delete_old_messages,
                ShortTermMemoryMiddleware(memory, user_id="bob", agent_id="assistant", compaction_token_trigger=8_000),
            ],
            checkpointer=PalimpsestSaver(memory),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "1"}}
        for text in TURNS:
            for event in agent.stream(
                {"messages": [{"role": "user", "content": text}]},
                config,
                stream_mode="values",
            ):
                values = [(message.type, message.content) for message in event["messages"]]
                if not streamed or values != streamed[-1]:  # the middleware's own steps repeat a state
                    streamed.append(values)
                    print(values)
            stored = memory.get_thread("1").get_messages()
            print(f"palimpsest: {[(m.role, m.content) for m in stored]}")
    return {"path": path, "config": config, "streamed": streamed}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
