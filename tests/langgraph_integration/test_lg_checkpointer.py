"""The LangGraph short-term memory patterns of the seeds (a checkpointer, one ``thread_id``, several invocations) with palimpsest.

The seed's patterns: ``create_agent(..., checkpointer=InMemorySaver())`` invoked turn after turn
on ``{"configurable": {"thread_id": "1"}}`` with only the new user message, a ``before_model``
hook that replaces the history with ``RemoveMessage(REMOVE_ALL_MESSAGES)`` plus what to keep, an
``after_model`` hook, ``stream(stream_mode="values")`` and a custom state schema. Here the hook is
``ShortTermMemoryMiddleware``: the checkpointed state stays compact (card + tail) while palimpsest
keeps every turn once, per LangGraph thread, and the later answer is built from the card.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "langgraph.checkpoint.memory", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain.agents import AgentState, create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from lg_doubles import scripted
from palimpsest.adapters.langgraph import PalimpsestStore, ShortTermMemoryMiddleware, is_context_card_message
from palimpsest.application import AgentMemory

BOB_TURNS = [
    "hi, my name is bob",
    "write a short poem about cats",
    "now do the same but for dogs",
    "what's my name?",
]
BOB_REPLIES = [
    "Hi Bob! Nice to meet you.",
    "Cats curl in sunlit naps,\nsoft paws on warm laps.",
    "Dogs run to greet the day,\ntails that wag the clouds away.",
    "Your name is Bob. You told me that earlier.",
]


def _stored(memory: AgentMemory, thread_id: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in memory.get_thread(thread_id).get_messages(start=0, end=None)]


def test_a_checkpointed_thread_stays_compact_and_palimpsest_keeps_every_turn(memory: AgentMemory) -> None:
    model = scripted(BOB_REPLIES)
    agent = create_agent(
        model,
        tools=[],
        middleware=[
            ShortTermMemoryMiddleware(
                memory, user_id="bob", compaction_message_trigger=5, except_last_messages=2
            )
        ],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "1"}}
    for text in BOB_TURNS:
        final = agent.invoke({"messages": text}, config)

    final["messages"][-1].pretty_print()
    assert final["messages"][-1].content == "Your name is Bob. You told me that earlier."
    # The checkpointed state is the card plus the raw tail, not the whole history: compacted at
    # the third turn (five organic messages) to the last two, then the fourth turn appended.
    state = agent.get_state(config).values["messages"]
    assert is_context_card_message(state[0])
    assert [m.content for m in state[1:]] == [
        BOB_REPLIES[1],
        BOB_TURNS[2],
        BOB_REPLIES[2],
        BOB_TURNS[3],
        BOB_REPLIES[3],
    ]
    # The last answer was produced from a prompt whose card remembers the name.
    last_prompt = model.prompts[-1]
    assert is_context_card_message(last_prompt[0]) and "bob" in last_prompt[0].content.lower()
    # Palimpsest has all eight turns, once each, in the LangGraph thread's palimpsest thread.
    assert _stored(memory, "1") == [
        (role, text)
        for pair in zip(BOB_TURNS, BOB_REPLIES)
        for role, text in zip(("user", "assistant"), pair)
    ]
    assert memory.get_thread("1").user_id == "bob"


def test_streaming_values_with_a_checkpointer(memory: AgentMemory) -> None:
    agent = create_agent(
        model=scripted(["Hi Bob! How can I help?", "Your name is Bob."]),
        tools=[],
        system_prompt="Please be concise and to the point.",
        middleware=[ShortTermMemoryMiddleware(memory, compaction_message_trigger=3, except_last_messages=1)],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "s1", "user_id": "bob"}}
    snapshots: list[list[tuple[str, Any]]] = []
    for text in ["hi! I'm bob", "what's my name?"]:
        for event in agent.stream(
            {"messages": [{"role": "user", "content": text}]}, config, stream_mode="values"
        ):
            snapshots.append([(m.type, m.content) for m in event["messages"]])
    # The second turn's first model call saw three organic messages: it compacted to card + tail.
    assert any(len(s) == 2 and s[0][1].startswith("<context_card>") for s in snapshots)
    assert snapshots[-1][-1] == ("ai", "Your name is Bob.")
    assert _stored(memory, "s1") == [
        ("user", "hi! I'm bob"),
        ("assistant", "Hi Bob! How can I help?"),
        ("user", "what's my name?"),
        ("assistant", "Your name is Bob."),
    ]


def test_langgraph_threads_are_separate_palimpsest_threads(memory: AgentMemory) -> None:
    agent = create_agent(
        model=scripted(["hello Ann", "hello Ben", "you are Ann"]),
        tools=[],
        middleware=[ShortTermMemoryMiddleware(memory, agent_id="helper", compaction_message_trigger=20)],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": "I am Ann"}, {"configurable": {"thread_id": "ann", "user_id": "ann"}})
    agent.invoke({"messages": "I am Ben"}, {"configurable": {"thread_id": "ben", "user_id": "ben"}})
    agent.invoke({"messages": "who am I?"}, {"configurable": {"thread_id": "ann", "user_id": "ann"}})
    assert _stored(memory, "ann") == [
        ("user", "I am Ann"),
        ("assistant", "hello Ann"),
        ("user", "who am I?"),
        ("assistant", "you are Ann"),
    ]
    assert _stored(memory, "ben") == [("user", "I am Ben"), ("assistant", "hello Ben")]
    assert {
        (t.id, t.user_id, t.agent_id) for t in memory.list_threads("ann") + memory.list_threads("ben")
    } == {
        ("ann", "ann", "helper"),
        ("ben", "ben", "helper"),
    }


class CustomAgentState(AgentState):
    user_id: str
    preferences: dict[str, Any]


def test_custom_state_schema_and_a_tool_reading_the_palimpsest_store(memory: AgentMemory) -> None:
    """Short-term memory (checkpointer + middleware) next to long-term memory (``store=``)."""
    store = PalimpsestStore(memory)
    store.put(("user_123", "assistant"), "theme", {"text": "The user prefers the dark theme."})

    @tool
    def recall(topic: str) -> str:
        """Recall what is known about a topic."""
        from langgraph.config import get_store

        hits = get_store().search(("user_123",), query=topic, limit=1)
        return hits[0].value["text"] if hits else "nothing"

    model = scripted(
        [
            AIMessage(
                content="",
                tool_calls=[{"id": "r1", "name": "recall", "args": {"topic": "theme"}, "type": "tool_call"}],
            ),
            "You prefer the dark theme.",
        ]
    )
    agent = create_agent(
        model,
        tools=[recall],
        state_schema=CustomAgentState,
        middleware=[ShortTermMemoryMiddleware(memory, compaction_message_trigger=20)],
        checkpointer=InMemorySaver(),
        store=store,
    )
    result = agent.invoke(
        {
            "messages": [{"role": "user", "content": "Which theme do I like?"}],
            "user_id": "user_123",
            "preferences": {},
        },
        {"configurable": {"thread_id": "1", "user_id": "user_123"}},
    )
    assert result["user_id"] == "user_123"
    assert [m.content for m in result["messages"] if m.type == "tool"] == ["The user prefers the dark theme."]
    assert result["messages"][-1].content == "You prefer the dark theme."
    assert _stored(memory, "1") == [
        ("user", "Which theme do I like?"),
        ("assistant", "You prefer the dark theme."),
    ]
    assert isinstance(result["messages"][0], HumanMessage)
