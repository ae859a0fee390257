"""What ``ShortTermMemoryMiddleware`` costs a turn, in the three ways a server drives an agent.

A fake chat model (no network) answers each turn; the middleware runs on the embedded store
(a fresh file, hashing embedder, extraction off) with a token trigger, so compactions happen.

* ``returned-list``: the seed's loop: the client re-sends the message list it got back, no checkpointer;
* ``checkpointer``: LangGraph's ``InMemorySaver``, each request carries only the new message;
* ``stateless``: an OpenAI-style server: each request carries the whole history as plain dicts
  (no ids), no checkpointer.

Printed per scenario: milliseconds per turn (p50 and mean over ``--turns``), the messages the
thread holds at the end (two per turn is right), the cards built (compactions the model saw) and
the prompt's tokens (LangChain's approximate count; mean and max over the model calls).

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_middleware --turns 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.langgraph import CARD_MESSAGE_NAME, ShortTermMemoryMiddleware
from palimpsest.application import MemoryExtractionConfig


class _FakeModel(GenericFakeChatModel):
    cards: list[str] = []  # noqa: RUF012 - a fresh list is given to each model
    prompt_tokens: list[int] = []  # noqa: RUF012 - a fresh list is given to each model

    def bind_tools(self, tools: Any, **kwargs: Any) -> _FakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.prompt_tokens.append(count_tokens_approximately(messages))
        first = messages[0] if messages else None
        is_card = first is not None and getattr(first, "name", None) == CARD_MESSAGE_NAME
        if is_card and (not self.cards or self.cards[-1] != first.content):  # a new card: a compaction
            self.cards.append(str(first.content))  # type: ignore[union-attr]
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _reply(i: int) -> str:
    return f"For leg {i}: a window seat, a vegetarian meal and a quiet hotel near the station are booked."


def _question(i: int) -> str:
    return f"Please book leg {i} of my trip: window seat, vegetarian meal, a quiet hotel near the station."


def run(scenario: str, turns: int, trigger: int) -> tuple[list[float], int, int, list[int]]:
    with tempfile.TemporaryDirectory() as folder:
        memory = open_memory(
            Path(folder) / "bench.db",
            embedder=HashingEmbedder(),
            memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        )
        try:
            model = _FakeModel(messages=iter([AIMessage(content=_reply(i)) for i in range(turns)]), cards=[], prompt_tokens=[])
            agent = create_agent(
                model=model,
                tools=[],
                middleware=[
                    ShortTermMemoryMiddleware(
                        memory, user_id="u", compaction_token_trigger=trigger, except_last_messages=2
                    )
                ],
                checkpointer=InMemorySaver() if scenario == "checkpointer" else None,
            )
            config = {"configurable": {"thread_id": "bench"}}
            messages: list[BaseMessage] = []
            history: list[dict[str, str]] = []
            times: list[float] = []
            for i in range(turns):
                started = time.perf_counter()
                if scenario == "returned-list":
                    messages.append(HumanMessage(content=_question(i)))
                    messages = list(agent.invoke({"messages": messages}, config)["messages"])
                elif scenario == "checkpointer":
                    agent.invoke({"messages": [HumanMessage(content=_question(i))]}, config)
                else:
                    history.append({"role": "user", "content": _question(i)})
                    reply = agent.invoke({"messages": list(history)}, config)["messages"][-1]
                    history.append({"role": "assistant", "content": str(reply.content)})
                times.append((time.perf_counter() - started) * 1000.0)
            stored = len(memory.get_thread("bench").get_messages(start=0, end=None))
            return times, stored, len(model.cards), model.prompt_tokens
        finally:
            memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--trigger", type=int, default=600, help="compaction_token_trigger")
    args = parser.parse_args()
    print(
        f"{'scenario':<14} {'p50 ms/turn':>12} {'mean ms/turn':>13} {'stored':>7} {'cards':>6} "
        f"{'mean prompt':>12} {'max prompt':>11}"
    )
    for scenario in ("returned-list", "checkpointer", "stateless"):
        times, stored, cards, prompts = run(scenario, args.turns, args.trigger)
        print(
            f"{scenario:<14} {statistics.median(times):>12.1f} {statistics.mean(times):>13.1f} {stored:>7} {cards:>6} "
            f"{statistics.mean(prompts):>12.0f} {max(prompts):>11}"
        )


if __name__ == "__main__":
    main()
