"""Issue 30's whole agent over 50 turns: ``create_agent(..., checkpointer=PalimpsestSaver(memory),
middleware=[..., ShortTermMemoryMiddleware(memory, ...)])`` on one embedded file, through three
restarts (a new client, saver and agent on the same file), a client that re-sends its whole
history (no ids) with every request, the seed's guard removing replies that mention a secret, and
an embedding server that is down for a stretch (503) then back. Every turn the client holds is
stored once, in order; no removed reply is kept (in the thread or in the newest checkpoint); no
turn fails; every compaction leaves a smaller prompt than the one it replaced; and once the server
is back, the turns stored during the outage get their vectors."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'")

import openai
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, after_model
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.runtime import Runtime
from lg_doubles import scripted
from palimpsest.adapters import open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, ShortTermMemoryMiddleware, is_context_card_message
from palimpsest.adapters.openai import OpenAIEmbedder
from palimpsest.adapters.openai.testing import LoopbackExtractionServer
from palimpsest.application import MemoryExtractionConfig

DIMENSION = 32
TURNS = 50
RESTARTS = (0, 12, 25, 38)  # each segment is a new process's client, saver and agent
DOWN = range(18, 31)  # the embedding server answers 503 for these turns (across a restart)
TRIGGER = 500


@after_model
def validate_response(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """The seed's guard: drop a reply that mentions a secret."""
    last = state["messages"][-1]
    if "secret" in str(last.content):
        return {"messages": [RemoveMessage(id=last.id or "")]}
    return None


class _Measure(AgentMiddleware[AgentState[Any], Any, Any]):
    """Listed first: the tokens and first message of the state each model call starts from."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[int] = []
        self.first: list[Any] = []

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.tokens.append(count_tokens_approximately(state["messages"]))
        self.first.append(state["messages"][0].content if state["messages"] else None)
        return None


def _compactions(measure: _Measure, prompts: list[list[BaseMessage]]) -> list[tuple[int, int]]:
    return [
        (before, count_tokens_approximately(prompt))
        for before, first, prompt in zip(measure.tokens, measure.first, prompts)
        if prompt and is_context_card_message(prompt[0]) and prompt[0].content != first
    ]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    import palimpsest.adapters.openai as adapters

    monkeypatch.setattr(adapters, "ALLOW_MODEL_REQUESTS", True)
    with LoopbackExtractionServer(dimension=DIMENSION) as loopback:
        yield loopback


def test_fifty_turns_through_restarts_resends_removals_and_an_embedder_outage(
    tmp_path: Path, server: LoopbackExtractionServer
) -> None:
    path = tmp_path / "agent.db"
    replies = [
        f"The secret for leg {i} is 1234." if i % 9 == 4 else f"Booked leg {i}: a window seat and a vegetarian meal."
        for i in range(TURNS)
    ]
    history: list[dict[str, str]] = []  # the client's own copy, re-sent whole (no ids) every request
    removed: list[str] = []
    pairs: list[tuple[int, int]] = []
    config = {"configurable": {"thread_id": "trip", "user_id": "maya", "agent_id": "planner"}}
    bounds = [*RESTARTS, TURNS]
    for first, last in itertools.pairwise(bounds):
        sdk = openai.OpenAI(base_url=server.base_url, api_key="test-key")
        embedder = OpenAIEmbedder(sdk, "loopback", dimension=DIMENSION, max_retries=0, timeout=5.0, sleep=lambda _s: None)
        memory = open_memory(
            path, embedder=embedder, memory_extraction_config=MemoryExtractionConfig(extract_memories=False)
        )
        try:
            measure = _Measure()
            model = scripted(replies[first:last])
            agent = create_agent(
                model=model,
                tools=[],
                checkpointer=PalimpsestSaver(memory),
                middleware=[
                    measure,
                    validate_response,
                    ShortTermMemoryMiddleware(memory, compaction_token_trigger=TRIGGER, except_last_messages=2),
                ],
            )
            for i in range(first, last):
                server.embedding_status = 503 if i in DOWN else 200
                history.append({"role": "user", "content": f"Please book leg {i} of the trip."})
                final = agent.invoke({"messages": list(history)}, config)["messages"][-1]  # never raises
                if isinstance(final, AIMessage):
                    history.append({"role": "assistant", "content": str(final.content)})
                else:
                    removed.append(replies[i])
            pairs.extend(_compactions(measure, model.prompts))
            stored = [(m.role, m.content) for m in memory.get_thread("trip").get_messages(start=0, end=None)]
            assert stored == [(m["role"], m["content"]) for m in history]  # each turn once, in order
            newest = PalimpsestSaver(memory).get_tuple(config)
            assert newest is not None
            kept = [str(m.content) for m in newest.checkpoint["channel_values"]["messages"]]
            assert not any("secret" in text for text in kept)
            assert len(kept) == len(set(kept)), "the checkpointed state holds a turn twice"
            if last == TURNS:
                server.embedding_status = 200
                memory.embed_waiting()
                assert memory.admin.waiting_vectors().total == 0
                hits = memory.search("book leg 20", user_id="maya", search_strategy="vector", max_results=50)
                assert any(h.content == "Please book leg 20 of the trip." for h in hits)
        finally:
            memory.close()
    assert len(removed) == len([r for r in replies if "secret" in r]) >= 5
    assert len(pairs) >= 5, pairs
    for before, after in pairs:
        assert after < before, pairs
