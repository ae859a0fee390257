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

import base64
import hashlib
import html
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeAlias

import pydantic

from .chat import parse_json_object
from .errors import ModelOutputError, ModelUnavailableError
from .llm import JsonModel
from .usage import TokenUsage

__all__ = ["Answer", "ChatRequest", "FunctionChatModel", "LoopbackExtractionServer", "ScriptedChatModel"]

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


_NEWEST = re.compile(r"<newest_messages>(.*?)</newest_messages>", re.DOTALL)
_MESSAGE = re.compile(r"<message[^>]*>(.*?)</message>", re.DOTALL)


def _describe_data_url(url: str) -> str:
    """``"a <mime> image of <n> bytes"`` for a base64 ``data:`` URL (what the loopback server
    answers a caption request with)."""
    header, _, payload = url.partition(",")
    mime = header.removeprefix("data:").split(";")[0] or "unknown"
    try:
        size = len(base64.b64decode(payload, validate=True))
    except ValueError:
        return "an unreadable image"
    return f"a {mime} image of {size} bytes"


class LoopbackExtractionServer:
    """An OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks of extraction in
    other processes (``palimpsest worker --extractor openai`` with ``OPENAI_BASE_URL`` set to
    :attr:`base_url`): every chat request is answered, after ``delay`` seconds, with one fact
    per newest message of the extraction prompt (``"Fact: <its text>"``), and recorded in
    :attr:`calls` (the newest messages' texts of each request, in arrival order).

    A request whose user message carries ``image_url`` parts is a caption request: it is answered
    at once with ``"a <mime> image of <n> bytes"`` per image, and the images' ``data:`` URLs are
    recorded in :attr:`images`.

    Clear :attr:`open` to hold every request until it is set again (a model that hangs);
    :attr:`entered` is set when a request arrives. Nothing leaves the machine.

    It serves embeddings too (``/v1/embeddings``): each text's vector of :attr:`dimension`
    floats, its words hashed into buckets (the same text, the same vector; texts that share
    words are near), each text recorded in :attr:`embedded`. Set :attr:`embedding_status` to an
    HTTP error status (503) to have every embeddings request refused with it (an embedding
    server that is down), back to 200 to serve again.
    """

    def __init__(self, *, delay: float = 0.0, dimension: int = 32) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.delay = delay
        self.dimension = dimension
        self.embedding_status = 200
        self.embedded: list[str] = []
        """Every text an embeddings request that was answered carried, in arrival order."""
        self.calls: list[list[str]] = []
        self.images: list[str] = []
        """The ``data:`` URLs of the images caption requests carried, in arrival order."""
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = 200
                if self.path.rstrip("/").endswith("/embeddings"):
                    status, answer = server._embeddings(json.loads(raw or b"{}"))
                else:
                    answer = server._answer(json.loads(raw or b"{}"))
                data = json.dumps(answer).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the caller went away (a killed worker)
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def targets(self) -> list[str]:
        """Every newest message any request carried, once per request that carried it."""
        with self._lock:
            return [text for call in self.calls for text in call]

    def _embeddings(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        status = self.embedding_status
        if status != 200:
            return status, {"error": {"message": f"embedding server answers {status}", "type": "server_error"}}
        given = body.get("input", [])
        texts = [given] if isinstance(given, str) else [str(t) for t in given]
        with self._lock:
            self.embedded.extend(texts)
        data = [{"object": "embedding", "index": i, "embedding": self._vector(t)} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return 200, {"object": "list", "data": data, "model": str(body.get("model", "loopback")), "usage": usage}

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"\w+", text.lower()) or [text]:
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dimension] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector] if any(vector) else [1.0] + [0.0] * (self.dimension - 1)

    def _answer(self, body: Mapping[str, Any]) -> dict[str, Any]:
        images = [
            part["image_url"]["url"]
            for m in body.get("messages", [])
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for part in m["content"]
            if isinstance(part, Mapping) and part.get("type") == "image_url"
        ]
        if images:  # a caption request: describe each image by its type and size
            with self._lock:
                self.images.extend(images)
            return self._reply(str(body.get("model", "loopback")), "; ".join(_describe_data_url(u) for u in images))
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
        block = _NEWEST.search(prompt)
        texts = [html.unescape(t) for t in _MESSAGE.findall(block.group(1))] if block else []
        with self._lock:
            self.calls.append(texts)
        self.entered.set()
        self.open.wait()
        if self.delay:
            time.sleep(self.delay)
        content = json.dumps({"memories": [{"text": f"Fact: {t}", "record_type": "fact"} for t in texts]})
        return self._reply(str(body.get("model", "loopback")), content)

    @staticmethod
    def _reply(model: str, content: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.open.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
