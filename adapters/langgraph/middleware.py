"""Adapters layer (LangGraph): ``ShortTermMemoryMiddleware``, short-term memory for ``create_agent``.

The middleware keeps a LangGraph conversation in a palimpsest thread and compacts the agent's
state with a context card:

* **Persistence, exactly once.** Before and after every model call, new user and assistant turns
  (``HumanMessage``/``AIMessage`` with text; tool results, system messages and the card itself
  are skipped) are appended to the thread. Each turn keeps the LangChain message ``id`` (one is
  assigned when missing) in its metadata (``$langgraph.message_id``) and gets a palimpsest id
  derived from the thread and that id, so re-sending the returned message list, running several
  workers, or restarting the process never stores a turn twice: what is not in this instance's
  small cache is looked up in the store, and a racing second write is refused as a duplicate id.
* **Measurement.** Triggers see the organic conversation only (the injected card excluded):
  ``compaction_token_trigger`` (tokens by ``token_counter``, LangChain's
  ``count_tokens_approximately`` by default), ``compaction_message_trigger`` (message count) and
  ``compaction_trigger`` (any callable of the messages and their token count); any one fires.
* **Compaction.** The state becomes ``RemoveMessage(REMOVE_ALL_MESSAGES)``, one marked card
  message (``name="palimpsest_context_card"``, fixed id, ``additional_kwargs["lc_source"]``) whose
  content is the card's XML (escaped by palimpsest), and, in the *external tail* pattern
  (``max_recent_messages=0``), the last ``except_last_messages`` raw messages. The card leaves out
  exactly the persisted turns of that tail, and it is not rebuilt until the next compaction, so
  the prompt prefix stays stable for prompt caching. In the *self-contained* pattern
  (``max_recent_messages == except_last_messages``) the card carries the newest turns itself and
  is the whole state; since tool results live only in the state, it waits for a turn boundary
  (the conversation ending with a user message) rather than cut a running tool loop.
* **Tool exchanges.** A kept tail never starts with a ``ToolMessage`` and never separates an
  ``AIMessage`` with tool calls from its results: the cut moves back to the calling message.

The thread is fixed (``thread=`` / ``thread_id=``) or follows the run's
``config["configurable"]["thread_id"]``, as LangGraph checkpointers do (see
:class:`~palimpsest.adapters.langgraph.threads.ThreadResolver`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import AgentState
from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryThread
from palimpsest.domain.errors import ConfigurationError, DuplicateIdError, MessageNotFoundError
from palimpsest.domain.model import MAX_SPEAKER_LENGTH

from .messages import (
    MESSAGE_METADATA_KEY,
    is_context_card_message,
    make_context_card_message,
    message_role,
    message_text,
    palimpsest_message_id,
    safe_tail_start,
)
from .threads import ThreadResolver, current_run_config
from .tools import make_memory_tools

__all__ = ["CompactionTrigger", "ShortTermMemoryMiddleware", "TokenCounter"]

log = logging.getLogger("palimpsest")

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a list of messages."""

CompactionTrigger = Callable[[Sequence[BaseMessage], int], bool]
"""Decides from the organic messages and their token count whether to compact now."""

EMPTY_CARD: Final = "<context_card>\n</context_card>"
_RESERVED_CARD_OPTIONS: Final = frozenset({"except_last_messages", "max_recent_messages"})
_MAX_TRACKED_THREADS: Final = 1024
_WRITE_ATTEMPTS: Final = 3


class ShortTermMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Persist an agent's turns into palimpsest and compact its state with a context card.

    Args:
        memory: the client; optional when ``thread`` is given.
        thread: a thread handle to write to, or ``thread_id`` (created on first use with
            ``user_id``/``agent_id``, ``thread_metadata`` and ``memory_extraction_config``);
            neither: the run's ``config["configurable"]["thread_id"]``.
        compaction_token_trigger: compact when the organic conversation has at least this many
            tokens (by ``token_counter``).
        compaction_message_trigger: compact when it has at least this many messages (must exceed
            ``except_last_messages``).
        compaction_trigger: compact when ``compaction_trigger(messages, tokens)`` is true.
        except_last_messages: the raw tail kept after compaction (at least 1).
        max_recent_messages: ``0`` for the external-tail pattern (card + raw tail), or equal to
            ``except_last_messages`` for the self-contained card.
        context_card_options: further ``get_context_card`` arguments (``max_relevant_results``,
            ``min_relevant_results_by_type``, ``token_budget``, ...).
        card_role: ``"user"`` (a ``HumanMessage``, as in the seed pattern) or ``"system"``.
        memory_tools: also give the agent ``search_memory`` and ``save_memory`` (see
            :func:`~palimpsest.adapters.langgraph.make_memory_tools`) on the same thread.
    """

    def __init__(
        self,
        memory: AgentMemory | None = None,
        *,
        thread: MemoryThread | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_metadata: Mapping[str, Any] | None = None,
        memory_extraction_config: MemoryExtractionConfig | None = None,
        compaction_token_trigger: int | None = None,
        compaction_message_trigger: int | None = None,
        compaction_trigger: CompactionTrigger | None = None,
        except_last_messages: int = 3,
        max_recent_messages: int = 0,
        token_counter: TokenCounter = count_tokens_approximately,
        context_card_options: Mapping[str, Any] | None = None,
        card_role: Literal["user", "system"] = "user",
        memory_tools: bool = False,
    ) -> None:
        super().__init__()
        self._resolver = ThreadResolver(
            memory,
            thread=thread,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            thread_metadata=thread_metadata,
            memory_extraction_config=memory_extraction_config,
        )
        self._keep = _positive_int("except_last_messages", except_last_messages)
        if isinstance(max_recent_messages, bool) or not isinstance(max_recent_messages, int):
            raise ConfigurationError("max_recent_messages must be an integer.")
        if max_recent_messages not in (0, self._keep):
            raise ConfigurationError(
                "max_recent_messages must be 0 (card + raw tail) or equal to except_last_messages "
                "(self-contained card), so the tail is never given twice."
            )
        self._self_contained = max_recent_messages == self._keep
        self._token_trigger = (
            None
            if compaction_token_trigger is None
            else _positive_int("compaction_token_trigger", compaction_token_trigger)
        )
        self._message_trigger = (
            None
            if compaction_message_trigger is None
            else _positive_int("compaction_message_trigger", compaction_message_trigger)
        )
        if self._message_trigger is not None and self._message_trigger <= self._keep:
            raise ConfigurationError("compaction_message_trigger must exceed except_last_messages.")
        if compaction_trigger is not None and not callable(compaction_trigger):
            raise ConfigurationError("compaction_trigger must be callable(messages, tokens) -> bool.")
        self._custom_trigger = compaction_trigger
        if self._token_trigger is None and self._message_trigger is None and compaction_trigger is None:
            raise ConfigurationError(
                "Give at least one of compaction_token_trigger, compaction_message_trigger or compaction_trigger."
            )
        if not callable(token_counter):
            raise ConfigurationError("token_counter must be callable(messages) -> int.")
        self._count_tokens = token_counter
        options = dict(context_card_options or {})
        if _RESERVED_CARD_OPTIONS & options.keys():
            raise ConfigurationError(
                "context_card_options cannot set except_last_messages or max_recent_messages; "
                "use the middleware's own arguments."
            )
        self._card_options = options
        if card_role not in ("user", "system"):
            raise ConfigurationError("card_role must be 'user' or 'system'.")
        self._card_role: Literal["user", "system"] = card_role
        self._lock = threading.Lock()
        self._persisted: OrderedDict[str, set[str]] = OrderedDict()
        self.tools: list[BaseTool] = []
        if memory_tools:
            if memory is None:
                raise ConfigurationError("memory_tools=True needs the AgentMemory (memory=...).")
            self.tools = make_memory_tools(
                memory, thread if thread is not None else thread_id, user_id=user_id, agent_id=agent_id
            )

    # -- LangChain hooks ---------------------------------------------------------------------

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Persist new turns, then compact the state if a trigger fires."""
        return self._before_model(state, current_run_config())

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model` (the store work runs in a worker thread)."""
        return await asyncio.to_thread(self._before_model, state, current_run_config())

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Persist the model's reply at once, so a finished turn is durable."""
        self._after_model(state, current_run_config())
        return None

    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        await asyncio.to_thread(self._after_model, state, current_run_config())
        return None

    # -- public helpers ----------------------------------------------------------------------

    def thread_for(self, config: Mapping[str, Any] | None = None) -> MemoryThread:
        """The palimpsest thread of a run (``config`` as passed to ``invoke``)."""
        return self._resolver.resolve(config)

    @property
    def self_contained(self) -> bool:
        """True for the self-contained card pattern, False for card + external raw tail."""
        return self._self_contained

    # -- work --------------------------------------------------------------------------------

    def _before_model(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any] | None:
        thread = self._resolver.resolve(config)
        organic = [m for m in state.get("messages", ()) if not is_context_card_message(m)]
        self._persist(thread, organic)
        if not self._should_compact(organic):
            return None
        return self._compact(thread, organic)

    def _after_model(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        thread = self._resolver.resolve(config)
        organic = [m for m in state.get("messages", ()) if not is_context_card_message(m)]
        self._persist(thread, organic)

    def _should_compact(self, organic: Sequence[BaseMessage]) -> bool:
        if self._message_trigger is not None and len(organic) >= self._message_trigger:
            return True
        if self._token_trigger is None and self._custom_trigger is None:
            return False
        tokens = int(self._count_tokens(organic))
        if self._token_trigger is not None and tokens >= self._token_trigger:
            return True
        return self._custom_trigger is not None and bool(self._custom_trigger(organic, tokens))

    def _compact(self, thread: MemoryThread, organic: list[BaseMessage]) -> dict[str, Any] | None:
        if self._self_contained:
            # The card holds the newest turns; tool results exist only in the state, so a tool
            # loop in progress is never cut: compaction waits for the next user turn.
            if (
                len(organic) <= self._keep
                or not isinstance(organic[-1], HumanMessage)
                or _turn(organic[-1]) is None  # e.g. an image only: the card could not carry it
            ):
                return None
            card = thread.get_context_card(
                except_last_messages=self._keep, max_recent_messages=self._keep, **self._card_options
            ).content
            if not card:
                return None
            tail: list[BaseMessage] = []
        else:
            start = safe_tail_start(organic, self._keep)
            if start == 0:
                return None  # the tail is the whole conversation: nothing to compact
            tail = organic[start:]
            # The card must leave out exactly the turns the raw tail repeats.
            repeated = sum(1 for m in tail if _turn(m) is not None)
            card = (
                thread.get_context_card(
                    except_last_messages=repeated, max_recent_messages=0, **self._card_options
                ).content
                or EMPTY_CARD
            )
        message = make_context_card_message(card, thread_id=thread.thread_id, role=self._card_role)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), message, *tail]}

    def _persist(self, thread: MemoryThread, organic: Sequence[BaseMessage]) -> None:
        turns: list[tuple[str, str, str, str, str | None]] = []
        seen: set[str] = set()
        for message in organic:
            turn = _turn(message)
            if turn is None:
                continue
            if not message.id:
                message.id = str(uuid.uuid4())
            if message.id in seen:  # the same message twice in one list is one turn
                continue
            seen.add(message.id)
            name = message.name if isinstance(message.name, str) and message.name.strip(" ") else None
            turns.append((message.id, turn[0], turn[1], message.type, name))
        if not turns:
            return
        thread_id = thread.thread_id
        with self._lock:
            known = set(self._persisted.get(thread_id, ()))
        fresh = [t for t in turns if t[0] not in known and not _stored(thread, t[0])]
        if fresh:
            self._write(thread, fresh)
        with self._lock:
            # Only ids still in the state can come back; the store answers for older ones.
            self._persisted[thread_id] = {t[0] for t in turns}
            self._persisted.move_to_end(thread_id)
            while len(self._persisted) > _MAX_TRACKED_THREADS:
                self._persisted.popitem(last=False)

    @staticmethod
    def _write(thread: MemoryThread, turns: list[tuple[str, str, str, str, str | None]]) -> None:
        payload = [
            {
                "id": palimpsest_message_id(thread.thread_id, lc_id),
                "role": role,
                "content": text,
                "name": name[:MAX_SPEAKER_LENGTH] if name else None,  # a participant's name: the speaker
                "metadata": {MESSAGE_METADATA_KEY: {"message_id": lc_id, "message_type": kind}},
            }
            for lc_id, role, text, kind, name in turns
        ]
        try:
            thread.add_messages(payload)
            return
        except DuplicateIdError:
            pass  # another writer got there first with some of them, or took our sequence slot
        for one, (lc_id, *_rest) in zip(payload, turns):
            for _attempt in range(_WRITE_ATTEMPTS):
                if _stored(thread, lc_id):
                    break
                try:
                    thread.add_messages([one])
                    break
                except DuplicateIdError:
                    continue
            else:
                log.warning(
                    "turn %s of thread %s could not be persisted (duplicate id)", lc_id, thread.thread_id
                )


def _turn(message: BaseMessage) -> tuple[str, str] | None:
    """(role, text) of a turn palimpsest keeps, else ``None``."""
    role = message_role(message)
    if role is None:
        return None
    text = message_text(message).strip()
    return (role, text) if text else None


def _stored(thread: MemoryThread, langchain_id: str) -> bool:
    try:
        thread.get_message(palimpsest_message_id(thread.thread_id, langchain_id))
    except MessageNotFoundError:
        return False
    return True


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer.")
    return value
