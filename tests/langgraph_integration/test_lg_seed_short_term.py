"""The seed's LangGraph short-term memory example (``examples/langgraph_short_term_memory.py``),
run offline against palimpsest.

The example's ``main`` is the seed's full code listing with only the imports and the
construction changed (``open_memory`` instead of an Oracle pool, embedder and LLM; a chat model
passed in instead of ``ChatOpenAI``, here a scripted one that records its prompts). Everything
else, the seed's own middleware class included, runs verbatim; the tests check what the seed
promises: the final state is the injected context card plus the raw tail, every real turn was
stored once, and the card summarises the earlier turns.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain_core.messages import AIMessage, HumanMessage
from lg_doubles import scripted

EXAMPLE = runpy.run_path(
    str(Path(__file__).resolve().parents[2] / "examples" / "langgraph_short_term_memory.py"),
    run_name="example_langgraph_short_term_memory",
)
FIRST_REPLY, SECOND_REPLY, FINAL_REPLY = EXAMPLE["FIRST_REPLY"], EXAMPLE["SECOND_REPLY"], EXAMPLE["FINAL_REPLY"]


@dataclass
class SeedRun:
    """What one run of the listing left behind."""

    namespace: dict[str, Any]
    model: Any
    output: str
    stored: list[tuple[str, str]]
    thread_scope: tuple[str | None, str | None]


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> SeedRun:
    """The example, run once for the module (its three turns are the slow part)."""
    model = scripted([FIRST_REPLY, SECOND_REPLY, FINAL_REPLY])
    output = io.StringIO()
    namespace: dict[str, Any] = {}
    try:
        with contextlib.redirect_stdout(output):
            namespace = EXAMPLE["main"](tmp_path_factory.mktemp("seed001"), langgraph_llm=model)
        thread = namespace["agent_memory"].get_thread(namespace["thread_id"])
        stored = [(m.role, m.content) for m in thread.get_messages()]
        scope = (thread.user_id, thread.agent_id)
    finally:
        if "agent_memory" in namespace:
            namespace["agent_memory"].close()
    return SeedRun(namespace, model, output.getvalue(), stored, scope)


def test_the_seed_listing_runs_unchanged_and_ends_with_the_card_and_the_tail(seed_run: SeedRun) -> None:
    messages = seed_run.namespace["messages"]
    card, *tail = messages
    assert isinstance(card, HumanMessage) and card.name == "memory_context_card"
    assert card.content.startswith("<context_card>") and card.content.rstrip().endswith("</context_card>")
    # The card was built with except_last_messages=3: it covers the first exchange, not the tail.
    assert "Maya" in card.content.split("<relevant_information>")[0]
    assert [type(m) for m in tail] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert tail[0].content == "The failing step right now is ledger enrichment after reconciliation."
    assert tail[1].content == SECOND_REPLY
    assert tail[2].content == "What workflow am I migrating, which step is failing, and who am I?"
    assert tail[3].content == FINAL_REPLY
    assert seed_run.namespace["final_answer"] == FINAL_REPLY

    # The model's third prompt was the compacted state: the card, then the raw tail.
    prompts = seed_run.model.prompts
    assert len(prompts[1]) == 3  # no compaction at the second turn: H1, A1, H2
    assert prompts[2][0].content == card.content
    assert [m.content for m in prompts[2][1:]] == [m.content for m in tail[:3]]
    # It printed the card, then the final answer.
    assert card.content in seed_run.output and seed_run.output.rstrip().endswith(FINAL_REPLY)


def test_the_seed_middleware_stored_each_turn_once(seed_run: SeedRun) -> None:
    # The seed persists in before_model only, so its final reply is not stored by it.
    assert seed_run.stored == [
        (
            "user",
            "I'm Maya. I'm migrating our nightly invoice reconciliation workflow from cron jobs to LangGraph.",
        ),
        ("assistant", FIRST_REPLY.strip()),
        ("user", "The failing step right now is ledger enrichment after reconciliation."),
        ("assistant", SECOND_REPLY.strip()),
        ("user", "What workflow am I migrating, which step is failing, and who am I?"),
    ]
    assert seed_run.thread_scope == ("user_123", "assistant_456")
