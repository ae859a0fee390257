"""``search_memory`` and ``save_memory``: scoped to the thread's user and agent, results escaped.

Called directly, inside a ``create_agent`` tool loop driven by the scripted model, and through
their async path; the thread is a handle, an id, or the run's ``configurable.thread_id``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from lg_doubles import scripted
from palimpsest.adapters.langgraph import ShortTermMemoryMiddleware, make_memory_tools
from palimpsest.application import AgentMemory
from palimpsest.domain.errors import ConfigurationError


def _tools(memory: AgentMemory, thread: Any, **options: Any) -> dict[str, BaseTool]:
    return {t.name: t for t in make_memory_tools(memory, thread, **options)}


def test_the_tools_and_their_arguments(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    tools = _tools(memory, thread)
    assert set(tools) == {"search_memory", "save_memory"}
    assert set(tools["search_memory"].args) == {"query", "max_results"}
    assert set(tools["save_memory"].args) == {"content", "memory_type"}
    assert tools["save_memory"].args["memory_type"]["enum"] == ["memory", "fact", "guideline", "preference"]


def test_save_then_search_within_the_threads_user_and_agent(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    tools = _tools(memory, thread)
    answer = tools["save_memory"].invoke({"content": "The user lives in Lyon.", "memory_type": "fact"})
    assert answer.startswith('<saved record_type="fact" record_id="')
    saved = memory.list_memories(user_id="u1")
    assert [(r.content, r.record_type.value, r.user_id, r.agent_id, r.thread_id) for r in saved] == [
        ("The user lives in Lyon.", "fact", "u1", "a1", None)
    ]
    # Memories of another user, or of another agent of the same user, stay out of reach.
    memory.add_memory("The user lives in Oslo.", memory_type="fact", user_id="u2", agent_id="a1")
    memory.add_memory("The user lives in Rome.", memory_type="fact", user_id="u1", agent_id="other")
    found = tools["search_memory"].invoke({"query": "Where does the user live?"})
    assert found.startswith("<memories>") and found.endswith("</memories>")
    assert "Lyon" in found and "Oslo" not in found and "Rome" not in found


def test_results_are_escaped_and_history_is_shown_as_linked_context(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    old = memory.add_memory(
        "The user likes <b>thin crust</b> & olives.", memory_type="preference", user_id="u1", agent_id="a1"
    )
    new = memory.add_memory(
        "The user now prefers sourdough pizza.",
        memory_type="preference",
        user_id="u1",
        agent_id="a1",
        memory_id_to_link=old,
        link_type="supersedes",
    )
    found = _tools(memory, thread)["search_memory"].invoke({"query": "pizza", "max_results": 3})
    assert "<b>" not in found and "&lt;b&gt;thin crust&lt;/b&gt; &amp; olives" in found
    assert new in found and "<linked_record>" in found and "supersedes" in found
    # Current records only as direct hits: the superseded one appears once, as history.
    assert found.count(f"<record_id>{old}</record_id>") == 1


def test_an_empty_search_and_an_invalid_request(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    tools = _tools(memory, thread)
    assert tools["search_memory"].invoke({"query": "anything"}) == "<memories>\n</memories>"
    # A palimpsest validation error comes back to the model as the tool's answer.
    assert "failed" in tools["save_memory"].invoke({"content": "   "})
    with pytest.raises(ConfigurationError):
        make_memory_tools(memory, thread, max_results=0)


def test_thread_owned_memories_go_with_their_thread(memory: AgentMemory) -> None:
    thread = memory.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
    _tools(memory, thread, thread_owned=True)["save_memory"].invoke({"content": "Scratch note."})
    assert [r.thread_id for r in memory.list_memories(user_id="u1")] == ["t1"]
    memory.delete_thread("t1")
    assert memory.list_memories(user_id="u1") == []


def test_an_agent_saves_and_recalls_through_the_tools(memory: AgentMemory) -> None:
    model = scripted(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "id": "s1",
                        "name": "save_memory",
                        "args": {"content": "The user is allergic to peanuts.", "memory_type": "fact"},
                        "type": "tool_call",
                    }
                ],
            ),
            "Noted.",
            AIMessage(
                content="",
                tool_calls=[
                    {"id": "q1", "name": "search_memory", "args": {"query": "allergies"}, "type": "tool_call"}
                ],
            ),
            "You are allergic to peanuts.",
        ]
    )
    agent = create_agent(
        model,
        tools=make_memory_tools(memory, user_id="u1", agent_id="chef"),
        middleware=[
            ShortTermMemoryMiddleware(memory, user_id="u1", agent_id="chef", compaction_message_trigger=30)
        ],
    )
    config = {"configurable": {"thread_id": "kitchen"}}
    agent.invoke({"messages": [HumanMessage(content="Remember: I am allergic to peanuts.")]}, config)
    result = agent.invoke({"messages": [HumanMessage(content="What am I allergic to?")]}, config)
    tool_answer = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    assert "allergic to peanuts" in tool_answer.content and tool_answer.content.startswith("<memories>")
    assert result["messages"][-1].content == "You are allergic to peanuts."
    assert [(r.user_id, r.agent_id) for r in memory.list_memories(user_id="u1")] == [("u1", "chef")]
    assert memory.get_thread("kitchen").user_id == "u1"


def test_the_async_path_and_a_thread_given_by_id(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t9", user_id="u9", agent_id="a9")
    tools = _tools(memory, "t9")

    async def run() -> tuple[str, str]:
        saved = await tools["save_memory"].ainvoke(
            {"content": "The user plays the cello.", "memory_type": "fact"}
        )
        found = await tools["search_memory"].ainvoke({"query": "cello"})
        return saved, found

    saved, found = asyncio.run(run())
    assert "record_id" in saved and "cello" in found
    assert [r.user_id for r in memory.list_memories(user_id="u9")] == ["u9"]


def test_without_a_thread_the_tools_need_a_run(memory: AgentMemory) -> None:
    tools = _tools(memory, None)
    with pytest.raises(ConfigurationError):
        tools["search_memory"].invoke({"query": "x"})


def test_the_middleware_can_bring_the_tools(memory: AgentMemory) -> None:
    model = scripted(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "id": "s1",
                        "name": "save_memory",
                        "args": {"content": "The user likes jazz."},
                        "type": "tool_call",
                    }
                ],
            ),
            "Saved.",
        ]
    )
    middleware = ShortTermMemoryMiddleware(
        memory, user_id="u1", compaction_message_trigger=30, memory_tools=True
    )
    assert {t.name for t in middleware.tools} == {"search_memory", "save_memory"}
    agent = create_agent(model, tools=[], middleware=[middleware])
    agent.invoke(
        {"messages": [HumanMessage(content="I like jazz.")]}, {"configurable": {"thread_id": "music"}}
    )
    assert [r.content for r in memory.list_memories(user_id="u1")] == ["The user likes jazz."]
    with pytest.raises(ConfigurationError):
        ShortTermMemoryMiddleware(
            thread=memory.get_thread("music"), compaction_message_trigger=30, memory_tools=True
        )
