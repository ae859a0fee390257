"""Adapters layer (LangGraph): which palimpsest thread a LangGraph run writes to.

A middleware or a tool is bound to one palimpsest thread (a ``MemoryThread`` or a fixed
``thread_id``), or follows the run: the ``thread_id`` of the run's
``config["configurable"]`` (the key LangGraph checkpointers use), so one agent serves many
conversations. Unknown threads are created on first use with the configured user and agent;
when the resolver has none, they come from the run: ``configurable["user_id"]`` /
``["agent_id"]``, else the run's LangGraph runtime context (``create_agent(...,
context_schema=...)`` and ``invoke(..., context=...)``: a key or attribute ``user_id`` /
``agent_id``, and ``thread_id`` when the config has none). An existing thread owned by another
user or agent than the one asked for is refused, never silently reused.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from palimpsest.application import AgentMemory, MemoryExtractionConfig, MemoryThread
from palimpsest.domain.errors import (
    ConfigurationError,
    DuplicateIdError,
    InvalidScopeError,
    ThreadNotFoundError,
)

__all__ = ["ThreadResolver", "context_value", "current_run_config", "run_context"]

_MAX_CACHED_THREADS = 1024


def current_run_config() -> Mapping[str, Any]:
    """The ``RunnableConfig`` of the LangGraph run executing this code, or ``{}`` outside one."""
    try:
        from langgraph.config import get_config

        return get_config()
    except (RuntimeError, ImportError):
        return {}


def run_context(runtime: Any) -> Any:
    """The runtime context of a LangGraph ``Runtime`` or LangChain ``ToolRuntime`` (``None``
    without one)."""
    return getattr(runtime, "context", None) if runtime is not None else None


def context_value(context: Any, key: str) -> Any:
    """``key`` of a runtime context: a mapping's item or an object's attribute (``None`` when absent)."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


class ThreadResolver:
    """Finds (or creates) the palimpsest thread of a run; handles are cached per thread id."""

    def __init__(
        self,
        memory: AgentMemory | None,
        *,
        thread: MemoryThread | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_metadata: Mapping[str, Any] | None = None,
        memory_extraction_config: MemoryExtractionConfig | None = None,
    ) -> None:
        if thread is not None and not isinstance(thread, MemoryThread):
            raise ConfigurationError("thread must be a MemoryThread (use thread_id= for an id).")
        if thread is not None and thread_id is not None and thread_id != thread.thread_id:
            raise ConfigurationError("pass either thread or thread_id, not two different threads.")
        if thread is None and memory is None:
            raise ConfigurationError("pass the AgentMemory (memory=...) or a MemoryThread (thread=...).")
        if memory is not None and not isinstance(memory, AgentMemory):
            raise ConfigurationError("memory must be a palimpsest AgentMemory.")
        self._memory = memory
        self._fixed = thread
        self._thread_id = thread.thread_id if thread is not None else thread_id
        self._user_id = user_id
        self._agent_id = agent_id
        self._metadata = dict(thread_metadata) if thread_metadata is not None else None
        self._extraction = memory_extraction_config
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, MemoryThread] = OrderedDict()
        if thread is not None:
            self._check_owner(thread, user_id, agent_id)

    @property
    def fixed_thread_id(self) -> str | None:
        """The thread id this resolver is bound to, or ``None`` when it follows the run."""
        return self._thread_id

    def resolve(self, config: Mapping[str, Any] | None = None, context: Any = None) -> MemoryThread:
        """The thread for a run with ``config`` (the current run's config when omitted) and
        runtime ``context``."""
        if self._fixed is not None:
            return self._fixed
        configurable: Mapping[str, Any] = (config if config is not None else current_run_config()).get(
            "configurable"
        ) or {}

        def of_run(key: str) -> Any:
            value = configurable.get(key)
            return value if value is not None else context_value(context, key)

        thread_id = self._thread_id or of_run("thread_id")
        if not thread_id:
            raise ConfigurationError(
                "No palimpsest thread for this run: bind one (thread_id=... or thread=...) or invoke the "
                "agent with config={'configurable': {'thread_id': ...}}."
            )
        thread_id = str(thread_id)
        user_id = self._user_id if self._user_id is not None else of_run("user_id")
        agent_id = self._agent_id if self._agent_id is not None else of_run("agent_id")
        with self._lock:
            cached = self._cache.get(thread_id)
            if cached is not None:
                self._cache.move_to_end(thread_id)
        if cached is not None:
            self._check_owner(cached, user_id, agent_id)
            return cached
        thread = self._open(thread_id, user_id, agent_id)
        self._check_owner(thread, user_id, agent_id)
        with self._lock:
            self._cache[thread_id] = thread
            while len(self._cache) > _MAX_CACHED_THREADS:
                self._cache.popitem(last=False)
        return thread

    def _open(self, thread_id: str, user_id: str | None, agent_id: str | None) -> MemoryThread:
        memory = self._memory
        assert memory is not None  # guaranteed by __init__ when no thread is fixed
        try:
            return memory.get_thread(thread_id)
        except ThreadNotFoundError:
            pass
        options: dict[str, Any] = {}
        if self._metadata is not None:
            options["metadata"] = self._metadata
        if self._extraction is not None:
            options["memory_extraction_config"] = self._extraction
        try:
            return memory.create_thread(thread_id=thread_id, user_id=user_id, agent_id=agent_id, **options)
        except DuplicateIdError:  # another process created it meanwhile
            return memory.get_thread(thread_id)

    @staticmethod
    def _check_owner(thread: MemoryThread, user_id: str | None, agent_id: str | None) -> None:
        if user_id is not None and thread.user_id != user_id:
            raise InvalidScopeError(f"Thread {thread.thread_id!r} belongs to another user than {user_id!r}.")
        if agent_id is not None and thread.agent_id != agent_id:
            raise InvalidScopeError(
                f"Thread {thread.thread_id!r} belongs to another agent than {agent_id!r}."
            )
