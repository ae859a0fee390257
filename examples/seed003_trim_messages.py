"""Seed 003, "Short-term memory", pattern *trim messages*, run offline on palimpsest.

The seed keeps the context window small with a ``@before_model`` hook that returns
``RemoveMessage(REMOVE_ALL_MESSAGES)`` followed by the first message and the newest three or four,
on an agent whose checkpointer holds the thread; its four turns end with "what's my name?", which
the model still answers from the kept first message.

Here the checkpointer is ``PalimpsestSaver(memory)`` (graph state in the memory's own file) and
``ShortTermMemoryMiddleware`` keeps the conversation as a palimpsest thread. ``RemoveMessage``
means *delete* in LangChain, so the seed's trim deletes: the two messages it drops are gone from
the checkpointed state and from the palimpsest thread (ARCHITECTURE.md D42). To trim only what
the model sees, the second agent (``trim_request``, not in the seed) shortens the model request in
a ``@wrap_model_call`` hook and leaves the state alone: the same prompt reaches the model, and the
checkpoint and the thread keep every turn.

The chat model is LangChain's fake with canned replies (pass any chat model as ``model``).
Needs the ``langgraph`` extra. Run it with ``python examples/seed003_trim_messages.py``
(a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, before_model, wrap_model_call
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware

TURNS = ["hi, my name is bob", "write a short poem about cats", "now do the same but for dogs", "what's my name?"]
REPLIES = [
    "Hi Bob! How can I help?",
    "Soft paws on the sill, a cat keeps the sun for itself.",
    "A dog at the door, tail wagging the whole afternoon.",
    "Your name is Bob. You told me that earlier.",
]
"""The seed's four user turns and a canned reply to each."""


def canned_chat_model() -> GenericFakeChatModel:
    """A chat model that replies with :data:`REPLIES` in order."""
    return GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in REPLIES))


def _kept(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The seed's choice: the first message and the newest three (or four, to start on a user turn)."""
    return [messages[0], *(messages[-3:] if len(messages) % 2 == 0 else messages[-4:])]


@before_model
def trim_messages(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """Keep only the last few messages to fit context window (the seed's choice, shared with ``trim_request``)."""
    messages = state["messages"]
    if len(messages) <= 3:
        return None  # No changes needed
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *_kept(messages)]}


@wrap_model_call
def trim_request(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
    """The same trim applied to the model request only: the state (and palimpsest) keep everything."""
    if len(request.messages) <= 3:
        return handler(request)
    return handler(request.override(messages=_kept(request.messages)))


def main(folder: str | Path, model: Any = None, request_model: Any = None) -> dict[str, Any]:
    """Run the seed's four turns twice on a store in ``folder``: with the seed's trim (thread
    ``"1"``) and with ``trim_request`` (thread ``"2"``). Returns the store's path, each run's
    config and final state; the client is closed."""
    path = Path(folder) / "seed003-trim.db"
    results: dict[str, Any] = {"path": path}
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        checkpointer = PalimpsestSaver(memory)
        for name, thread_id, trim, chat_model in (
            ("seed", "1", trim_messages, model),
            ("request", "2", trim_request, request_model),
        ):
            # The trim hook comes first, so the middleware sees its removals in the same before_model.
            agent = create_agent(
                chat_model if chat_model is not None else canned_chat_model(),
                tools=[],
                middleware=[trim, ShortTermMemoryMiddleware(memory, user_id="bob", agent_id="assistant",
                                                            compaction_token_trigger=8_000)],
                checkpointer=checkpointer,
            )
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            for text in TURNS:
                final_response = agent.invoke({"messages": text}, config)
            final_response["messages"][-1].pretty_print()
            stored = memory.get_thread(thread_id).get_messages()
            print(f"{name}: {len(final_response['messages'])} messages in the state, {len(stored)} in palimpsest")
            results[name] = {"config": config, "state": final_response}
    return results


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
