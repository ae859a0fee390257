"""The run's user from LangGraph's runtime context, LangMem's namespaces, tools on ``ToolRuntime``
and a context card in a dynamic system prompt.

* ``PalimpsestStore`` reads LangMem's usual ``("memories", user_id)`` as the user's namespace (a
  collection label first), while ``(user_id, agent_id)`` keeps its meaning;
* the middleware, the tools and the dynamic prompt take ``thread_id`` / ``user_id`` from
  ``invoke(..., context=...)`` (``create_agent(context_schema=...)``);
* ``search_memory`` / ``save_memory`` read the run through the injected ``ToolRuntime``;
* ``context_card_prompt`` puts the thread's card in the system prompt, state untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from lg_doubles import scripted
from palimpsest.adapters.langgraph import (
    PalimpsestStore,
    ShortTermMemoryMiddleware,
    context_card_prompt,
    is_context_card_message,
    make_memory_tools,
)
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import ConfigurationError


@dataclass
class UserContext:
    user_id: str


def _call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"id": call_id, "name": name, "args": args, "type": "tool_call"}])


# -- PalimpsestStore namespaces -------------------------------------------------------------


def test_langmem_namespaces_are_scoped_to_the_user_they_name(memory: AgentMemory) -> None:
    store = PalimpsestStore(memory)
    store.put(("memories", "maya"), "diet", {"text": "Maya is vegetarian."})
    store.put(("memories", "bob"), "diet", {"text": "Bob eats everything."})
    store.put(("memories", "maya", "travel"), "seat", {"text": "Maya wants a window seat."})
    store.put(("maya", "assistant"), "tone", {"text": "Be brief with Maya."})  # the (user, agent) rule still holds

    maya = {(r.user_id, r.agent_id, r.content) for r in memory.list_memories(user_id="maya")}
    assert maya == {
        ("maya", None, '{"text": "Maya is vegetarian."}'),
        ("maya", "travel", '{"text": "Maya wants a window seat."}'),
        ("maya", "assistant", '{"text": "Be brief with Maya."}'),
    }
    assert not memory.list_memories(user_id="memories")
    assert [i.key for i in store.search(("memories", "maya"))] == ["seat", "diet"]
    assert [i.value for i in store.search(("memories", "bob"), query="food")] == [{"text": "Bob eats everything."}]
    assert sorted(store.list_namespaces(prefix=("memories",))) == [
        ("memories", "bob"),
        ("memories", "maya"),
        ("memories", "maya", "travel"),
    ]
    assert sorted(store.list_namespaces(prefix=("*", "maya"))) == [
        ("memories", "maya"),
        ("memories", "maya", "travel"),
    ]


def test_the_old_rule_on_request_and_a_put_rescopes_an_item_written_under_it(memory: AgentMemory) -> None:
    old = PalimpsestStore(memory, collection_labels=())
    old.put(("memories", "maya"), "diet", {"text": "Maya is vegetarian."})
    record = memory.list_memories(user_id="memories")[0]
    assert (record.user_id, record.agent_id) == ("memories", "maya")

    store = PalimpsestStore(memory)
    item = store.get(("memories", "maya"), "diet")  # still read by key
    assert item is not None and item.value == {"text": "Maya is vegetarian."}
    store.put(("memories", "maya"), "diet", {"text": "Maya is vegan now."})
    assert [(r.user_id, r.content) for r in memory.list_memories(user_id="maya")] == [
        ("maya", '{"text": "Maya is vegan now."}')
    ]
    assert not memory.list_memories(user_id="memories")
    with pytest.raises(ConfigurationError):
        PalimpsestStore(memory, collection_labels="memories")


def test_a_langmem_style_tool_writes_the_users_namespace_through_the_runtime(memory: AgentMemory) -> None:
    """As LangMem's manage-memory tool does: ``runtime.store`` under ``("memories", user)``, the
    user from the runtime context."""

    @tool
    def remember(content: str, runtime: ToolRuntime[UserContext]) -> str:
        """Remember something about the user."""
        assert runtime.store is not None
        runtime.store.put(("memories", runtime.context.user_id), "note-1", {"content": content})
        return "saved"

    agent = create_agent(
        model=scripted([_call("remember", "c1", content="Maya plays the cello."), "Saved."]),
        tools=[remember],
        store=PalimpsestStore(memory),
        context_schema=UserContext,
    )
    agent.invoke({"messages": [HumanMessage(content="I play the cello.")]}, context=UserContext(user_id="maya"))
    assert [(r.user_id, r.content) for r in memory.list_memories(user_id="maya")] == [
        ("maya", '{"content": "Maya plays the cello."}')
    ]


# -- the user from the runtime context --------------------------------------------------------


def test_the_middleware_takes_the_user_from_the_runtime_context(memory: AgentMemory) -> None:
    agent = create_agent(
        model=scripted(["Hello Maya."]),
        tools=[],
        middleware=[ShortTermMemoryMiddleware(memory, compaction_message_trigger=100)],
        context_schema=UserContext,
    )
    agent.invoke(
        {"messages": [HumanMessage(content="hi")]},
        {"configurable": {"thread_id": "c1"}},
        context=UserContext(user_id="maya"),
    )
    thread = memory.get_thread("c1")
    assert thread.user_id == "maya"
    assert [m.content for m in thread.get_messages(start=0, end=None)] == ["hi", "Hello Maya."]


def test_the_tools_read_the_run_through_tool_runtime(memory: AgentMemory) -> None:
    """No thread bound, no ``user_id`` in the config: the tools find both through the injected
    ``ToolRuntime`` (config and context), and the model never sees a ``runtime`` argument."""
    tools = make_memory_tools(memory)
    assert all("runtime" not in t.tool_call_schema.model_json_schema()["properties"] for t in tools)
    agent = create_agent(
        model=scripted(
            [
                _call("save_memory", "c1", content="Maya is allergic to peanuts.", memory_type="fact"),
                _call("search_memory", "c2", query="allergy"),
                "You are allergic to peanuts.",
            ]
        ),
        tools=tools,
        context_schema=UserContext,
    )
    result = agent.invoke(
        {"messages": [HumanMessage(content="Remember my allergy, then tell me.")]},
        {"configurable": {"thread_id": "c1"}},
        context=UserContext(user_id="maya"),
    )
    saved = memory.list_memories(user_id="maya")
    assert [(r.content, r.record_type.value) for r in saved] == [("Maya is allergic to peanuts.", "fact")]
    found = [m for m in result["messages"] if m.type == "tool"][1]
    assert "Maya is allergic to peanuts." in str(found.content)
    assert memory.get_thread("c1").user_id == "maya"


def test_the_async_tools_read_the_run_through_tool_runtime(memory: AgentMemory) -> None:
    import asyncio

    agent = create_agent(
        model=scripted([_call("save_memory", "c1", content="Maya lives in Lyon."), "Noted."]),
        tools=make_memory_tools(memory),
        context_schema=UserContext,
    )
    asyncio.run(
        agent.ainvoke(
            {"messages": [HumanMessage(content="I live in Lyon.")]},
            {"configurable": {"thread_id": "c2"}},
            context=UserContext(user_id="maya"),
        )
    )
    assert [r.content for r in memory.list_memories(user_id="maya")] == ["Maya lives in Lyon."]


# -- the context card in a dynamic system prompt ----------------------------------------------


def test_a_context_card_in_a_dynamic_system_prompt(memory: AgentMemory) -> None:
    memory.add_memory("Maya is vegetarian.", memory_type="preference", user_id="maya")
    model = scripted(["Hi Maya.", "Noted.", "A vegetarian risotto."])
    agent = create_agent(
        model=model,
        tools=[],
        system_prompt="You are a cooking assistant.",
        middleware=[
            ShortTermMemoryMiddleware(memory, compaction_message_trigger=100),
            context_card_prompt(memory, context_card_options={"min_relevant_results_by_type": {"preference": 1}}),
        ],
        context_schema=UserContext,
    )
    config = {"configurable": {"thread_id": "k1"}}
    context = UserContext(user_id="maya")
    messages: list[Any] = []
    for text in ["Hello, I cook for my family on Sundays.", "We like Italian food and fresh pasta.", "What should I cook?"]:
        messages.append(HumanMessage(content=text))
        messages = list(agent.invoke({"messages": messages}, config, context=context)["messages"])

    last = model.prompts[-1]
    system = last[0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("You are a cooking assistant.\n\n<context_card>")
    assert "Maya is vegetarian." in system.content.split("<relevant_information>")[1]
    # The prompt's own turns follow; the state holds no card and no system message.
    assert [m.content for m in last[1:]] == [m.content for m in messages[:-1]]
    assert not any(is_context_card_message(m) or isinstance(m, SystemMessage) for m in messages)
    with pytest.raises(ConfigurationError):
        context_card_prompt(memory, context_card_options={"max_recent_messages": 2})
