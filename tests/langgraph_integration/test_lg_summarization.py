"""LangChain's ``SummarizationMiddleware`` beside ``ShortTermMemoryMiddleware`` (seed 003's summarise
pattern with palimpsest holding the durable side): the turns it summarises stay stored, its summary is
not stored as a user turn, and a real removal afterwards still deletes (ARCHITECTURE.md D42)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime
from lg_doubles import scripted
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware

TURNS = ["hi, my name is bob", "I live in Lisbon", "I work on ledgers", "what's my name?", "and my city?"]


class _ForgetLastReplyOnRequest(AgentMiddleware):
    """After the model: removes the reply when the user asked to forget it (a real removal)."""

    def after_model(self, state, runtime: Runtime):  # type: ignore[no-untyped-def,override]
        messages = state["messages"]
        if messages and isinstance(messages[-1], AIMessage) and "SECRET" in str(messages[-1].content):
            return {"messages": [RemoveMessage(id=messages[-1].id)]}
        return None


def test_summarised_turns_stay_stored_and_the_summary_is_not_a_turn(tmp_path: Path) -> None:
    replies = [f"reply {i}: " + "words " * 30 for i in range(len(TURNS))] + ["the SECRET is 42"]
    with open_memory(tmp_path / "m.db", embedder=HashingEmbedder()) as memory:
        agent = create_agent(
            model=scripted(replies),
            tools=[],
            checkpointer=PalimpsestSaver(memory),
            middleware=[
                SummarizationMiddleware(
                    model=scripted(["Bob lives in Lisbon and works on ledgers."] * 10),
                    trigger=("messages", 6),
                    keep=("messages", 2),
                ),
                ShortTermMemoryMiddleware(memory, user_id="bob", agent_id="assistant", compaction_token_trigger=100_000),
                _ForgetLastReplyOnRequest(),
            ],
        )
        config = {"configurable": {"thread_id": "t1"}}
        for turn in TURNS:
            agent.invoke({"messages": [HumanMessage(turn)]}, config)
        state = agent.get_state(config).values
        assert any(
            (m.additional_kwargs or {}).get("lc_source") == "summarization" for m in state["messages"]
        ), "the summarisation middleware never ran: the test would prove nothing"

        stored = [(m.role, m.content) for m in memory.get_thread("t1").get_messages()]
        assert [c for r, c in stored if r == "user"] == TURNS  # every turn once, none deleted
        assert len([c for r, c in stored if r == "assistant"]) == len(TURNS)
        assert not any("summary of the conversation" in c for _, c in stored)

        agent.invoke({"messages": [HumanMessage("tell me the secret")]}, config)
        stored_after = [m.content for m in memory.get_thread("t1").get_messages()]
        assert "tell me the secret" in stored_after
        assert not any("SECRET" in c for c in stored_after)  # a real removal still deletes
        assert all(t in stored_after for t in TURNS)
