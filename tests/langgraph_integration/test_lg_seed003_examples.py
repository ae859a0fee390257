"""The seed 003 short-term-memory patterns (``examples/seed003_*.py``), each run offline on palimpsest.

Each test runs an example's ``main`` in a temporary folder with a scripted model that records its
prompts, then reopens the store and checks the durable side twice: the graph state the
checkpointer (``PalimpsestSaver``) holds, and the turns palimpsest's thread holds.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'")

from langchain_core.messages import BaseMessage
from lg_doubles import scripted
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


def run(example: dict[str, Any], folder: Path, **models: Any) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = example["main"](folder, **models)
    return result, out.getvalue()


def durable(path: Path, thread_id: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The checkpointed channel values of ``thread_id`` and its palimpsest turns, read afresh from ``path``."""
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        saved = PalimpsestSaver(memory).get_tuple({"configurable": {"thread_id": thread_id}})
        assert saved is not None
        turns = [(m.role, m.content) for m in memory.get_thread(thread_id).get_messages()]
    return dict(saved.checkpoint["channel_values"]), turns


def texts(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def as_turns(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    """The user/assistant turns with text of a message list, as palimpsest stores them."""
    roles = {"human": "user", "ai": "assistant"}
    return [(roles[m.type], str(m.content)) for m in messages if m.type in roles and m.content]


# --- 1. trim messages -------------------------------------------------------------------------


def test_trim_by_remove_message_deletes_and_trim_of_the_request_keeps(tmp_path: Path) -> None:
    example = load("seed003_trim_messages")
    turns, replies = example["TURNS"], example["REPLIES"]
    seed_model, request_model = scripted(replies), scripted(replies)
    result, output = run(example, tmp_path, model=seed_model, request_model=request_model)
    assert output.count("Your name is Bob.") == 2

    everything = [x for pair in zip(turns, replies, strict=True) for x in pair]
    # The seed's trim: the fourth call drops the first reply and the second question, for good.
    kept = [everything[0], *everything[3:]]
    values, stored = durable(result["path"], "1")
    assert [m.content for m in values["messages"]] == kept
    assert [m.content for m in result["seed"]["state"]["messages"]] == kept
    assert [text for _, text in stored] == kept
    assert [m.content for m in seed_model.prompts[3]] == [everything[0], *everything[3:7]]

    # Trimming the request: the model saw the same five messages, the state and the thread keep all.
    assert [m.content for m in request_model.prompts[3]] == [m.content for m in seed_model.prompts[3]]
    values, stored = durable(result["path"], "2")
    assert [m.content for m in values["messages"]] == everything
    assert [text for _, text in stored] == everything
    assert [role for role, _ in stored] == ["user", "assistant"] * 4


# --- 2. delete messages -----------------------------------------------------------------------


def test_deleted_messages_leave_the_state_and_the_thread(tmp_path: Path) -> None:
    example = load("seed003_delete_messages")
    (hi, name, forget), (hi_reply, name_reply, forget_reply) = example["TURNS"], example["REPLIES"]
    model = scripted(example["REPLIES"])
    result, _ = run(example, tmp_path, model=model)

    # The seed's streamed states: the first exchange deleted after the second reply.
    assert result["streamed"] == [
        [("human", hi)],
        [("human", hi), ("ai", hi_reply)],
        [("human", hi), ("ai", hi_reply), ("human", name)],
        [("human", hi), ("ai", hi_reply), ("human", name), ("ai", name_reply)],
        [("human", name), ("ai", name_reply)],
        [("human", name), ("ai", name_reply), ("human", forget)],
        [("human", forget)],  # REMOVE_ALL_MESSAGES, the request kept
        [("human", forget), ("ai", forget_reply)],
    ]
    # The model got the second question with the first exchange, the request alone after "forget".
    assert [m.content for m in model.prompts[1][1:]] == [hi, hi_reply, name]
    assert texts(model.prompts[2]) == [("system", "Please be concise and to the point."), ("human", forget)]

    values, stored = durable(result["path"], "1")
    assert texts(values["messages"]) == [("human", forget), ("ai", forget_reply)]
    assert stored == [("user", forget), ("assistant", forget_reply)]
