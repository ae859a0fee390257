"""Adapters layer (OpenAI-compatible): in-process chat-model doubles for tests and offline demos.

:class:`FunctionChatModel` answers every ``complete_json`` call with a Python function of the
request (in the spirit of pydantic-ai's ``FunctionModel``); :class:`ScriptedChatModel` replays
prepared answers in order, optionally per operation. Both parse and validate answers exactly
like :class:`~palimpsest.adapters.openai.chat.OpenAIChatModel` (a string answer goes through the
same tolerant JSON reader, a schema violation raises ``ModelOutputError``), so the LLM
extractor, summariser, link resolver and reranker can be tested end to end without a socket. Token usage
is recorded as an estimate (4 characters per token), labelled as such by :attr:`usage_is_estimated`.
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pydantic

from .chat import parse_json_object
from .errors import ModelOutputError, ModelUnavailableError
from .llm import JsonModel
from .usage import TokenUsage

__all__ = ["Answer", "ChatRequest", "FunctionChatModel", "ScriptedChatModel"]

CHARS_PER_TOKEN = 4

Answer: TypeAlias = Mapping[str, Any] | str | pydantic.BaseModel | BaseException
"""What a scripted function returns: a JSON object, raw model text, a schema instance, or an
exception to raise (e.g. ``ModelUnavailableError`` to imitate an outage)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One ``complete_json`` call as the double saw it."""

    system: str
    user: str
    schema: type[pydantic.BaseModel]
    name: str

    @property
    def prompt(self) -> str:
        return f"{self.system}\n\n{self.user}"


def _estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


class FunctionChatModel(JsonModel):
    """A ``JsonModel`` whose answers come from ``function(request)``.

    Every request is kept in :attr:`requests` (so a test can read the prompts the adapters built)
    and counted in :attr:`usage`. Thread-safe: background extraction may call it from workers.
    """

    usage_is_estimated = True

    def __init__(self, function: Callable[[ChatRequest], Answer], *, usage: TokenUsage | None = None) -> None:
        if not callable(function):
            raise TypeError("FunctionChatModel needs a callable taking a ChatRequest.")
        self._function = function
        self._lock = threading.Lock()
        self.requests: list[ChatRequest] = []
        self.usage = usage if usage is not None else TokenUsage()

    def complete_json(
        self, system: str, user: str, schema: type[pydantic.BaseModel], *, name: str
    ) -> dict[str, Any]:
        request = ChatRequest(system=system, user=user, schema=schema, name=name)
        with self._lock:
            self.requests.append(request)
        answer = self._function(request)
        if isinstance(answer, BaseException):
            self.usage.record(name, prompt_tokens=_estimate(request.prompt))
            raise answer
        if isinstance(answer, pydantic.BaseModel):
            text = answer.model_dump_json()
        elif isinstance(answer, str):
            text = answer
        elif isinstance(answer, Mapping):
            text = json.dumps(dict(answer), default=str)
        else:
            raise TypeError(f"a scripted answer must be a mapping, a string or a model, not {type(answer).__name__}.")
        self.usage.record(name, prompt_tokens=_estimate(request.prompt), completion_tokens=_estimate(text))
        data = parse_json_object(text)
        try:
            return schema.model_validate(data).model_dump(mode="json")
        except pydantic.ValidationError as exc:
            raise ModelOutputError(
                f"{name}: the model's JSON does not match the expected schema: {exc.error_count()} error(s).",
                raw=text,
            ) from exc

    def requests_named(self, name: str) -> list[ChatRequest]:
        with self._lock:
            return [r for r in self.requests if r.name == name]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(requests={len(self.requests)})"


class ScriptedChatModel(FunctionChatModel):
    """Replays answers in order: one shared script, or one script per operation name
    (``"extract_memories"``, ``"summarise"``, ``"resolve_links"``, ``"rerank"``). A request with no answer left raises
    ``ModelUnavailableError`` (the application then behaves as with a model outage)."""

    def __init__(
        self,
        answers: Iterable[Answer] = (),
        *,
        by_operation: Mapping[str, Iterable[Answer]] | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        self._shared: deque[Answer] = deque(answers)
        self._named: dict[str, deque[Answer]] = {k: deque(v) for k, v in (by_operation or {}).items()}
        self._script_lock = threading.Lock()
        super().__init__(self._next, usage=usage)

    def _next(self, request: ChatRequest) -> Answer:
        with self._script_lock:
            queue = self._named.get(request.name)
            if queue:
                return queue.popleft()
            if self._shared:
                return self._shared.popleft()
        return ModelUnavailableError(f"{request.name}: the scripted chat model has no answer left.")

    @property
    def remaining(self) -> int:
        with self._script_lock:
            return len(self._shared) + sum(len(q) for q in self._named.values())

    def add(self, *answers: Answer, operation: str | None = None) -> None:
        """Append answers to the shared script or to one operation's script."""
        with self._script_lock:
            (self._named.setdefault(operation, deque()) if operation else self._shared).extend(answers)
