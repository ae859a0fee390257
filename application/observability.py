"""Application layer: observability events and the listeners that receive them.

A listener registered with :func:`register_event_listeners` hears the events emitted in its
context: a started/completed pair around every public operation of ``AgentMemory`` and
``MemoryThread`` (and of their ``_async`` twins), around every generation of the
OpenAI-compatible chat adapter and every ``embed`` call of the shipped embedders::

    from palimpsest.application import GenericEventListener, ThreadCompletedEvent, register_event_listeners

    with register_event_listeners([GenericEventListener(ThreadCompletedEvent, print)]):
        thread.add_messages([...])

Registration is context-local (a ``ContextVar``): it holds in this thread or task, and nested
registrations add to the outer ones. ``asyncio.to_thread`` copies the context, so the ``_async``
twins' events reach the listeners of the awaiting task; a background extraction job queued while
listeners are registered runs with them (its model events reach them even after the ``with``
block ended); a thread the caller starts itself (``threading.Thread``) starts with none.

Events are built only while a listener that subscribes to their class is registered: without
one, an operation costs one context-variable read. Events are frozen dataclasses with
keyword-only fields. Their sensitive fields (arguments, results, prompts, answers, texts,
vectors) and identifier values (thread, user and agent ids) are kept as given, so a listener can
read them, but
``model_dump``, ``model_dump_json`` and ``to_observability_dict`` replace them with
``"[REDACTED]"`` unless asked for raw output (``mask_sensitive_information=False``).
``argument_summary`` says which arguments a call was given, never their values.

A listener that raises is logged and skipped; the operation goes on. Operations a listener runs
from ``on_event`` emit nothing to the listeners (no listener hears itself).
"""

from __future__ import annotations

import abc
import contextlib
import enum
import functools
import inspect
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import UTC, date, datetime
from typing import Any, ClassVar, Final, TypeVar

from palimpsest.domain.errors import ArgumentTypeError
from palimpsest.domain.sentinel import NotSetType

__all__ = [
    "REDACTED",
    "AgentMemoryCompletedEvent",
    "AgentMemoryStartedEvent",
    "ApiOperationCompletedEvent",
    "ApiOperationStartedEvent",
    "EmbedderCompletedEvent",
    "EmbedderStartedEvent",
    "Event",
    "EventListener",
    "GenericEventListener",
    "LlmGeneration",
    "LlmGenerationCompletedEvent",
    "LlmGenerationStartedEvent",
    "OperationKind",
    "ThreadCompletedEvent",
    "ThreadStartedEvent",
    "active_event_listeners",
    "emit_event",
    "is_listened",
    "observed_embedder",
    "observed_operations",
    "register_event_listeners",
    "restored_event_listeners",
    "start_llm_generation",
]

log = logging.getLogger("palimpsest.observability")

REDACTED: Final = "[REDACTED]"
"""What a masked field reads in a dumped event."""

C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., Any])


# --- events -----------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _event_id() -> str:
    return f"ev_{uuid.uuid4()}"


def _jsonable(value: Any) -> Any:
    """``value`` as JSON-compatible data (raw dumps of arguments and results hold any object)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Event):
        return value.to_observability_dict(mask_sensitive_information=False)
    if callable(getattr(value, "model_dump", None)) and not isinstance(value, type):  # a pydantic model
        try:
            return _jsonable(value.model_dump(mode="json"))
        except Exception:  # noqa: BLE001 - a model that cannot dump itself is shown by its repr
            return repr(value)
    if is_dataclass(value) and not isinstance(value, type):
        try:
            return _jsonable(asdict(value))
        except TypeError:  # a field that cannot be copied
            return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _jsonable(value.tolist())
    return repr(value)


@dataclass(frozen=True, kw_only=True)
class Event:
    """One observation: what happened (``component``, ``event_name``), when (UTC ISO-8601
    ``timestamp``), its ``event_id``, and free ``metadata``. A frozen dataclass whose fields are
    keyword-only (an unknown one is a ``TypeError``); subclass it for events of your own.

    Subclasses list their sensitive fields in ``sensitive_fields`` and the fields holding
    identifiers in ``identifier_fields``: both are masked in dumps unless
    ``mask_sensitive_information=False``; ``repr`` and attribute access give raw values."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset()
    identifier_fields: ClassVar[frozenset[str]] = frozenset()

    event_id: str = field(default_factory=_event_id)
    timestamp: str = field(default_factory=_now)
    component: str
    event_name: str
    metadata: dict[str, Any] | None = None

    def _masked(self, data: dict[str, Any]) -> dict[str, Any]:
        for name in self.sensitive_fields | self.identifier_fields:
            if data.get(name) is not None:
                data[name] = REDACTED
        return data

    def model_dump(self, *, mask_sensitive_information: bool = True, mode: str = "python") -> dict[str, Any]:
        """The event's fields as a dict (``mode="json"``: JSON-compatible values, as
        :meth:`to_observability_dict`); sensitive and identifier values are ``"[REDACTED]"``
        unless ``mask_sensitive_information=False``."""
        if mode == "json":
            return self.to_observability_dict(mask_sensitive_information=mask_sensitive_information)
        if mode != "python":
            raise ArgumentTypeError("mode must be 'python' or 'json'.")
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return self._masked(data) if mask_sensitive_information else data

    def to_observability_dict(self, *, mask_sensitive_information: bool = True) -> dict[str, Any]:
        """The event as JSON-compatible data (any object in a raw field becomes its ``repr``),
        masked as :meth:`model_dump` says."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if mask_sensitive_information:
            data = self._masked(data)
        return {name: _jsonable(value) for name, value in data.items()}

    def model_dump_json(self, *, mask_sensitive_information: bool = True, indent: int | None = None) -> str:
        """:meth:`to_observability_dict` as JSON text."""
        return json.dumps(self.to_observability_dict(mask_sensitive_information=mask_sensitive_information), indent=indent)


class OperationKind(str, enum.Enum):
    """What an operation does to the stored data (from its name: ``add*``, ``create_thread``
    and ``link_records`` create; ``get*``, ``list*``, ``search`` and waits read; ``update*``
    update; ``delete*`` delete)."""

    CREATE = "create"
    READ = "read"
    UPDATE = "update"
    DELETE = "delete"
    UNKNOWN = "unknown"


_KIND_BY_NAME: Final = {
    "create_thread": OperationKind.CREATE,
    "link_records": OperationKind.CREATE,
    "search": OperationKind.READ,
    "wait_for_memory_extraction": OperationKind.READ,
    # palimpsest's own operations
    "pending_extractions": OperationKind.READ,
    "failed_extractions": OperationKind.READ,
    "retry_failed_extractions": OperationKind.UPDATE,
    "reembed": OperationKind.UPDATE,
    "embed_waiting": OperationKind.UPDATE,
    "purge_expired": OperationKind.DELETE,
}
_KIND_BY_PREFIX: Final = (
    ("add", OperationKind.CREATE),
    ("get", OperationKind.READ),
    ("list", OperationKind.READ),
    ("update", OperationKind.UPDATE),
    ("delete", OperationKind.DELETE),
)


def operation_kind(method: str) -> OperationKind:
    """The :class:`OperationKind` of a public operation, by its name."""
    kind = _KIND_BY_NAME.get(method)
    if kind is not None:
        return kind
    for prefix, prefixed_kind in _KIND_BY_PREFIX:
        if method == prefix or method.startswith(prefix + "_"):
            return prefixed_kind
    return OperationKind.UNKNOWN


@dataclass(frozen=True, kw_only=True)
class ApiOperationStartedEvent(Event):
    """An operation began: which (``api_class``, ``concrete_class``, ``method``,
    ``operation_kind``), its ``arguments`` (sensitive) and which were given (``argument_summary``)."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"arguments"})

    api_class: str
    concrete_class: str
    method: str
    operation_kind: OperationKind = OperationKind.UNKNOWN
    arguments: dict[str, Any] | None = None
    argument_summary: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ApiOperationCompletedEvent(Event):
    """An operation ended (``success``, else ``error_type``), with its ``result`` (sensitive)
    and a ``result_summary``; ``started_event_id`` names its started event."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"result"})

    started_event_id: str
    api_class: str
    concrete_class: str
    method: str
    operation_kind: OperationKind = OperationKind.UNKNOWN
    success: bool
    result: Any = None
    result_summary: dict[str, Any] | None = None
    error_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class _AgentMemoryOperation:
    """What an ``AgentMemory`` operation's started and completed events share."""

    component: str = "agent_memory"
    api_class: str = "AgentMemory"


@dataclass(frozen=True, kw_only=True)
class AgentMemoryStartedEvent(_AgentMemoryOperation, ApiOperationStartedEvent):
    """An ``AgentMemory`` operation began (``component`` ``"agent_memory"``)."""


@dataclass(frozen=True, kw_only=True)
class AgentMemoryCompletedEvent(_AgentMemoryOperation, ApiOperationCompletedEvent):
    """An ``AgentMemory`` operation ended."""


@dataclass(frozen=True, kw_only=True)
class _ThreadOperation:
    """What a ``MemoryThread`` operation's started and completed events share: the thread's ids."""

    identifier_fields: ClassVar[frozenset[str]] = frozenset({"thread_id", "user_id", "agent_id"})

    component: str = "thread"
    api_class: str = "MemoryThread"
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ThreadStartedEvent(_ThreadOperation, ApiOperationStartedEvent):
    """A ``MemoryThread`` operation began (``component`` ``"thread"``), with the thread's ids."""


@dataclass(frozen=True, kw_only=True)
class ThreadCompletedEvent(_ThreadOperation, ApiOperationCompletedEvent):
    """A ``MemoryThread`` operation ended, with the thread's ids."""


@dataclass(frozen=True, kw_only=True)
class _LlmGeneration:
    """What a chat model call's started and completed events share: the model and its settings."""

    component: str = "llm"
    api_class: str = "ChatModel"
    method: str = "generate"
    model: str
    api_type: str
    llm_config: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class LlmGenerationStartedEvent(_LlmGeneration, ApiOperationStartedEvent):
    """A chat model was asked for an answer: its ``model``, ``api_type``, settings
    (``llm_config``, ``llm_generation_config``), the ``prompt`` messages (sensitive) and the
    JSON schema the answer must follow."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"arguments", "prompt"})

    event_name: str = "llm.generation.started"
    llm_generation_config: dict[str, Any] | None = None
    prompt: list[dict[str, Any]] | None = None
    response_json_schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class LlmGenerationCompletedEvent(_LlmGeneration, ApiOperationCompletedEvent):
    """A chat model answered (or failed): the answer's ``content`` (sensitive), its
    ``completion_id`` and token counts."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"result", "content"})

    event_name: str = "llm.generation.completed"
    content: str | None = None
    completion_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    total_tokens: int | None = None


@dataclass(frozen=True, kw_only=True)
class _Embedding:
    """What an embedder call's started and completed events share: the model. (Their
    ``input_count`` and ``is_query`` stay declared in each, in the reference's field order.)"""

    component: str = "embedder"
    api_class: str = "Embedder"
    method: str = "embed"
    model: str


@dataclass(frozen=True, kw_only=True)
class EmbedderStartedEvent(_Embedding, ApiOperationStartedEvent):
    """An embedder was given texts: ``model``, ``input_count``, ``text_lengths``, ``is_query``;
    the texts themselves are ``input`` (sensitive)."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"arguments", "input"})

    event_name: str = "embedder.started"
    input: list[str] | None = None
    input_count: int
    text_lengths: list[int] | None = None
    is_query: bool


@dataclass(frozen=True, kw_only=True)
class EmbedderCompletedEvent(_Embedding, ApiOperationCompletedEvent):
    """An embedder returned (or failed): ``vector_count``, ``embedding_dimension``; the vectors
    are ``embedding_vector`` (sensitive)."""

    sensitive_fields: ClassVar[frozenset[str]] = frozenset({"result", "embedding_vector"})

    event_name: str = "embedder.completed"
    input_count: int
    is_query: bool
    vector_count: int | None = None
    embedding_dimension: int | None = None
    embedding_vector: list[list[float]] | None = None


# --- listeners --------------------------------------------------------------------------------


class EventListener(abc.ABC):
    """Receives events. ``subscribed_event_types`` limits it to some event classes (their
    subclasses included); ``None``, the default, means every event."""

    @abc.abstractmethod
    def on_event(self, event: Event) -> None:
        """Called synchronously, in the emitting thread, once per event it subscribes to."""

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        return None


class GenericEventListener(EventListener):
    """Calls ``callback(event)`` for the events of ``event_type`` (a class or a sequence of
    classes; subclasses included)."""

    def __init__(self, event_type: type[Event] | Sequence[type[Event]], callback: Callable[[Event], object]) -> None:
        types = (event_type,) if isinstance(event_type, type) else tuple(event_type)
        if not types or not all(isinstance(t, type) and issubclass(t, Event) for t in types):
            raise ArgumentTypeError("event_type must be an Event class or a sequence of Event classes.")
        if not callable(callback):
            raise ArgumentTypeError("callback must be callable with one event.")
        self._types = types
        self._callback = callback

    def on_event(self, event: Event) -> None:
        self._callback(event)

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        return self._types

    def __repr__(self) -> str:
        return f"GenericEventListener({', '.join(t.__name__ for t in self._types)}, {self._callback!r})"


class _Registered:
    """A listener with its subscription read once, at registration."""

    __slots__ = ("listener", "types")

    def __init__(self, listener: EventListener) -> None:
        subscribed = listener.subscribed_event_types()
        if subscribed is not None:
            subscribed = tuple(subscribed)
            if not all(isinstance(t, type) and issubclass(t, Event) for t in subscribed):
                raise ArgumentTypeError(f"{listener!r}.subscribed_event_types() must return Event classes or None.")
        self.listener = listener
        self.types: tuple[type[Event], ...] | None = subscribed

    def wants(self, event_type: type[Event]) -> bool:
        return self.types is None or issubclass(event_type, self.types)


_LISTENERS: ContextVar[tuple[_Registered, ...]] = ContextVar("palimpsest_event_listeners", default=())
_DISPATCHING: ContextVar[bool] = ContextVar("palimpsest_event_dispatching", default=False)
_IN_OPERATION: ContextVar[bool] = ContextVar("palimpsest_in_observed_operation", default=False)


@contextlib.contextmanager
def register_event_listeners(listeners: Sequence[EventListener]) -> Iterator[list[EventListener]]:
    """Register ``listeners`` in this context for the ``with`` block; yields every listener
    active inside it (the outer registrations' first). Nested registrations add to the outer."""
    if isinstance(listeners, EventListener) or not isinstance(listeners, Sequence):
        raise ArgumentTypeError("register_event_listeners() takes a sequence of EventListener objects.")
    for listener in listeners:
        if not isinstance(listener, EventListener):
            raise ArgumentTypeError(f"{listener!r} is not an EventListener.")
    registered = tuple(_Registered(listener) for listener in listeners)
    token = _LISTENERS.set(_LISTENERS.get() + registered)
    try:
        yield active_event_listeners()
    finally:
        _LISTENERS.reset(token)


def active_event_listeners() -> list[EventListener]:
    """The listeners registered in this context, in registration order."""
    return [entry.listener for entry in _LISTENERS.get()]


def is_listened(*event_types: type[Event]) -> bool:
    """Whether a listener registered in this context subscribes to one of ``event_types``
    (cheap when none is registered: build events only when this is true)."""
    registered = _LISTENERS.get()
    if not registered or _DISPATCHING.get():
        return False
    return any(entry.wants(t) for entry in registered for t in event_types)


def emit_event(event: Event) -> None:
    """Hand ``event`` to the listeners of this context that subscribe to it, in registration
    order. A listener that raises is logged and skipped."""
    if not isinstance(event, Event):
        raise ArgumentTypeError("emit_event() takes an Event.")
    registered = _LISTENERS.get()
    if not registered or _DISPATCHING.get():
        return
    event_type = type(event)
    token = _DISPATCHING.set(True)
    try:
        for entry in registered:
            if not entry.wants(event_type):
                continue
            try:
                entry.listener.on_event(event)
            except Exception as exc:  # a listener never breaks the operation
                log.warning("event listener %r failed on %s: %r", entry.listener, event.event_name, exc)
                log.debug("event listener traceback", exc_info=True)
    finally:
        _DISPATCHING.reset(token)


def captured_event_listeners() -> tuple[_Registered, ...] | None:
    """The listeners of this context, to hand to work that runs later in another thread
    (``None`` when there are none)."""
    return _LISTENERS.get() or None


@contextlib.contextmanager
def restored_event_listeners(captured: tuple[_Registered, ...] | None) -> Iterator[None]:
    """Run the block with the listeners :func:`captured_event_listeners` returned (nothing to
    do for ``None``)."""
    if captured is None:
        yield
        return
    token = _LISTENERS.set(captured)
    try:
        yield
    finally:
        _LISTENERS.reset(token)


# --- summaries --------------------------------------------------------------------------------


def _argument_summary(value: Any, provided: bool) -> dict[str, Any]:
    summary: dict[str, Any] = {"is_provided": provided}
    if provided and isinstance(value, (list, tuple)):
        summary["count"] = len(value)
    return summary


def _result_summary(result: Any) -> dict[str, Any]:
    if result is None:
        return {}
    if isinstance(result, (list, tuple)):
        return {"result_count": len(result)}
    if isinstance(result, int) and not isinstance(result, bool):
        return {"result_count": result}
    return {"result_type": type(result).__name__}


# --- the facades' operations ------------------------------------------------------------------


_OBSERVED_AS: Final = "__palimpsest_observed_as__"
"""The attribute naming the component a method was wrapped for."""

_FACADE_EVENTS: Final[dict[str, tuple[type[ApiOperationStartedEvent], type[ApiOperationCompletedEvent]]]] = {
    "agent_memory": (AgentMemoryStartedEvent, AgentMemoryCompletedEvent),
    "thread": (ThreadStartedEvent, ThreadCompletedEvent),
}


def _identity(component: str, instance: Any) -> dict[str, Any]:
    if component != "thread":
        return {}
    return {
        "thread_id": getattr(instance, "thread_id", None),
        "user_id": getattr(instance, "user_id", None),
        "agent_id": getattr(instance, "agent_id", None),
    }


def _observed_method(component: str, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    started_type, completed_type = _FACADE_EVENTS[component]
    kind = operation_kind(name)
    parameters = list(inspect.signature(method).parameters.values())[1:]  # after self
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    named = [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @functools.wraps(method)
    def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        registered = _LISTENERS.get()
        if (
            not registered
            or _IN_OPERATION.get()
            or _DISPATCHING.get()
            or not any(entry.wants(started_type) or entry.wants(completed_type) for entry in registered)
        ):
            return method(self, *args, **kwargs)  # unobserved, or called by an observed operation
        arguments = dict(zip(positional, args))  # surplus positional arguments: the call raises below
        arguments.update(kwargs)
        summary = {
            key: _argument_summary(arguments.get(key), key in arguments and not isinstance(arguments[key], NotSetType))
            for key in named
        }
        for key in kwargs.keys() - summary.keys():  # into **kwargs (the facades reject them)
            summary[key] = _argument_summary(kwargs[key], True)
        identity = _identity(component, self)
        common = {"concrete_class": type(self).__name__, "method": name, "operation_kind": kind, **identity}
        started_id = _event_id()
        emit_event(
            started_type(
                event_id=f"{started_id}.started",
                event_name=f"{component}.{name}.started",
                arguments=arguments,
                argument_summary=summary,
                **common,
            )
        )
        operation = _IN_OPERATION.set(True)
        try:
            result = method(self, *args, **kwargs)
        except BaseException as exc:
            _IN_OPERATION.reset(operation)
            emit_event(
                completed_type(
                    event_id=f"{started_id}.completed",
                    event_name=f"{component}.{name}.completed",
                    started_event_id=f"{started_id}.started",
                    success=False,
                    error_type=type(exc).__name__,
                    **common,
                )
            )
            raise
        _IN_OPERATION.reset(operation)
        emit_event(
            completed_type(
                event_id=f"{started_id}.completed",
                event_name=f"{component}.{name}.completed",
                started_event_id=f"{started_id}.started",
                success=True,
                result=result,
                result_summary=_result_summary(result),
                **common,
            )
        )
        return result

    setattr(observed, _OBSERVED_AS, component)
    return observed


def observed_operations(component: str) -> Callable[[C], C]:
    """A class decorator: every public method of the class, inherited ones included (not
    properties, not coroutine functions, not names starting with ``_``), emits a started and a
    completed event around each call, of ``component`` ``"agent_memory"`` or ``"thread"``.

    Put it below ``with_async_twins`` (nearer the class) so that the twins call the observed
    methods: ``asyncio.to_thread`` copies the context, so their events reach the caller's
    listeners."""
    if component not in _FACADE_EVENTS:
        raise ValueError(f"component must be one of {sorted(_FACADE_EVENTS)}.")

    def decorate(cls: C) -> C:
        for name in dir(cls):
            member = inspect.getattr_static(cls, name)
            if name.startswith("_") or not inspect.isfunction(member) or inspect.iscoroutinefunction(member):
                continue
            observed_as = getattr(member, _OBSERVED_AS, None)
            if observed_as == component:
                continue  # inherited from a class decorated alike
            original = member.__wrapped__ if observed_as is not None else member  # type: ignore[attr-defined]
            setattr(cls, name, _observed_method(component, name, original))
        return cls

    return decorate


# --- the model adapters' events ---------------------------------------------------------------


def _model_name(embedder: Any) -> str:
    """The embedder's model name, read without a model call (``model_id`` may need one)."""
    model = getattr(embedder, "model", None)
    return model if isinstance(model, str) else str(embedder.model_id)


def observed_embedder(embed: F) -> F:
    """A decorator of an embedder's ``embed(texts, *, is_query=False)``: an
    :class:`EmbedderStartedEvent` and an :class:`EmbedderCompletedEvent` around each call."""

    @functools.wraps(embed)
    def observed(self: Any, texts: Sequence[str], *, is_query: bool = False) -> Any:
        if not is_listened(EmbedderStartedEvent, EmbedderCompletedEvent):
            return embed(self, texts, is_query=is_query)
        items = list(texts) if not isinstance(texts, str) else [texts]
        strings = [t for t in items if isinstance(t, str)]
        common: dict[str, Any] = {
            "concrete_class": type(self).__name__,
            "model": _model_name(self),
            "input_count": len(items),
            "is_query": bool(is_query),
        }
        started_id = _event_id()
        emit_event(
            EmbedderStartedEvent(
                event_id=f"{started_id}.started",
                input=strings,
                text_lengths=[len(t) for t in strings],
                argument_summary={"texts": {"is_provided": True, "count": len(items)}, "is_query": {"is_provided": True}},
                **common,
            )
        )
        try:
            vectors = embed(self, texts, is_query=is_query)
        except BaseException as exc:
            emit_event(
                EmbedderCompletedEvent(
                    event_id=f"{started_id}.completed",
                    started_event_id=f"{started_id}.started",
                    success=False,
                    error_type=type(exc).__name__,
                    **common,
                )
            )
            raise
        rows = [[float(x) for x in vector] for vector in vectors]
        emit_event(
            EmbedderCompletedEvent(
                event_id=f"{started_id}.completed",
                started_event_id=f"{started_id}.started",
                success=True,
                vector_count=len(rows),
                embedding_dimension=len(rows[0]) if rows else None,
                embedding_vector=rows,
                result_summary={"result_count": len(rows)},
                **common,
            )
        )
        return vectors

    return observed  # type: ignore[return-value]


class LlmGeneration:
    """One chat-model generation being observed: made by :func:`start_llm_generation` (which
    emits the started event); :meth:`completed` or :meth:`failed` emits the completed one."""

    __slots__ = ("_common", "_started_id")

    def __init__(self, started_id: str, common: dict[str, Any]) -> None:
        self._started_id = started_id
        self._common = common

    def completed(
        self,
        *,
        content: str | None,
        completion_id: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
    ) -> None:
        emit_event(
            LlmGenerationCompletedEvent(
                event_id=f"{self._started_id}.completed",
                started_event_id=f"{self._started_id}.started",
                success=True,
                content=content,
                completion_id=completion_id,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=total_tokens,
                result_summary={"content_length": len(content or "")},
                **self._common,
            )
        )

    def failed(self, exc: BaseException) -> None:
        emit_event(
            LlmGenerationCompletedEvent(
                event_id=f"{self._started_id}.completed",
                started_event_id=f"{self._started_id}.started",
                success=False,
                error_type=type(exc).__name__,
                **self._common,
            )
        )


def start_llm_generation(
    *,
    concrete_class: str,
    model: str,
    api_type: str,
    prompt: list[dict[str, Any]],
    response_json_schema: dict[str, Any] | None = None,
    llm_config: dict[str, Any] | None = None,
    llm_generation_config: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> LlmGeneration | None:
    """Emit an :class:`LlmGenerationStartedEvent` and return the generation to complete, or
    ``None`` (nothing built) when no listener in this context wants LLM events."""
    if not is_listened(LlmGenerationStartedEvent, LlmGenerationCompletedEvent):
        return None
    common: dict[str, Any] = {
        "concrete_class": concrete_class,
        "model": model,
        "api_type": api_type,
        "llm_config": llm_config,
        "metadata": metadata,
    }
    started_id = _event_id()
    emit_event(
        LlmGenerationStartedEvent(
            event_id=f"{started_id}.started",
            prompt=prompt,
            response_json_schema=response_json_schema,
            llm_generation_config=llm_generation_config,
            argument_summary={"prompt": {"is_provided": True, "count": len(prompt)}},
            **common,
        )
    )
    return LlmGeneration(started_id, common)
