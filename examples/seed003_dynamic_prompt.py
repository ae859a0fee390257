"""Seed 003, "Short-term memory", pattern *dynamic prompt*, run offline on palimpsest.

The seed builds the system prompt before each model call with ``@dynamic_prompt``, from the run's
context (``request.runtime.context["user_name"]``), and asks for the weather in SF with a
``get_weather`` tool.

Here the seed's prompt function and tool run as the seed writes them, followed by palimpsest's
``context_card_prompt(memory)``, another ``@dynamic_prompt`` that appends the thread's context card
(summary, topics, relevant records) to the system prompt the seed's function built. The
checkpointer is ``PalimpsestSaver(memory)`` and ``ShortTermMemoryMiddleware`` stores the turns the
card is built from. The prompt is the model request's only: neither the seed's text nor the card
is checkpointed or stored as a turn. While the prompt holds the whole thread, as here, the card
covers all of it (its records are still the relevant ones); after trimming or compaction it covers
what the prompt left out. Differs from the seed: a first turn on the thread (the user
mentions the hike they are planning), so the card has something to say at the weather question.

The chat model is LangChain's fake, scripted with the tool call a model would make (pass any
tool-calling chat model as ``model``). Needs the ``langgraph`` extra. Run it with
``python examples/seed003_dynamic_prompt.py`` (a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware, context_card_prompt


class CustomContext(TypedDict):
    user_name: str


def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"The weather in {city} is always sunny!"


@dynamic_prompt
def dynamic_system_prompt(request: ModelRequest) -> str:
    user_name = request.runtime.context["user_name"]
    return f"You are a helpful assistant. Address the user as {user_name}."


TURNS = ["I'm planning a hike on Mount Tamalpais this Saturday.", "What is the weather in SF?"]
SCRIPT = [
    AIMessage(content="A Saturday hike on Mount Tamalpais sounds great, John Smith. Bring water and layers."),
    AIMessage(
        content="",
        tool_calls=[{"name": "get_weather", "args": {"city": "San Francisco"}, "id": "call_1", "type": "tool_call"}],
    ),
    AIMessage(content="Hi John Smith, the weather in San Francisco is always sunny!"),
]
"""The two user turns and what a tool-calling model does with them."""


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools (it replies from its script regardless)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeChatModel:
        return self


def main(folder: str | Path, model: Any = None) -> dict[str, Any]:
    """Run the two turns on a store in ``folder``; returns the store's path, the config and the
    final state. The client is closed."""
    path = Path(folder) / "seed003-dynamic-prompt.db"
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        agent = create_agent(
            model=model if model is not None else ToolCallingFakeChatModel(messages=iter(SCRIPT)),
            tools=[get_weather],
            # The seed's prompt first: the card prompt appends to the system prompt it built.
            middleware=[
                dynamic_system_prompt,
                context_card_prompt(memory),
                ShortTermMemoryMiddleware(memory, user_id="john", agent_id="assistant", compaction_token_trigger=8_000),
            ],
            context_schema=CustomContext,
            checkpointer=PalimpsestSaver(memory),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "1"}}
        for text in TURNS:
            result = agent.invoke(
                {"messages": [{"role": "user", "content": text}]},
                config,
                context=CustomContext(user_name="John Smith"),
            )
        for msg in result["messages"][2:]:
            msg.pretty_print()
    return {"path": path, "config": config, "state": result}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
