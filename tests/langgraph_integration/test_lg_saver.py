"""``PalimpsestSaver``: LangGraph checkpoints in the client's store (ARCHITECTURE.md D41).

An agent (``create_agent`` with a fake chat model and a tool) keeps its conversation through the
saver, sync and async; a graph with a ``DeltaChannel`` keeps its value through pruning and
retention; the serializer reads only what it writes (a pickle-tagged, a ``json``-tagged or a
tampered msgpack row is refused without building anything, where LangGraph's default
serializer would call what the row names); with ``key=`` a row altered or moved is refused; an
agent survives a restart on the embedded store (skipped while that store lacks the capability).
"""

from __future__ import annotations

import asyncio
import operator
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph.channels.delta", reason="the LangGraph integration needs the optional extra 'langgraph'")

import ormsgpack
from clients import build_client
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from lg_doubles import scripted
from palimpsest.adapters.langgraph import (
    CheckpointRetention,
    CheckpointSerializer,
    PalimpsestSaver,
    ShortTermMemoryMiddleware,
)
from palimpsest.application import AgentMemory
from palimpsest.domain import CheckpointIntegrityError, ValidationError
from palimpsest.domain.checkpoints import ChannelBlob, TypedBytes
from palimpsest.domain.ports import CheckpointStorage
from typing_extensions import TypedDict

CALLS: list[Any] = []


def record_call(argument: Any) -> str:
    """What a tampered row names: a call here would be code run by reading a row."""
    CALLS.append(argument)
    return "called"


@pytest.fixture(autouse=True)
def _no_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"It is sunny in {city}."


def _agent(memory: AgentMemory, replies: list[Any], **saver_options: Any) -> Any:
    return create_agent(scripted(replies), tools=[weather], checkpointer=PalimpsestSaver(memory, **saver_options))


TOOL_TURN = [
    AIMessage(content="", tool_calls=[{"name": "weather", "args": {"city": "Lisbon"}, "id": "call-1"}]),
    "Sunny in Lisbon.",
]


def _thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def test_an_agent_keeps_its_conversation_through_the_saver(memory: AgentMemory) -> None:
    agent = _agent(memory, [*TOOL_TURN, "You asked about Lisbon."])
    agent.invoke({"messages": [HumanMessage("weather in Lisbon?")]}, _thread("t1"))
    result = agent.invoke({"messages": [HumanMessage("what did I ask?")]}, _thread("t1"))

    messages = result["messages"]
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "HumanMessage", "AIMessage"
    ]
    assert isinstance(messages[2], ToolMessage) and messages[2].content == "It is sunny in Lisbon."
    assert messages[1].tool_calls[0]["args"] == {"city": "Lisbon"}
    state = agent.get_state(_thread("t1"))
    assert [m.content for m in state.values["messages"]] == [m.content for m in messages]
    assert len(list(PalimpsestSaver(memory).list(_thread("t1")))) > 2
    assert agent.get_state(_thread("other")).values == {}


def test_a_new_agent_and_saver_on_the_same_client_continue_the_thread(memory: AgentMemory) -> None:
    _agent(memory, [*TOOL_TURN]).invoke({"messages": [HumanMessage("weather in Lisbon?")]}, _thread("t2"))
    again = _agent(memory, ["You asked about Lisbon."])  # a restarted graph: new model, saver and agent
    result = again.invoke({"messages": [HumanMessage("what did I ask?")]}, _thread("t2"))
    assert [m.content for m in result["messages"]] == [
        "weather in Lisbon?", "", "It is sunny in Lisbon.", "Sunny in Lisbon.", "what did I ask?", "You asked about Lisbon."
    ]


def test_with_the_middleware_one_delete_thread_removes_the_turns_and_the_checkpoints(memory: AgentMemory) -> None:
    agent = create_agent(
        scripted(["Hello Maya."]),
        tools=[],
        middleware=[ShortTermMemoryMiddleware(memory, user_id="maya", compaction_message_trigger=20)],
        checkpointer=PalimpsestSaver(memory),
    )
    agent.invoke({"messages": [HumanMessage("Hi, I'm Maya.")]}, _thread("m1"))
    assert [m.content for m in memory.get_thread("m1").get_messages(start=0, end=None)] == ["Hi, I'm Maya.", "Hello Maya."]
    assert agent.get_state(_thread("m1")).values["messages"]

    assert memory.delete_thread("m1") == 1

    assert memory.list_threads(user_id="maya") == []
    assert agent.get_state(_thread("m1")).values == {}
    assert memory.checkpoints.list(thread_id="m1") == []


def test_the_async_methods_carry_an_agent_too(memory: AgentMemory) -> None:
    agent = _agent(memory, [*TOOL_TURN])

    async def run() -> Any:
        await agent.ainvoke({"messages": [HumanMessage("weather in Lisbon?")]}, _thread("a1"))
        return await agent.aget_state(_thread("a1"))

    state = asyncio.run(run())
    assert state.values["messages"][-1].content == "Sunny in Lisbon."


def test_retention_keeps_a_conversation_whole(memory: AgentMemory) -> None:
    agent = _agent(memory, [*TOOL_TURN, "Again sunny."], retention=CheckpointRetention(keep_latest=1))
    agent.invoke({"messages": [HumanMessage("weather in Lisbon?")]}, _thread("r1"))
    agent.invoke({"messages": [HumanMessage("and now?")]}, _thread("r1"))
    assert len(list(PalimpsestSaver(memory).list(_thread("r1")))) == 1
    assert [m.content for m in agent.get_state(_thread("r1")).values["messages"]][-2:] == ["and now?", "Again sunny."]


def test_a_runs_config_sets_the_retention_of_its_thread(memory: AgentMemory) -> None:
    agent = _agent(memory, ["One.", "Two.", "Three."])
    trimmed: RunnableConfig = {"configurable": {"thread_id": "c1", "checkpoint_retention": CheckpointRetention(keep_latest=2)}}
    agent.invoke({"messages": [HumanMessage("first")]}, trimmed)
    agent.invoke({"messages": [HumanMessage("second")]}, trimmed)
    agent.invoke({"messages": [HumanMessage("third")]}, _thread("c2"))
    saver = PalimpsestSaver(memory)
    assert len(list(saver.list(_thread("c1")))) == 2
    assert len(list(saver.list(_thread("c2")))) == 3
    assert [m.content for m in agent.get_state(_thread("c1")).values["messages"]] == ["first", "One.", "second", "Two."]
    assert all("checkpoint_retention" not in t.metadata for t in saver.list(_thread("c1")))


# -- a delta channel keeps its ancestors ----------------------------------------------------------


def _extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class Log(TypedDict):
    items: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=4)]
    turns: Annotated[int, operator.add]


def _delta_graph(saver: PalimpsestSaver) -> Any:
    graph = StateGraph(Log)
    graph.add_node("step", lambda state: {"items": [f"item {state['turns']}"], "turns": 1})
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    return graph.compile(checkpointer=saver)


def test_pruning_keeps_a_delta_channels_ancestor_chain(memory: AgentMemory) -> None:
    saver = PalimpsestSaver(memory)
    graph = _delta_graph(saver)
    for n in range(9):  # the newest checkpoint is not a snapshot: it needs its ancestors
        graph.invoke({"items": [f"input {n}"], "turns": 0}, _thread("d1"))
    before = graph.get_state(_thread("d1")).values["items"]
    assert before == [x for n in range(9) for x in (f"input {n}", f"item {n}")]

    saver.prune(["d1"], strategy="keep_latest")

    kept = list(saver.list(_thread("d1")))
    assert 1 < len(kept) < 27  # back to the last snapshot, not the whole history
    assert graph.get_state(_thread("d1")).values["items"] == before
    graph.invoke({"items": ["after"], "turns": 0}, _thread("d1"))
    assert graph.get_state(_thread("d1")).values["items"] == [*before, "after", "item 9"]


def test_retention_on_every_put_keeps_a_delta_channel_whole(memory: AgentMemory) -> None:
    graph = _delta_graph(PalimpsestSaver(memory, retention=CheckpointRetention(keep_latest=1)))
    for n in range(9):
        graph.invoke({"items": [f"input {n}"], "turns": 0}, _thread("d2"))
    items = graph.get_state(_thread("d2")).values["items"]
    assert items == [x for n in range(9) for x in (f"input {n}", f"item {n}")]
    assert len(list(PalimpsestSaver(memory).list(_thread("d2")))) <= 12  # the chain back to a snapshot only


# -- the serializer reads only what it writes ---------------------------------------------------


def _tamper(memory: AgentMemory, thread_id: str, channel: str, value: TypedBytes) -> None:
    """Replace the value a thread's newest checkpoint has for ``channel``, through the store port."""
    store = memory.store
    assert isinstance(store, CheckpointStorage)
    with store.unit_of_work() as uow:
        repository = store.checkpoints(uow)
        latest = repository.get(thread_id, "")
        assert latest is not None
        version = latest.channel_versions[channel]
        repository.delete_blobs(thread_id, "", [(channel, version)])
        repository.put(latest, [ChannelBlob(channel, version, value)])
        uow.commit()


def _constructor_row(module: str, name: str, argument: Any) -> bytes:
    """A msgpack value naming ``module.name(argument)`` (the encoding's constructor extension)."""
    return ormsgpack.packb([ormsgpack.Ext(0, ormsgpack.packb((module, name, argument)))])


def _seeded(memory: AgentMemory, thread_id: str, **saver_options: Any) -> Any:
    agent = _agent(memory, ["Hello."], **saver_options)
    agent.invoke({"messages": [HumanMessage("hi")]}, _thread(thread_id))
    return agent


def test_a_row_naming_a_callable_is_refused_and_nothing_is_called(memory: AgentMemory) -> None:
    row = TypedBytes("msgpack", _constructor_row(__name__, "record_call", "payload"))
    JsonPlusSerializer().loads_typed((row.type, row.data))  # LangGraph's default reads it by calling it
    assert CALLS == ["payload"]
    CALLS.clear()

    agent = _seeded(memory, "x1")
    _tamper(memory, "x1", "messages", row)
    with pytest.raises(CheckpointIntegrityError, match="record_call"):
        agent.get_state(_thread("x1"))
    assert CALLS == []


@pytest.mark.parametrize(
    "row",
    [
        TypedBytes("pickle", pickle.dumps(["a", "list"])),
        TypedBytes("json", b'{"lc": 2, "type": "constructor", "id": ["os", "getcwd"]}'),
        TypedBytes("msgpack", ormsgpack.packb([ormsgpack.Ext(6, b"\x00")])),
        TypedBytes("msgpack", b"\xc1 not msgpack"),
    ],
    ids=["pickle", "lc-json", "unknown-extension", "garbage"],
)
def test_a_row_of_another_type_tag_or_extension_is_refused(memory: AgentMemory, row: TypedBytes) -> None:
    agent = _seeded(memory, "x2")
    _tamper(memory, "x2", "messages", row)
    with pytest.raises(CheckpointIntegrityError):
        agent.get_state(_thread("x2"))


def test_a_value_the_saver_would_not_read_back_is_refused_on_writing(memory: AgentMemory) -> None:
    class Custom(TypedDict):
        path: Any

    saver = PalimpsestSaver(memory)
    graph = StateGraph(Custom)
    graph.add_node("n", lambda state: {"path": _Point(1, 2)})
    graph.add_edge(START, "n")
    graph.add_edge("n", END)
    with pytest.raises(ValidationError, match="_Point"):
        graph.compile(checkpointer=saver).invoke({"path": None}, _thread("w1"))
    allowed = PalimpsestSaver(memory, allowed_types=[_Point])
    graph.compile(checkpointer=allowed).invoke({"path": None}, _thread("w2"))
    assert graph.compile(checkpointer=allowed).get_state(_thread("w2")).values["path"] == _Point(1, 2)


@dataclass(frozen=True)
class _Point:
    """A class of the test's own, stored as its fields and rebuilt by its constructor."""

    x: int
    y: int


def test_langgraphs_with_allowlist_extends_what_the_saver_reads(memory: AgentMemory) -> None:
    saver = PalimpsestSaver(memory)
    with pytest.raises(ValidationError):  # the plain saver refuses to write what it would not read
        saver.serde.dumps_typed(_Point(1, 2))
    wider = saver.with_allowlist([(_Point.__module__, "_Point")])
    assert wider is not saver and isinstance(wider, PalimpsestSaver)
    assert wider.serde.loads_typed(wider.serde.dumps_typed(_Point(1, 2))) == _Point(1, 2)
    assert wider.with_allowlist([(_Point.__module__, "_Point")]) is wider


def test_the_default_allow_list_reads_langchain_messages_and_plain_values() -> None:
    serde = CheckpointSerializer()
    value = {"messages": [HumanMessage("hi", id="1"), AIMessage("hello", id="2")], "tags": {"a", "b"}}
    assert serde.loads_typed(serde.dumps_typed(value)) == value


# -- authentication with key= --------------------------------------------------------------------

KEY = b"a key of thirty-two bytes, fixed"


def test_with_a_key_an_altered_row_is_refused(memory: AgentMemory) -> None:
    agent = _seeded(memory, "k1", key=KEY)
    assert agent.get_state(_thread("k1")).values["messages"][-1].content == "Hello."
    store = memory.store
    assert isinstance(store, CheckpointStorage)
    with store.reading() as uow:
        latest = store.checkpoints(uow).get("k1", "")
        assert latest is not None
        blob = store.checkpoints(uow).blobs("k1", "", {"messages": latest.channel_versions["messages"]})["messages"]
    altered = bytearray(blob.value.data)
    altered[-2] ^= 0x01
    _tamper(memory, "k1", "messages", TypedBytes(blob.value.type, bytes(altered)))
    with pytest.raises(CheckpointIntegrityError, match="authentication"):
        agent.get_state(_thread("k1"))


def test_with_a_key_a_row_moved_to_another_thread_is_refused(memory: AgentMemory) -> None:
    _seeded(memory, "victim", key=KEY)
    attacker = _seeded(memory, "attacker", key=KEY)
    store = memory.store
    assert isinstance(store, CheckpointStorage)
    with store.reading() as uow:
        latest = store.checkpoints(uow).get("victim", "")
        assert latest is not None
    with store.unit_of_work() as uow:  # the victim's newest checkpoint row, put under the attacker's thread
        store.checkpoints(uow).put(replace(latest, thread_id="attacker", checkpoint_id="ffffffff-ffff-6fff-bfff-ffffffffffff"), [])
        uow.commit()
    with pytest.raises(CheckpointIntegrityError):
        attacker.get_state(_thread("attacker"))


def test_keys_must_match_both_ways(memory: AgentMemory) -> None:
    _seeded(memory, "sealed", key=KEY)
    _seeded(memory, "plain")
    with pytest.raises(CheckpointIntegrityError, match="key="):
        PalimpsestSaver(memory).get_tuple(_thread("sealed"))
    with pytest.raises(CheckpointIntegrityError, match="authentication tag"):
        PalimpsestSaver(memory, key=KEY).get_tuple(_thread("plain"))
    with pytest.raises(CheckpointIntegrityError):
        PalimpsestSaver(memory, key=b"another key, thirty-two bytes!!").get_tuple(_thread("sealed"))


def test_with_a_key_a_copied_thread_is_sealed_for_its_new_place(memory: AgentMemory) -> None:
    agent = _seeded(memory, "from", key=KEY)
    saver = PalimpsestSaver(memory, key=KEY)
    saver.copy_thread("from", "to")
    assert [m.content for m in agent.get_state(_thread("to")).values["messages"]] == ["hi", "Hello."]


def test_bad_saver_options_are_refused(memory: AgentMemory) -> None:
    with pytest.raises(ValidationError):
        PalimpsestSaver(memory, key=b"short")
    with pytest.raises(ValidationError):
        PalimpsestSaver(memory, serde=JsonPlusSerializer(), allowed_types=[_Point])


# -- a restart on the embedded store -------------------------------------------------------------


def test_an_agent_survives_a_restart_on_the_embedded_store(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    first = build_client(path=path)
    try:
        if not first.checkpoints.available:
            pytest.skip("the embedded store does not offer CheckpointStorage (graph checkpoints) yet")
        _agent(first, [*TOOL_TURN]).invoke({"messages": [HumanMessage("weather in Lisbon?")]}, _thread("r"))
    finally:
        first.close()
    second = build_client(path=path)
    try:
        agent = _agent(second, ["You asked about Lisbon."])
        result = agent.invoke({"messages": [HumanMessage("what did I ask?")]}, _thread("r"))
        assert [m.content for m in result["messages"]] == [
            "weather in Lisbon?", "", "It is sunny in Lisbon.", "Sunny in Lisbon.", "what did I ask?", "You asked about Lisbon."
        ]
    finally:
        second.close()
