"""Seed 003, "Short-term memory", pattern *tools read and write short-term memory*, run offline on palimpsest.

The seed's tools take a hidden ``runtime: ToolRuntime`` argument: ``get_user_info`` reads a custom
state field (``runtime.state["user_id"]``), ``update_user_info`` reads the runtime context
(``runtime.context.user_id``) and writes the state by returning ``Command(update={"user_name": ...,
"messages": [ToolMessage(...)]})``, and ``greet`` reads that field back, asking for
``update_user_info`` first when it is missing.

Here the seed's tools and state and context schemas run as the seed writes them, in one agent whose checkpointer
is ``PalimpsestSaver(memory)``: the custom fields (``user_id``, ``user_name``) are checkpointed with
the messages, so a later turn on the thread still has them. ``ShortTermMemoryMiddleware`` keeps
the conversation as a palimpsest thread whose user is the run's context ``user_id``; it stores the
user's and the model's text turns, not tool calls or tool results (those stay in the state).
Differs from the seed: two turns on one thread ("look up user information", then "greet the
user"), where the seed runs two agents without a checkpointer.

The chat model is LangChain's fake, scripted with the tool calls a model would make (pass any
tool-calling chat model as ``model``). Needs the ``langgraph`` extra. Run it with
``python examples/seed003_tool_state.py`` (a temporary folder is used).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.messages import ToolMessage
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware
from pydantic import BaseModel


class CustomState(AgentState[Any]):
    user_id: str
    user_name: NotRequired[str]


class CustomContext(BaseModel):
    user_id: str


@tool
def get_user_info(runtime: ToolRuntime[CustomContext, CustomState]) -> str:
    """Look up user info."""
    user_id = runtime.state["user_id"]
    return "User is John Smith" if user_id == "user_123" else "Unknown user"


@tool
def update_user_info(runtime: ToolRuntime[CustomContext, CustomState]) -> Command[Any]:
    """Look up and update user info."""
    user_id = runtime.context.user_id
    name = "John Smith" if user_id == "user_123" else "Unknown user"
    return Command(
        update={
            "user_name": name,
            # update the message history
            "messages": [ToolMessage("Successfully looked up user information", tool_call_id=runtime.tool_call_id)],
        }
    )


@tool
def greet(runtime: ToolRuntime[CustomContext, CustomState]) -> str | Command[Any]:
    """Use this to greet the user once you found their info."""
    user_name = runtime.state.get("user_name", None)
    if user_name is None:
        return Command(
            update={
                "messages": [
                    ToolMessage(
                        "Please call the 'update_user_info' tool it will get and update the user's name.",
                        tool_call_id=runtime.tool_call_id,
                    )
                ]
            }
        )
    return f"Hello {user_name}!"


def _call(name: str, call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": {}, "id": call_id, "type": "tool_call"}])


SCRIPT = [
    _call("get_user_info", "call_1"),
    AIMessage(content="User is John Smith."),
    _call("greet", "call_2"),  # too early: greet asks for update_user_info first
    _call("update_user_info", "call_3"),
    _call("greet", "call_4"),
    AIMessage(content="Hello John Smith! How can I help you today?"),
]
"""What a tool-calling model does with the two requests."""


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools (it replies from its script regardless)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeChatModel:
        return self


def main(folder: str | Path, model: Any = None) -> dict[str, Any]:
    """Run the two requests on a store in ``folder``; returns the store's path, the config and the
    final state of each turn. The client is closed."""
    path = Path(folder) / "seed003-tools.db"
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        agent = create_agent(
            model=model if model is not None else ToolCallingFakeChatModel(messages=iter(SCRIPT)),
            tools=[get_user_info, update_user_info, greet],
            state_schema=CustomState,
            context_schema=CustomContext,
            middleware=[ShortTermMemoryMiddleware(memory, agent_id="assistant", compaction_token_trigger=8_000)],
            checkpointer=PalimpsestSaver(memory),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "1"}}
        context = CustomContext(user_id="user_123")
        lookup = agent.invoke({"messages": "look up user information", "user_id": "user_123"}, config, context=context)
        print(lookup["messages"][-1].content)
        # > User is John Smith.
        greeting = agent.invoke(
            {"messages": [{"role": "user", "content": "greet the user"}]}, config, context=context
        )
        for message in greeting["messages"][len(lookup["messages"]) :]:
            message.pretty_print()
    return {"path": path, "config": config, "lookup": lookup, "greeting": greeting}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
