"""The seed's LangGraph short-term memory example, run offline against palimpsest.

``SEED_LISTING`` is the seed's full code listing with only three kinds of change: the imports
(palimpsest instead of the Oracle SDK, no ``oracledb``/``langchain_openai``), the chat model (a
scripted fake chat model instead of ``ChatOpenAI``) and the client construction (``open_memory()``
instead of an Oracle connection pool, embedder and LLM; the shipped hashing embedder keeps the
run fast). Everything else, the seed's own
middleware class included, runs verbatim; the test then checks what the seed promises: the final
state is the injected context card plus the raw tail, every real turn was stored once, and the
card summarises the earlier turns.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from langchain_core.messages import AIMessage, HumanMessage
from lg_doubles import scripted

# The assistant's first two replies are long (about 4,000 tokens each), so that the seed's own
# 6,000-token trigger fires at the third turn, exactly as with a verbose real model.
_FILLER = (
    "Moving a nightly cron job to LangGraph means modelling each step as a node, keeping the "
    "reconciliation state in the graph and retrying a failed step without rerunning the whole batch. "
)
FIRST_REPLY = "Nice to meet you, Maya. " + _FILLER * 85
SECOND_REPLY = "Understood: ledger enrichment fails after reconciliation. " + _FILLER * 85
FINAL_REPLY = (
    "You're Maya, migrating your nightly invoice reconciliation workflow from cron jobs to LangGraph, "
    "and the ledger-enrichment step after reconciliation is currently failing."
)

SEED_LISTING = r'''
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from palimpsest.adapters import open_memory
from palimpsest.application import AgentMemory as OracleAgentMemory
from palimpsest.application import MemoryExtractionConfig, SchemaPolicy
from palimpsest.application.testing import HashingEmbedder

langgraph_llm = scripted_chat_model  # offline: a scripted chat model instead of ChatOpenAI

agent_memory = open_memory(embedder=HashingEmbedder())  # offline: in-memory store, heuristics
thread_id = "langgraph_short_term_demo"
user_id = "user_123"
agent_id = "assistant_456"

##Configure short term memory middleware and a prebuilt LangGraph agent

def _message_text(message: BaseMessage | Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return str(content)

def _is_context_card_message(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and (
        getattr(message, "name", None) == "memory_context_card"
    )

class OracleShortTermMemoryMiddleware(AgentMiddleware):
    """Persist LangGraph turns and compact prompts with an OracleAgentMemory context card.

    Notes
    -----
    - ``before_model()`` receives the current LangGraph message state for this turn.
      After compaction, that state already includes the synthetic ``memory_context_card``
      message returned by a previous ``before_model()`` call.
    - The middleware strips that synthetic message back out before persisting or
      measuring token usage so OracleAgentMemory only stores real user/assistant turns
      and the compaction threshold is based on the organic conversation.
    - When compaction triggers, the middleware replaces the message history with one
      context-card message plus the most recent raw turns. On the next turn, that
      same injected message is seen again and filtered out before recomputing the
      next compacted prompt.
    """

    def __init__(
        self,
        memory: OracleAgentMemory,
        thread_id: str,
        user_id: str,
        agent_id: str,
        compaction_token_trigger: int,
        kept_message_count: int,
    ) -> None:
        self._thread = memory.create_thread(
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            memory_extraction_config=MemoryExtractionConfig(
                context_summary_update_frequency=4
            ),
        )
        self._compaction_token_trigger = int(compaction_token_trigger)
        self._kept_message_count = int(kept_message_count)
        self._persisted_message_ids: set[str] = set()

    def before_model(
        self,
        state: dict[str, Any],
        runtime: Runtime[Any],
    ) -> dict[str, Any] | None:
        del runtime
        messages = list(state["messages"])
        #^ This will contain the context card message once the compaction occurs
        raw_messages = [message for message in messages if not _is_context_card_message(message)]
        self._persist_new_messages(raw_messages)

        #we exclude the context card from the token counting
        if count_tokens_approximately(raw_messages) < self._compaction_token_trigger:
            return None

        #External-tail pattern: exclude the raw tail from derived card
        #content, then append the original messages separately.
        context_card = self._thread.get_context_card(
            except_last_messages=self._kept_message_count,
            max_recent_messages=0,
        ).content
        #Self-contained-card alternative: use the matching count for
        #max_recent_messages and omit the raw-message tail from the return
        #value.
        #context_card = self._thread.get_context_card(
        #except_last_messages=self._kept_message_count,
        #max_recent_messages=self._kept_message_count,
        #).content
        if not context_card:
            context_card = "<context_card>\n  No relevant short-term context yet.\n</context_card>"
        return {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),  # Clear existing message state.
                HumanMessage(content=context_card, name="memory_context_card"),
                *raw_messages[-self._kept_message_count :],
            ]
        }

    def _persist_new_messages(self, messages: list[BaseMessage]) -> None:
        persisted: list[dict[str, str]] = []
        for message in messages:
            #Persist only the conversational roles that map directly to short-
            #term memory turns. Tool/system/synthetic messages are skipped here.
            role = (
                "user"
                if isinstance(message, HumanMessage)
                else "assistant" if isinstance(message, AIMessage) else None
            )
            if role is None:
                continue

            content = _message_text(message).strip()
            if not content:
                continue

            #LangGraph messages usually have stable IDs. When they do not, fall back
            #to a content-derived key so the same turn is not persisted repeatedly if
            #the caller reuses the returned message list across later invocations.
            message_id = str(getattr(message, "id", "") or f"{role}:{hash(content)}")
            if message_id in self._persisted_message_ids:
                continue

            #Track what this middleware instance has already written so each real turn
            #is added to Oracle once even though later turns may still carry the same
            #messages in the LangGraph state.
            self._persisted_message_ids.add(message_id)
            persisted.append({"role": role, "content": content})

        if persisted:
            self._thread.add_messages(persisted)

short_term_middleware = OracleShortTermMemoryMiddleware(
    memory=agent_memory,
    thread_id=thread_id,
    user_id=user_id,
    agent_id=agent_id,
    compaction_token_trigger=6000,
    kept_message_count=3,
)
agent = create_agent(
    model=langgraph_llm,
    tools=[],
    middleware=[short_term_middleware],
)

##Answer later turns with the middleware backed agent

messages: list[BaseMessage] = []

def print_current_context_card(messages: list[BaseMessage]) -> None:
    for message in messages:
        if _is_context_card_message(message):
            print(_message_text(message))
            return
    print("<context_card>\n  No injected context card yet.\n</context_card>")

def run_turn(user_text: str) -> str:
    messages.append(HumanMessage(content=user_text))
    result = agent.invoke({"messages": messages})
    messages[:] = list(result["messages"])
    assistant_message = next(
        message for message in reversed(messages) if isinstance(message, AIMessage)
    )
    return _message_text(assistant_message)

run_turn(
    "I'm Maya. I'm migrating our nightly invoice reconciliation workflow "
    "from cron jobs to LangGraph."
)
run_turn("The failing step right now is ledger enrichment after reconciliation.")
final_answer = run_turn(
    "What workflow am I migrating, which step is failing, and who am I?"
)

print_current_context_card(messages)
#<context_card>
#<topics>
#<topic>invoice reconciliation migration</topic>
#<topic>ledger enrichment failure</topic>
#...
#</topics>
#<summary>
#Maya is migrating the nightly invoice reconciliation workflow from cron jobs
#to LangGraph. The failing step is ledger enrichment after reconciliation.
#</summary>
#...
#</context_card>
print(final_answer)
#You're Maya, migrating your nightly invoice reconciliation workflow from cron jobs
#to LangGraph, and the ledger-enrichment step after reconciliation is currently failing.
'''


@dataclass
class SeedRun:
    """What one run of the listing left behind."""

    namespace: dict[str, Any]
    model: Any
    output: str
    stored: list[tuple[str, str]]
    thread_scope: tuple[str | None, str | None]


@pytest.fixture(scope="module")
def seed_run() -> SeedRun:
    """The listing, run once for the module (its three turns are the slow part)."""
    model = scripted([FIRST_REPLY, SECOND_REPLY, FINAL_REPLY])
    namespace: dict[str, Any] = {"__name__": "seed_short_term_langgraph", "scripted_chat_model": model}
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            exec(compile(SEED_LISTING, "seed_short_term_langgraph.py", "exec"), namespace)  # noqa: S102
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
