"""Adapters layer (LangGraph): a context card in a dynamic system prompt.

:func:`context_card_prompt` returns LangChain's ``@dynamic_prompt`` middleware that, before each
model call, builds the run's thread's context card (summary of what the prompt no longer holds,
topics, the most relevant memories of the thread's user and agent) and gives it to the model in
the system prompt, after the agent's own (``create_agent(system_prompt=...)``) or the one given
here. The card is data for the model, its stored values XML-escaped by palimpsest. The state is
not changed, so nothing of the card is checkpointed or stored as a turn.

The thread is fixed or the run's, as for the middleware (``configurable`` or the runtime
``context``: ``thread_id``, ``user_id``, ``agent_id``). The card leaves out the newest stored turns
the prompt repeats: as many as the prompt holds turns (right when each turn is stored before the
model call, as :class:`~palimpsest.adapters.langgraph.ShortTermMemoryMiddleware` does), or
``except_last_messages`` when given. When the prompt holds the whole thread, the card covers all of
it: its summary then repeats a short conversation, and its relevant records are still there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, dynamic_prompt
from palimpsest.application import AgentMemory, MemoryThread
from palimpsest.domain.errors import ConfigurationError

from .messages import is_context_card_message
from .threads import ThreadResolver, current_run_config, run_context
from .turns import turn_of

__all__ = ["context_card_prompt"]

_RESERVED: frozenset[str] = frozenset({"except_last_messages", "max_recent_messages"})


def context_card_prompt(
    memory: AgentMemory | None = None,
    *,
    thread: MemoryThread | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    system_prompt: str | None = None,
    except_last_messages: int | None = None,
    context_card_options: Mapping[str, Any] | None = None,
) -> AgentMiddleware[Any, Any, Any]:
    """A ``@dynamic_prompt`` middleware putting the run's context card in the system prompt
    (see the module docs). ``context_card_options`` are further ``get_context_card`` arguments."""
    resolver = ThreadResolver(memory, thread=thread, thread_id=thread_id, user_id=user_id, agent_id=agent_id)
    options = dict(context_card_options or {})
    if _RESERVED & options.keys():
        raise ConfigurationError(
            "context_card_options cannot set except_last_messages or max_recent_messages; "
            "use except_last_messages= (the card of a system prompt carries no recent messages)."
        )
    if except_last_messages is not None and (
        isinstance(except_last_messages, bool) or not isinstance(except_last_messages, int) or except_last_messages < 0
    ):
        raise ConfigurationError("except_last_messages must be a non-negative integer.")

    def palimpsest_context_card_prompt(request: ModelRequest) -> str:
        current = resolver.resolve(current_run_config(), run_context(request.runtime))
        repeated = except_last_messages
        if repeated is None:
            repeated = sum(
                1 for m in request.messages if not is_context_card_message(m) and turn_of(m) is not None
            )
        base = system_prompt if system_prompt is not None else (request.system_prompt or "")
        if repeated and len(current.get_messages(start=-(repeated + 1), end=None)) <= repeated:
            repeated = 0  # the prompt holds the whole thread: the card of all of it, for its records
        card = current.get_context_card(except_last_messages=repeated, max_recent_messages=0, **options).content
        return "\n\n".join(part for part in (base, card) if part)

    return dynamic_prompt(palimpsest_context_card_prompt)
