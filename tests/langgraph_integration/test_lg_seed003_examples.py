"""The seed 003 short-term-memory patterns (``examples/seed003_*.py``), each run offline on palimpsest.

Each test runs an example's ``main`` in a temporary folder with a scripted model that records its
prompts, then reopens the store and checks the durable side twice: the graph state the
checkpointer (``PalimpsestSaver``) holds, and the turns palimpsest's thread holds.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'")

from langchain_core.messages import BaseMessage, ToolMessage
from lg_doubles import scripted
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import PalimpsestSaver, is_context_card_message
from palimpsest.application import AgentMemory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> dict[str, Any]:
    """The example's names, its module registered (LangChain resolves the annotations of its
    state schemas and tools in the module, as for an imported one)."""
    module_name = f"example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return vars(module)


def run(example: dict[str, Any], folder: Path, **models: Any) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = example["main"](folder, **models)
    return result, out.getvalue()


def checkpointed(memory: AgentMemory, thread_id: str) -> dict[str, Any]:
    """The channel values of the newest checkpoint of ``thread_id``, read through a new saver."""
    saved = PalimpsestSaver(memory).get_tuple({"configurable": {"thread_id": thread_id}})
    assert saved is not None
    return dict(saved.checkpoint["channel_values"])


def durable(path: Path, thread_id: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The checkpointed channel values of ``thread_id`` and its palimpsest turns, read afresh from ``path``."""
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        values = checkpointed(memory, thread_id)
        turns = [(m.role, m.content) for m in memory.get_thread(thread_id).get_messages()]
    return values, turns


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


# --- 3. summarise messages --------------------------------------------------------------------


def test_summarization_replaces_the_state_and_compaction_keeps_the_thread(tmp_path: Path) -> None:
    example = load("seed003_summarize_messages")
    turns, replies, keep = example["TURNS"], example["REPLIES"], example["KEEP"]
    everything = [x for pair in zip(turns, replies, strict=True) for x in pair]
    model, card_model = scripted(replies), scripted(replies)
    result, _ = run(example, tmp_path, model=model, summary_model=None, card_model=card_model)

    with open_memory(result["path"], embedder=HashingEmbedder()) as memory:
        # The seed's SummarizationMiddleware: a summary, then the newest messages; the rest is gone.
        summary, *rest = checkpointed(memory, "1")["messages"]
        assert summary.additional_kwargs.get("lc_source") == "summarization"
        assert example["SUMMARY"] in summary.content
        assert [m.content for m in rest] == everything[-len(rest) :] and len(rest) < len(everything) - 2
        assert turns[0] not in [m.content for m in rest]
        assert model.prompts[-1][0].content == summary.content  # what the model answered from
        assert [t.id for t in memory.list_threads("bob")] == ["2"]  # no middleware, no thread "1"

        # palimpsest's compaction: the card then the newest three; the thread keeps every turn.
        card, *tail = checkpointed(memory, "2")["messages"]
        assert is_context_card_message(card) and "hi, my name is bob" in card.content
        assert [m.content for m in tail] == everything[-keep - 1 :]  # the tail, then the final reply
        stored = [(m.role, m.content) for m in memory.get_thread("2").get_messages()]
    assert stored == [(role, text.strip()) for role, text in zip(["user", "assistant"] * 4, everything, strict=True)]
    # The model's last prompt: the card, then the tail (the first turn is only in the card).
    last = card_model.prompts[-1]
    assert is_context_card_message(last[0]) and last[0].content == card.content
    assert [m.content for m in last[1:]] == everything[-keep - 1 : -1]
    assert [m.content for m in result["palimpsest"]["state"]["messages"]] == [card.content, *[m.content for m in tail]]


# --- 4. tools that read and write the state ---------------------------------------------------


def test_tools_read_and_write_the_checkpointed_state(tmp_path: Path) -> None:
    example = load("seed003_tool_state")
    model = scripted(example["SCRIPT"])
    result, output = run(example, tmp_path, model=model)
    assert result["lookup"]["messages"][-1].content == "User is John Smith."
    assert result["greeting"]["messages"][-1].content == "Hello John Smith! How can I help you today?"

    with open_memory(result["path"], embedder=HashingEmbedder()) as memory:
        values = checkpointed(memory, "1")
        thread = memory.get_thread("1")
        stored = [(m.role, m.content) for m in thread.get_messages()]
        owner = (thread.user_id, thread.agent_id)
    # The state field read by get_user_info, and the one update_user_info's Command wrote.
    assert values["user_id"] == "user_123" and values["user_name"] == "John Smith"
    tool_results = [(m.name, m.content) for m in values["messages"] if isinstance(m, ToolMessage)]
    assert tool_results == [
        ("get_user_info", "User is John Smith"),
        ("greet", "Please call the 'update_user_info' tool it will get and update the user's name."),
        ("update_user_info", "Successfully looked up user information"),
        ("greet", "Hello John Smith!"),
    ]
    # palimpsest keeps the text turns, under the context's user; tool calls and results stay in the state.
    assert stored == [
        ("user", "look up user information"),
        ("assistant", "User is John Smith."),
        ("user", "greet the user"),
        ("assistant", "Hello John Smith! How can I help you today?"),
    ]
    assert owner == ("user_123", "assistant")
    assert "Hello John Smith!" in output


# --- 5. dynamic prompt ------------------------------------------------------------------------


def test_the_dynamic_prompt_carries_the_seed_text_and_the_card_and_is_not_kept(tmp_path: Path) -> None:
    example = load("seed003_dynamic_prompt")
    model = scripted(example["SCRIPT"])
    result, _ = run(example, tmp_path, model=model)
    hike, weather = example["TURNS"]

    # Every model call: the seed's prompt for the context's user, then the thread's card.
    assert len(model.prompts) == 3
    for prompt in model.prompts:
        system = prompt[0]
        assert system.type == "system"
        seed_text, card = system.content.split("\n\n", 1)
        assert seed_text == "You are a helpful assistant. Address the user as John Smith."
        assert card.startswith("<context_card>") and "Mount Tamalpais" in card
    assert [m.type for m in model.prompts[-1][1:]] == ["human", "ai", "human", "ai", "tool"]

    values, stored = durable(result["path"], "1")
    # Neither prompt is state: the checkpoint holds the conversation and the tool exchange only.
    assert [m.type for m in values["messages"]] == ["human", "ai", "human", "ai", "tool", "ai"]
    assert not any("<context_card>" in str(m.content) for m in values["messages"])
    assert values["messages"][4].content == "The weather in San Francisco is always sunny!"
    assert stored == [
        ("user", hike),
        ("assistant", example["SCRIPT"][0].content),
        ("user", weather),
        ("assistant", "Hi John Smith, the weather in San Francisco is always sunny!"),
    ]
    assert texts(result["state"]["messages"]) == texts(values["messages"])


# --- 6. before and after model hooks ----------------------------------------------------------


def history_mentions(path: Path, config: dict[str, Any], text: str) -> int:
    """How many stored checkpoints (or their pending writes) of the run's thread mention ``text``."""
    with open_memory(path, embedder=HashingEmbedder()) as memory:
        saved = list(PalimpsestSaver(memory).list(config))
    return sum(
        1
        for tup in saved
        if any(text in str(m.content) for m in tup.checkpoint["channel_values"].get("messages", []))
        or any(text in str(write) for write in tup.pending_writes or [])
    )


@pytest.mark.parametrize("retention", ["example's", None])
def test_a_reply_removed_after_the_model_is_not_kept(tmp_path: Path, retention: str | None) -> None:
    example = load("seed003_model_hooks")
    (hi, secret, cats, name), (hi_reply, _, cats_reply, name_reply) = example["TURNS"], example["REPLIES"]
    model = scripted(example["REPLIES"])
    options = {} if retention else {"retention": None}
    result, _ = run(example, tmp_path, model=model, **options)

    # validate_response removed the second reply; the seed's trim then dropped the first reply and
    # the question, listed after the middleware (which follows them at the end of the turn).
    final = [hi, cats, cats_reply, name, name_reply]
    values, stored = durable(result["path"], "1")
    assert [m.content for m in values["messages"]] == final
    assert [text for _, text in stored] == final
    assert [m.content for m in model.prompts[2]] == [hi, hi_reply, secret, cats]  # the reply never came back
    assert [m.content for m in model.prompts[3]] == [hi, cats, cats_reply, name]

    if retention:  # the newest checkpoint only: the reply is nowhere in the store
        assert history_mentions(result["path"], result["config"], "hunter2") == 0
    else:  # the checkpoint written right after the model call still holds it
        assert history_mentions(result["path"], result["config"], "hunter2") >= 1
