"""Adapters layer (OpenAI-compatible): ``OpenAIChatModel``, JSON-schema chat completions with retries, a prompt-only fallback and usage accounting."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable
from typing import Any, Final

import openai
import pydantic
from palimpsest.application.observability import start_llm_generation
from palimpsest.domain.errors import ConfigurationError

from ._transport import RetryPolicy, ensure_requests_allowed, log
from .errors import ModelOutputError
from .llm import JsonModel
from .usage import TokenUsage

__all__ = ["OpenAIChatModel", "parse_json_object"]

_THINK: Final = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_DANGLING_THINK_END: Final = re.compile(r"^.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_FENCE: Final = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_FORMAT_WORDS: Final = ("response_format", "json_schema", "structured output", "guided_json")

JSON_REMINDER: Final = (
    "\n\nReturn exactly one JSON object that matches the JSON schema below, and nothing else "
    "(no prose, no markdown).\nSchema:\n```json\n{schema}\n```"
)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer, tolerating ``<think>`` blocks and ```json fences.

    Raises :class:`ModelOutputError` when no JSON object can be read.
    """
    if not isinstance(text, str) or not text.strip():
        raise ModelOutputError("the model returned an empty answer.", raw=text if isinstance(text, str) else None)
    cleaned = _THINK.sub("", text)
    if re.search(r"</think(?:ing)?>", cleaned, re.IGNORECASE):  # the opening tag was in the prompt
        cleaned = _DANGLING_THINK_END.sub("", cleaned, count=1)
    candidates = [m.group(1) for m in _FENCE.finditer(cleaned)] + [cleaned]
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            value = json.loads(candidate)
        except ValueError:
            start, end = candidate.find("{"), candidate.rfind("}")
            if start < 0 or end <= start:
                continue
            try:
                value = json.loads(candidate[start : end + 1])
            except ValueError:
                continue
        if isinstance(value, dict):
            return value
    raise ModelOutputError("the model's answer is not a JSON object.", raw=text)


def _rejects_response_format(exc: openai.APIStatusError) -> bool:
    if exc.status_code not in (400, 415, 422, 501):
        return False
    text = f"{exc.message} {exc.body!r}".lower()
    return any(word in text for word in _FORMAT_WORDS)


class OpenAIChatModel(JsonModel):
    """JSON answers from an OpenAI-compatible chat-completions endpoint.

    ``complete_json`` sends ``response_format={"type": "json_schema", ...}``. When the server
    rejects that parameter (an HTTP 400/422 naming it), or ``structured_output=False`` was
    given, the schema is appended to the user message instead and the JSON is parsed out of
    the text. Either way the answer is validated with the given pydantic model.

    The SDK's own retries are disabled; 429, 5xx, timeouts and connection errors are retried
    here (``max_retries`` extra attempts, after the wait the server asks for in ``Retry-After``
    or ``retry-after-ms``, else exponential backoff with jitter), then raise
    :class:`~palimpsest.adapters.openai.errors.ModelUnavailableError`; so does, at once, a
    server asking for a longer wait than ``max_retry_wait`` seconds. Unparseable or
    schema-violating answers raise :class:`~palimpsest.adapters.openai.errors.ModelOutputError`.
    Every response's token usage is recorded in :attr:`usage` under the call's ``name``.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        max_retries: int = 3,
        timeout: float | None = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        structured_output: bool = True,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_retry_wait: float = 60.0,
        sleep: Callable[[float], None] | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError("model must be a non-empty model name.")
        self._client = client.with_options(max_retries=0, timeout=timeout) if timeout else client.with_options(
            max_retries=0
        )
        self.model = model
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._structured = structured_output
        self._lock = threading.Lock()
        policy_kwargs: dict[str, Any] = {"max_retries": max_retries, "backoff_base": backoff_base,
                                         "backoff_cap": backoff_cap, "max_wait": max_retry_wait}
        if sleep is not None:
            policy_kwargs["sleep"] = sleep
        self._retry = RetryPolicy(**policy_kwargs)
        self.usage = usage if usage is not None else TokenUsage()

    @property
    def structured_output(self) -> bool:
        """Whether requests still carry ``response_format`` (False after the server rejected it)."""
        return self._structured

    def complete_json(
        self, system: str, user: str, schema: type[pydantic.BaseModel], *, name: str
    ) -> dict[str, Any]:
        """Ask for one JSON object matching ``schema``; return it validated, as a plain dict."""
        ensure_requests_allowed()
        json_schema = schema.model_json_schema()
        generation = start_llm_generation(
            concrete_class=type(self).__name__,
            model=self.model,
            api_type="chat_completions",
            prompt=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            response_json_schema=json_schema,
            llm_config={"model": self.model, "structured_output": self._structured},
            llm_generation_config={"temperature": self._temperature, "max_tokens": self._max_tokens},
            metadata={"operation": name},
        )
        try:
            text, response = self._complete(system, user, json_schema, name=name)
        except BaseException as exc:
            if generation is not None:
                generation.failed(exc)
            raise
        if generation is not None:
            usage = getattr(response, "usage", None)
            generation.completed(
                content=text,
                completion_id=_str_or_none(getattr(response, "id", None)),
                input_tokens=_int_or_none(getattr(usage, "prompt_tokens", None)),
                output_tokens=_int_or_none(getattr(usage, "completion_tokens", None)),
                total_tokens=_int_or_none(getattr(usage, "total_tokens", None)),
            )
        data = parse_json_object(text)
        try:
            return schema.model_validate(data).model_dump(mode="json")
        except pydantic.ValidationError as exc:
            raise ModelOutputError(
                f"{name}: the model's JSON does not match the expected schema: {exc.error_count()} error(s).",
                raw=text,
            ) from exc

    def _complete(self, system: str, user: str, json_schema: dict[str, Any], *, name: str) -> tuple[str, Any]:
        """The answer's text and the response it came in (prompted JSON after a rejection of
        ``response_format``)."""
        while True:
            structured = self._structured
            try:
                return self._request(system, user, json_schema, name=name, structured=structured)
            except openai.APIStatusError as exc:  # only a response_format rejection reaches here
                if structured and _rejects_response_format(exc):
                    log.warning("%s: the server rejected response_format; falling back to prompted JSON", name)
                    with self._lock:
                        self._structured = False
                    continue
                raise

    def _request(
        self, system: str, user: str, json_schema: dict[str, Any], *, name: str, structured: bool
    ) -> tuple[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model}
        if self._temperature is not None:
            kwargs["temperature"] = self._temperature
        if self._max_tokens is not None:
            kwargs["max_tokens"] = self._max_tokens
        if structured:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(name), "schema": json_schema, "strict": False},
            }
            user_text = user
        else:
            user_text = user + JSON_REMINDER.format(schema=json.dumps(json_schema, indent=1))
        kwargs["messages"] = [{"role": "system", "content": system}, {"role": "user", "content": user_text}]

        def call() -> Any:
            try:
                return self._client.chat.completions.create(**kwargs)
            except openai.APIStatusError as exc:
                if structured and _rejects_response_format(exc):
                    raise _FormatRejected(exc) from exc
                raise

        try:
            response = self._retry.run(name, call)
        except _FormatRejected as rejected:
            raise rejected.original from None
        self._record_usage(name, response)
        try:
            choice = response.choices[0]
            content = choice.message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelOutputError(f"{name}: the response has no message.") from exc
        if getattr(choice.message, "refusal", None) and not content:
            raise ModelOutputError(f"{name}: the model refused: {choice.message.refusal}", raw=None)
        return content or "", response

    def complete_with_image(self, system: str, text: str, image: bytes, mime_type: str, *, name: str) -> str:
        """A plain-text answer to a user message of ``text`` and one image (an ``image_url``
        content part holding a base64 ``data:`` URL), with the same retries and accounting as
        :meth:`complete_json`. The image must be a vision model's input: a server or model that
        takes none answers with an error, raised as the SDK's errors are."""
        ensure_requests_allowed()
        url = f"data:{mime_type};base64,{base64.b64encode(image).decode('ascii')}"
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": [
                    {"type": "text", "text": text},
                    {"type": "image_url", "image_url": {"url": url}},
                ]},
            ],
        }
        if self._temperature is not None:
            kwargs["temperature"] = self._temperature
        if self._max_tokens is not None:
            kwargs["max_tokens"] = self._max_tokens
        response = self._retry.run(name, lambda: self._client.chat.completions.create(**kwargs))
        self._record_usage(name, response)
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelOutputError(f"{name}: the response has no message.") from exc
        if not isinstance(content, str) or not content.strip():
            raise ModelOutputError(f"{name}: the model returned an empty answer.", raw=content)
        return _THINK.sub("", content).strip()

    def _record_usage(self, name: str, response: Any) -> None:
        usage = getattr(response, "usage", None)
        if usage is None:
            self.usage.record(name)
            return
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        total = getattr(usage, "total_tokens", None)
        self.usage.record(name, prompt_tokens=prompt, completion_tokens=completion,
                          total_tokens=None if total is None else int(total))

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, structured_output={self._structured})"


class _FormatRejected(Exception):
    """Internal: carries a response_format rejection past the retry loop (openai errors are translated there)."""

    def __init__(self, original: openai.APIStatusError) -> None:
        super().__init__(str(original))
        self.original = original


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _schema_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
    return cleaned or "response"
