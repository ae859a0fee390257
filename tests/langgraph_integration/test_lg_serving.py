"""``ShortTermMemoryMiddleware`` under real serving: stateless re-sends, compactions that shrink the
prompt, removals and edits made by other middleware, whatever the middleware order.

* A stateless server (OpenAI-style: each request carries the whole history, no LangChain ids, no
  checkpointer) stores every turn once; a turn genuinely said twice is stored twice.
* The card counts toward the token trigger, and every compaction leaves a smaller prompt than the
  one it replaced.
* A message another middleware removes (``RemoveMessage`` by id, or ``REMOVE_ALL_MESSAGES`` and
  re-adding a few) is not kept by palimpsest; an edit (same id, new content) reaches the stored
  turn; the order of the middleware list does not change what is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, after_agent, after_model, before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from lg_doubles import scripted
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import ShortTermMemoryMiddleware, is_context_card_message
from palimpsest.application import AgentMemory, MemoryExtractionConfig


def _middleware(memory: AgentMemory, **options: Any) -> ShortTermMemoryMiddleware:
    defaults: dict[str, Any] = {"thread_id": "t1", "user_id": "u1", "agent_id": "a1"}
    return ShortTermMemoryMiddleware(memory, **{**defaults, **options})


def _stored(memory: AgentMemory, thread_id: str = "t1") -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in memory.get_thread(thread_id).get_messages(start=0, end=None)]


def _stateless_turns(agent: Any, texts: list[str], history: list[dict[str, str]] | None = None) -> list[dict[str, str]]:
    """An OpenAI-style client: it keeps its own history as plain dicts (no ids) and sends all of it
    with every request; the server keeps nothing between requests (no checkpointer)."""
    history = list(history or [])
    for text in texts:
        history.append({"role": "user", "content": text})
        reply = agent.invoke({"messages": list(history)})["messages"][-1]
        history.append({"role": "assistant", "content": str(reply.content)})
    return history


# -- item 1: stateless re-sends -------------------------------------------------------------


def test_a_stateless_server_stores_each_turn_once(memory: AgentMemory) -> None:
    texts = [f"question {i}" for i in range(6)]
    agent = create_agent(
        model=scripted([f"answer {i}" for i in range(6)]),
        tools=[],
        middleware=[_middleware(memory, compaction_message_trigger=1000)],
    )
    _stateless_turns(agent, texts)
    assert _stored(memory) == [
        pair for i in range(6) for pair in (("user", f"question {i}"), ("assistant", f"answer {i}"))
    ]


def test_a_turn_said_twice_is_stored_twice_by_a_stateless_server(memory: AgentMemory) -> None:
    agent = create_agent(
        model=scripted(["Shall I book it?", "Booked.", "Anything else?", "Bye."]),
        tools=[],
        middleware=[_middleware(memory, compaction_message_trigger=1000)],
    )
    _stateless_turns(agent, ["Find me a table for two.", "ok", "ok", "ok"])
    assert _stored(memory) == [
        ("user", "Find me a table for two."),
        ("assistant", "Shall I book it?"),
        ("user", "ok"),
        ("assistant", "Booked."),
        ("user", "ok"),
        ("assistant", "Anything else?"),
        ("user", "ok"),
        ("assistant", "Bye."),
    ]


def test_a_retried_request_is_not_stored_twice(memory: AgentMemory) -> None:
    """The client sends the same history again (its first request timed out): the turn the
    thread already ends with is recognised; the model's new reply is stored."""
    agent = create_agent(
        model=scripted(["first try", "second try"]),
        tools=[],
        middleware=[_middleware(memory, compaction_message_trigger=1000)],
    )
    request = [{"role": "user", "content": "hello"}]
    agent.invoke({"messages": list(request)})
    agent.invoke({"messages": [*list(request), {"role": "assistant", "content": "first try"}]})
    assert _stored(memory) == [("user", "hello"), ("assistant", "first try"), ("assistant", "second try")]


def test_a_client_sending_a_window_of_its_history_stores_each_turn_once(memory: AgentMemory) -> None:
    """The client sends only its last four messages plus the new one; repeated words included."""
    agent = create_agent(
        model=scripted(["fine"] * 8),
        tools=[],
        middleware=[_middleware(memory, compaction_message_trigger=1000)],
    )
    history: list[dict[str, str]] = []
    for text in ["ok", "ok", "hi", "ok", "ok", "bye", "ok", "ok"]:
        history.append({"role": "user", "content": text})
        reply = agent.invoke({"messages": history[-5:]})["messages"][-1]
        history.append({"role": "assistant", "content": str(reply.content)})
    assert _stored(memory) == [(m["role"], m["content"]) for m in history]


@pytest.mark.parametrize("trim_first", [True, False])
def test_a_stateless_server_that_trims_its_prompt_stores_each_turn_once(memory: AgentMemory, trim_first: bool) -> None:
    """Trimming a stateless request's prompt is not deleting: the client re-sends what was trimmed,
    and it stays stored once; with the trim first, the memory middleware sees a history with gaps."""

    @before_model
    def keep_first_and_last_three(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        messages = state["messages"]
        if len(messages) <= 4:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), messages[0], *messages[-3:]]}

    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted([f"answer {i}" for i in range(6)]),
        tools=[],
        middleware=[keep_first_and_last_three, ours] if trim_first else [ours, keep_first_and_last_three],
    )
    history = _stateless_turns(agent, [f"question {i}" for i in range(6)])
    assert _stored(memory) == [(m["role"], m["content"]) for m in history]


def test_re_sent_turns_before_a_known_one_are_matched_where_they_end(memory: AgentMemory) -> None:
    """Turns without a known id that precede a known turn re-send the stored turns just before
    it when their roles and texts match; otherwise they are new."""
    middleware = _middleware(memory, compaction_message_trigger=1000)
    middleware.before_model(
        {"messages": [HumanMessage(content="q1", id="h1"), AIMessage(content="a1", id="x1"), HumanMessage(content="q2", id="h2")]},
        None,  # type: ignore[arg-type]
    )
    resent = [HumanMessage(content="q1"), AIMessage(content="a1"), HumanMessage(content="q2", id="h2")]
    middleware.before_model({"messages": resent}, None)  # type: ignore[arg-type]
    assert _stored(memory) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
    other = [HumanMessage(content="something else"), HumanMessage(content="q2", id="h2")]
    middleware.before_model({"messages": other}, None)  # type: ignore[arg-type]
    assert _stored(memory) == [("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("user", "something else")]


# -- item 2: compaction shrinks the prompt --------------------------------------------------


class _MeasureState(AgentMiddleware[AgentState[Any], Any, Any]):
    """Listed before the memory middleware: records the tokens of the state each model call starts from."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[int] = []
        self.first_contents: list[Any] = []

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.tokens.append(count_tokens_approximately(state["messages"]))
        self.first_contents.append(state["messages"][0].content if state["messages"] else None)
        return None


def _compactions(measure: _MeasureState, prompts: list[list[BaseMessage]]) -> list[tuple[int, int]]:
    """(tokens before, tokens after) of every model call at which a new card was built."""
    pairs: list[tuple[int, int]] = []
    for before, first_content, prompt in zip(measure.tokens, measure.first_contents, prompts):
        if prompt and is_context_card_message(prompt[0]) and prompt[0].content != first_content:
            pairs.append((before, count_tokens_approximately(prompt)))
    return pairs


def test_every_compaction_leaves_a_smaller_prompt_and_the_card_counts(memory: AgentMemory) -> None:
    for i in range(12):
        memory.add_memory(
            f"Maya's trip note {i}: she wants a window seat, vegetarian meals and a quiet hotel near the station.",
            user_id="u1",
            agent_id="a1",
        )
    measure = _MeasureState()
    model = scripted([f"Noted, Maya: a window seat and vegetarian meals for leg {i}." for i in range(10)])
    agent = create_agent(
        model=model,
        tools=[],
        middleware=[measure, _middleware(memory, compaction_token_trigger=300, except_last_messages=2)],
    )
    messages: list[BaseMessage] = []
    for i in range(10):
        messages.append(HumanMessage(content=f"Plan leg {i} of my trip: a window seat, vegetarian meals please."))
        messages = list(agent.invoke({"messages": messages})["messages"])
    pairs = _compactions(measure, model.prompts)
    assert pairs, "the trigger never fired"
    for before, after in pairs:
        assert after < before, pairs
    # The card counts toward the trigger: no prompt the model saw reached it without a compaction.
    compacted_at = {i for i, (p, f) in enumerate(zip(model.prompts, measure.first_contents)) if p[0].content != f}
    for index, prompt in enumerate(model.prompts):
        if index not in compacted_at:
            assert count_tokens_approximately(prompt) < 300


# -- item 3: removals, edits, order ---------------------------------------------------------


@after_model
def validate_response(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """The seed's guard: drop a reply that mentions a password or a secret."""
    last = state["messages"][-1]
    if any(word in str(last.content) for word in ("password", "secret")):
        return {"messages": [RemoveMessage(id=last.id or "")]}
    return None


@pytest.mark.parametrize("guard_first", [True, False])
def test_a_reply_another_middleware_removes_is_never_stored(memory: AgentMemory, guard_first: bool) -> None:
    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted(["Your password is hunter2.", "I cannot share that."]),
        tools=[],
        middleware=[validate_response, ours] if guard_first else [ours, validate_response],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="What is my password?")]}, config)
    agent.invoke({"messages": [HumanMessage(content="Please?")]}, config)
    assert _stored(memory) == [
        ("user", "What is my password?"),
        ("user", "Please?"),
        ("assistant", "I cannot share that."),
    ]


@pytest.mark.parametrize("guard_first", [True, False])
def test_an_after_agent_removal_reaches_the_thread_at_once_or_at_the_next_turn(
    memory: AgentMemory, guard_first: bool
) -> None:
    """``after_agent`` hooks run last to first: listed after ours, a guard's removal is seen at
    once; listed before, ours has stored the reply already, and the checkpointed state tells the
    next turn to delete it."""

    @after_agent
    def drop_secrets(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        last = state["messages"][-1]
        return {"messages": [RemoveMessage(id=last.id or "")]} if "secret" in str(last.content) else None

    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted(["The secret is 42.", "Fine."]),
        tools=[],
        middleware=[drop_secrets, ours] if guard_first else [ours, drop_secrets],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="Tell me the secret.")]}, config)
    at_once = _stored(memory)
    agent.invoke({"messages": [HumanMessage(content="ok")]}, config)
    assert _stored(memory) == [("user", "Tell me the secret."), ("user", "ok"), ("assistant", "Fine.")]
    if guard_first:
        assert at_once == [("user", "Tell me the secret."), ("assistant", "The secret is 42.")]
    else:
        assert at_once == [("user", "Tell me the secret.")]


@before_model
def delete_oldest_pair(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """The seed's "delete messages" pattern: past four messages, drop the oldest two."""
    messages = state["messages"]
    if len(messages) > 4:
        return {"messages": [RemoveMessage(id=m.id or "") for m in messages[:2]]}
    return None


@pytest.mark.parametrize("remover_first", [True, False])
def test_removed_messages_are_deleted_from_the_thread(memory: AgentMemory, remover_first: bool) -> None:
    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted(["a1", "a2", "a3"]),
        tools=[],
        middleware=[delete_oldest_pair, ours] if remover_first else [ours, delete_oldest_pair],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    for text in ["q1", "q2", "q3"]:
        state = agent.invoke({"messages": [HumanMessage(content=text)]}, config)
    held = [(m.type, m.content) for m in state["messages"]]
    assert held == [("human", "q2"), ("ai", "a2"), ("human", "q3"), ("ai", "a3")]
    assert _stored(memory) == [("user", "q2"), ("assistant", "a2"), ("user", "q3"), ("assistant", "a3")]


@before_model
def trim_to_last_two(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """The seed's trim pattern: everything removed, the newest two put back."""
    messages = state["messages"]
    if len(messages) <= 3:
        return None
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[-2:]]}


@pytest.mark.parametrize("trim_first", [True, False])
def test_remove_all_messages_keeps_only_what_is_put_back(memory: AgentMemory, trim_first: bool) -> None:
    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted(["a1", "a2", "a3"]),
        tools=[],
        middleware=[trim_to_last_two, ours] if trim_first else [ours, trim_to_last_two],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    for text in ["q1", "q2", "q3"]:
        agent.invoke({"messages": [HumanMessage(content=text)]}, config)
    assert _stored(memory) == [("assistant", "a2"), ("user", "q3"), ("assistant", "a3")]


@before_model
def redact_digits(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
    """Edits the newest user message in place (same id, new content)."""
    last = state["messages"][-1]
    if isinstance(last, HumanMessage) and any(ch.isdigit() for ch in str(last.content)):
        redacted = "".join("#" if ch.isdigit() else ch for ch in str(last.content))
        return {"messages": [HumanMessage(content=redacted, id=last.id)]}
    return None


@pytest.mark.parametrize("redactor_first", [True, False])
def test_an_edit_by_another_middleware_reaches_the_stored_turn(memory: AgentMemory, redactor_first: bool) -> None:
    ours = _middleware(memory, compaction_message_trigger=1000)
    agent = create_agent(
        model=scripted(["Noted."]),
        tools=[],
        middleware=[redact_digits, ours] if redactor_first else [ours, redact_digits],
    )
    agent.invoke({"messages": [HumanMessage(content="My card is 4111 1111.")]}, {})
    assert _stored(memory) == [("user", "My card is #### ####."), ("assistant", "Noted.")]


def test_an_edited_reply_reaches_the_stored_turn(memory: AgentMemory) -> None:
    @after_model
    def sign(state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and not str(last.content).endswith("-- bot"):
            return {"messages": [AIMessage(content=f"{last.content} -- bot", id=last.id)]}
        return None

    agent = create_agent(
        model=scripted(["Hello."]), tools=[], middleware=[sign, _middleware(memory, compaction_message_trigger=1000)]
    )
    agent.invoke({"messages": [HumanMessage(content="hi")]})
    assert _stored(memory) == [("user", "hi"), ("assistant", "Hello. -- bot")]


# -- all together ---------------------------------------------------------------------------


def test_fifty_stateless_turns_with_removals_compactions_and_a_restart(tmp_path: Path) -> None:
    """A stateless server (whole history each request, no ids, no checkpointer), the seed's
    guard before the memory middleware, a 400-token trigger and a restart half way: every
    turn the client holds is stored once and in order, no removed reply is kept, and every
    compaction leaves a smaller prompt than the one it replaced."""
    path = tmp_path / "memory.db"
    replies = [
        f"The secret code for leg {i} is 1234." if i % 7 == 3 else f"Booked leg {i}: window seat, vegetarian meal."
        for i in range(50)
    ]
    history: list[dict[str, str]] = []
    removed: list[str] = []
    pairs: list[tuple[int, int]] = []
    for first, last in ((0, 25), (25, 50)):  # two processes: the second starts from the file
        memory = open_memory(
            path,
            embedder=HashingEmbedder(),
            memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        )
        try:
            if first == 0:
                for i in range(8):
                    memory.add_memory(
                        f"Maya's travel note {i}: window seats, vegetarian meals, quiet hotels near stations.",
                        user_id="u1",
                        agent_id="a1",
                    )
            measure = _MeasureState()
            model = scripted(replies[first:last])
            agent = create_agent(
                model=model,
                tools=[],
                middleware=[
                    measure,
                    validate_response,
                    _middleware(memory, compaction_token_trigger=400, except_last_messages=2),
                ],
            )
            for i in range(first, last):
                history.append({"role": "user", "content": f"Please book leg {i} of the trip for me."})
                final = agent.invoke({"messages": list(history)})["messages"][-1]
                if isinstance(final, AIMessage):
                    history.append({"role": "assistant", "content": str(final.content)})
                else:
                    removed.append(replies[i])
            pairs.extend(_compactions(measure, model.prompts))
            assert _stored(memory) == [(m["role"], m["content"]) for m in history]
        finally:
            memory.close()
    assert len(removed) == 7 and all("secret" in r for r in removed)
    assert len(pairs) >= 10, pairs
    for before, after in pairs:
        assert after < before, pairs


# -- re-sends to an agent with a checkpointer ----------------------------------------------


def test_whole_history_re_sent_to_a_checkpointed_agent_is_stored_and_held_once(memory: AgentMemory) -> None:
    """A client that keeps its own history and sends all of it (no ids) to an agent with a
    checkpointer: the copies are neither stored again nor kept in the state; a repeated "ok"
    is a new turn."""
    agent = create_agent(
        model=scripted(["one", "two", "three", "four"]),
        tools=[],
        checkpointer=InMemorySaver(),
        middleware=[_middleware(memory, compaction_message_trigger=1000)],
    )
    config = {"configurable": {"thread_id": "t1"}}
    history: list[dict[str, str]] = []
    for text in ("hi", "ok", "ok", "bye"):
        history.append({"role": "user", "content": text})
        state = agent.invoke({"messages": list(history)}, config)
        history.append({"role": "assistant", "content": str(state["messages"][-1].content)})
    expected = [(m["role"], m["content"]) for m in history]
    assert _stored(memory) == expected
    held = [("user" if m.type == "human" else "assistant", str(m.content)) for m in state["messages"]]
    assert held == expected
