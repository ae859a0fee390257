"""Adapters layer (LangGraph): ``ShortTermMemoryMiddleware``, short-term memory for ``create_agent``.

The middleware keeps a LangGraph conversation in a palimpsest thread and compacts the agent's
state with a context card:

* **The thread holds what the conversation holds** (:mod:`.turns`). In ``before_model`` and at
  the end of the turn (``after_agent``, after every ``after_model`` hook of any middleware), the
  thread is brought in line with the state: new user and assistant turns (``HumanMessage`` /
  ``AIMessage`` with text; tool results, system messages and the card are skipped) are appended,
  each once (a palimpsest id derived from the thread and the LangChain ``id``, kept in its
  metadata as ``$langgraph.message_id``), whoever re-sends them: the returned list again, several
  workers, a restarted process, or a stateless server whose requests carry the whole history
  without ids (recognised by role, text and position, so a user who says "ok" twice is stored
  twice). A turn another middleware removed (``RemoveMessage``, ``REMOVE_ALL_MESSAGES``) is
  deleted from the thread; one it edited (same id, new text) is updated. The model's reply is
  stored at the end of the turn, so a reply an ``after_model`` hook removes is never stored.
* **Measurement.** Triggers measure the prompt the model would get, the card included:
  ``compaction_token_trigger`` (tokens by ``token_counter``, LangChain's
  ``count_tokens_approximately`` by default), ``compaction_message_trigger`` (the conversation's
  messages, the card not counted) and ``compaction_trigger`` (any callable of the messages and
  their token count); any one fires. A compaction never grows what fired it: the card drops its
  lowest-ranked records, then its topics, until card and tail fit under the token trigger and
  under the prompt they replace; when even that does not shrink the prompt's tokens, a token or
  custom trigger leaves the state as it is (a message trigger alone still compacts: messages
  always shrink).
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
``config["configurable"]["thread_id"]``, as LangGraph checkpointers do, its user and agent given
here or by the run (``configurable`` or the runtime ``context``: see
:class:`~palimpsest.adapters.langgraph.threads.ThreadResolver`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, Final, Literal, NotRequired

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import AgentState, PrivateStateAttr
from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from palimpsest.application import AgentMemory, ContextCard, MemoryExtractionConfig, MemoryThread
from palimpsest.domain.errors import ConfigurationError

from .messages import is_context_card_message, make_context_card_message, safe_tail_start
from .threads import ThreadResolver, current_run_config, run_context
from .tools import make_memory_tools
from .turns import TURNS_KEY, TurnEntry, sync_turns, turn_of

__all__ = ["CompactionTrigger", "ShortTermMemoryMiddleware", "ShortTermMemoryState", "TokenCounter"]

log = logging.getLogger("palimpsest")

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a list of messages."""

CompactionTrigger = Callable[[Sequence[BaseMessage], int], bool]
"""Decides from the prompt's messages (the card included) and their token count whether to compact now."""

EMPTY_CARD: Final = "<context_card>\n</context_card>"
_RESERVED_CARD_OPTIONS: Final = frozenset({"except_last_messages", "max_recent_messages"})


class ShortTermMemoryState(AgentState[Any]):
    """The agent state with the middleware's private channel (see :mod:`.turns`)."""

    palimpsest_turns: NotRequired[Annotated[dict[str, TurnEntry], PrivateStateAttr]]


class ShortTermMemoryMiddleware(AgentMiddleware[ShortTermMemoryState, Any, Any]):
    """Persist an agent's turns into palimpsest and compact its state with a context card.

    Args:
        memory: the client; optional when ``thread`` is given.
        thread: a thread handle to write to, or ``thread_id`` (created on first use with
            ``user_id``/``agent_id``, ``thread_metadata`` and ``memory_extraction_config``);
            neither: the run's (``configurable`` or runtime ``context`` ``thread_id``).
        compaction_token_trigger: compact when the prompt's messages, the card included, have at
            least this many tokens (by ``token_counter``); the card is fitted under it.
        compaction_message_trigger: compact when the conversation has at least this many
            messages, the card not counted (must exceed ``except_last_messages``).
        compaction_trigger: compact when ``compaction_trigger(messages, tokens)`` is true (the
            prompt's messages, the card included, and their tokens).
        except_last_messages: the raw tail kept after compaction (at least 1).
        max_recent_messages: ``0`` for the external-tail pattern (card + raw tail), or equal to
            ``except_last_messages`` for the self-contained card.
        context_card_options: further ``get_context_card`` arguments (``max_relevant_results``,
            ``min_relevant_results_by_type``, ``token_budget``, ...).
        card_role: ``"user"`` (a ``HumanMessage``, as in the seed pattern) or ``"system"``.
        memory_tools: also give the agent ``search_memory`` and ``save_memory`` (see
            :func:`~palimpsest.adapters.langgraph.make_memory_tools`) on the same thread.
    """

    state_schema = ShortTermMemoryState

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
        self.tools: list[BaseTool] = []
        if memory_tools:
            if memory is None:
                raise ConfigurationError("memory_tools=True needs the AgentMemory (memory=...).")
            self.tools = make_memory_tools(
                memory, thread if thread is not None else thread_id, user_id=user_id, agent_id=agent_id
            )

    # -- LangChain hooks ---------------------------------------------------------------------

    def before_model(self, state: ShortTermMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Bring the thread in line with the state (new turns, removals, edits), then compact the
        state if a trigger fires."""
        return self._before_model(state, current_run_config(), run_context(runtime))

    async def abefore_model(self, state: ShortTermMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model` (the store work runs in a worker thread)."""
        return await asyncio.to_thread(self._before_model, state, current_run_config(), run_context(runtime))

    def after_agent(self, state: ShortTermMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """At the end of the turn, after every ``after_model`` hook: store what the conversation
        finally holds (the model's last reply included)."""
        return self._after_agent(state, current_run_config(), run_context(runtime))

    async def aafter_agent(self, state: ShortTermMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        return await asyncio.to_thread(self._after_agent, state, current_run_config(), run_context(runtime))

    # -- public helpers ----------------------------------------------------------------------

    def thread_for(
        self, config: Mapping[str, Any] | None = None, context: Any = None
    ) -> MemoryThread:
        """The palimpsest thread of a run (``config`` as passed to ``invoke``, ``context`` its
        runtime context)."""
        return self._resolver.resolve(config, context)

    @property
    def self_contained(self) -> bool:
        """True for the self-contained card pattern, False for card + external raw tail."""
        return self._self_contained

    # -- work --------------------------------------------------------------------------------

    def _before_model(
        self, state: Mapping[str, Any], config: Mapping[str, Any], context: Any = None
    ) -> dict[str, Any] | None:
        thread = self._resolver.resolve(config, context)
        messages = list(state.get("messages", ()))
        organic = [m for m in messages if not is_context_card_message(m)]
        synced, copies = sync_turns(thread, organic, state.get(TURNS_KEY))
        if copies:  # re-sent copies of turns the state holds: the state keeps each turn once
            gone = set(copies)
            messages = [m for m in messages if m.id not in gone]
            organic = [m for m in organic if m.id not in gone]
        fired = self._should_compact(messages, organic)
        update = None if fired is None else self._compact(thread, organic, *fired)
        if update is None:
            if copies:
                return {"messages": [RemoveMessage(id=sid) for sid in copies], TURNS_KEY: synced}
            return {TURNS_KEY: synced} if synced != state.get(TURNS_KEY) else None
        kept = {m.id for m in update["messages"][2:]}
        update[TURNS_KEY] = {sid: entry for sid, entry in synced.items() if sid in kept}
        return update

    def _after_agent(
        self, state: Mapping[str, Any], config: Mapping[str, Any], context: Any = None
    ) -> dict[str, Any] | None:
        thread = self._resolver.resolve(config, context)
        organic = [m for m in state.get("messages", ()) if not is_context_card_message(m)]
        synced, copies = sync_turns(thread, organic, state.get(TURNS_KEY))
        if copies:
            return {"messages": [RemoveMessage(id=sid) for sid in copies], TURNS_KEY: synced}
        return {TURNS_KEY: synced} if synced != state.get(TURNS_KEY) else None

    def _should_compact(
        self, messages: Sequence[BaseMessage], organic: Sequence[BaseMessage]
    ) -> tuple[int, bool] | None:
        """``(the prompt's tokens, the card included; whether a token or custom trigger fired)``
        when a trigger fires, else ``None``."""
        by_count = self._message_trigger is not None and len(organic) >= self._message_trigger
        if self._token_trigger is None and self._custom_trigger is None:
            return (int(self._count_tokens(messages)), False) if by_count else None
        tokens = int(self._count_tokens(messages))
        by_tokens = (self._token_trigger is not None and tokens >= self._token_trigger) or (
            self._custom_trigger is not None and bool(self._custom_trigger(messages, tokens))
        )
        return (tokens, by_tokens) if by_count or by_tokens else None

    def _compact(
        self, thread: MemoryThread, organic: list[BaseMessage], before: int, by_tokens: bool
    ) -> dict[str, Any] | None:
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
            )
            if not card.content:
                return None
            tail: list[BaseMessage] = []
        else:
            start = safe_tail_start(organic, self._keep)
            if start == 0:
                return None  # the tail is the whole conversation: nothing to compact
            tail = organic[start:]
            # The card must leave out exactly the turns the raw tail repeats.
            repeated = sum(1 for m in tail if _turn(m) is not None)
            card = thread.get_context_card(
                except_last_messages=repeated, max_recent_messages=0, **self._card_options
            )
        message = self._fit(thread, card, tail, before, by_tokens)
        if message is None:
            log.debug("thread %s: no card makes the prompt smaller than %d tokens; not compacted", thread.thread_id, before)
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), message, *tail]}

    def _fit(
        self, thread: MemoryThread, card: ContextCard, tail: list[BaseMessage], before: int, by_tokens: bool
    ) -> BaseMessage | None:
        """The card message, its relevant records (lowest ranked first), then its topics left
        out until card and tail fit under the token trigger and under ``before`` tokens.
        ``None`` when a token (or custom) trigger fired and even the smallest card leaves a
        prompt no smaller than ``before``: such a compaction would grow what it measures. (A
        message-count trigger alone measures messages, which a compaction always reduces.)"""
        limits = ([before] if by_tokens else []) + ([self._token_trigger] if self._token_trigger else [])
        target = min(limits) - 1 if limits else None

        def message_of(candidate: ContextCard) -> BaseMessage:
            content = candidate.content or EMPTY_CARD
            return make_context_card_message(content, thread_id=thread.thread_id, role=self._card_role)

        def build(candidate: ContextCard) -> tuple[BaseMessage, int]:
            message = message_of(candidate)
            return message, int(self._count_tokens([message, *tail]))

        if target is None:
            return message_of(card)
        message, tokens = build(card)
        while tokens > target and card.relevant_results:
            card = replace(card, relevant_results=card.relevant_results[:-1])
            message, tokens = build(card)
        if tokens > target and card.topics:
            card = replace(card, topics=())
            message, tokens = build(card)
        return message if tokens < before or not by_tokens else None


_turn = turn_of


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer.")
    return value
