"""Adapters layer (LangGraph / LangChain): short-term memory middleware, a BaseStore and agent tools (optional extra ``langgraph``).

Everything here needs ``pip install 'palimpsest-memory[langgraph]'`` (LangChain and LangGraph
1.x); the rest of palimpsest imports without them.

* :class:`ShortTermMemoryMiddleware`: an ``AgentMiddleware`` for ``langchain.agents.create_agent``
  that persists the conversation's turns into a palimpsest thread exactly once and compacts the
  agent's state with a context card (both patterns: card + raw tail, or a self-contained card).
* :class:`PalimpsestStore`: a LangGraph ``BaseStore`` whose items are palimpsest memory records
  (namespaces ``(user_id, agent_id, *rest)`` or LangMem's ``("memories", user_id, *rest)``), with semantic search through palimpsest.
* :func:`make_memory_tools`: ``search_memory`` and ``save_memory`` tools scoped to a thread's user
  and agent (the run's, read through LangChain's ``ToolRuntime``).
* :func:`context_card_prompt`: a ``@dynamic_prompt`` middleware putting the run's context card in
  the system prompt.
* :class:`LangChainEmbedder`: any LangChain ``Embeddings`` as palimpsest's ``Embedder`` port.
* :class:`PalimpsestSaver`: a LangGraph checkpointer in the client's own store (sync and async),
  with :class:`CheckpointRetention` and a serializer that reads only what it writes
  (:class:`CheckpointSerializer`).
"""

from __future__ import annotations

try:
    import langchain.agents  # noqa: F401
    import langchain_core  # noqa: F401
    import langgraph  # noqa: F401
except ModuleNotFoundError as exc:  # keep the type and name: callers may tell a missing extra apart
    raise ModuleNotFoundError(
        f"palimpsest.adapters.langgraph needs LangChain and LangGraph 1.x "
        f"(pip install 'palimpsest-memory[langgraph]'): {exc}",
        name=exc.name,
    ) from exc

from .checkpointer import CheckpointRetention, PalimpsestSaver
from .embeddings import LangChainEmbedder
from .messages import (
    CARD_MESSAGE_ID,
    CARD_MESSAGE_NAME,
    MESSAGE_METADATA_KEY,
    is_context_card_message,
    palimpsest_message_id,
    safe_tail_start,
)
from .middleware import CompactionTrigger, ShortTermMemoryMiddleware, ShortTermMemoryState, TokenCounter
from .prompts import context_card_prompt
from .serde import CheckpointSerializer
from .store import PalimpsestStore
from .threads import ThreadResolver
from .tools import make_memory_tools

__all__ = [
    "CARD_MESSAGE_ID",
    "CARD_MESSAGE_NAME",
    "MESSAGE_METADATA_KEY",
    "CheckpointRetention",
    "CheckpointSerializer",
    "CompactionTrigger",
    "LangChainEmbedder",
    "PalimpsestSaver",
    "PalimpsestStore",
    "ShortTermMemoryMiddleware",
    "ShortTermMemoryState",
    "ThreadResolver",
    "TokenCounter",
    "context_card_prompt",
    "is_context_card_message",
    "make_memory_tools",
    "palimpsest_message_id",
    "safe_tail_start",
]
