"""Adapters layer (LangGraph): the checkpoint serializer that reads only what it writes.

LangGraph's ``JsonPlusSerializer`` reads a ``pickle`` tag (with ``pickle_fallback``), revives
LangChain ``lc`` constructor envelopes from a ``json`` tag, and by default imports and calls any
``(module, name)`` a msgpack extension names (with a warning). A row of a database is input: one
altered by whoever can write the file would run code when read. :class:`CheckpointSerializer`
writes with ``JsonPlusSerializer``'s msgpack encoding and reads back only:

* the type tags it writes (``null``, ``bytes``, ``bytearray``, ``msgpack``); any other tag
  (``pickle``, ``json``...) is refused;
* msgpack extensions that construct an allow-listed ``(module, name)`` (LangChain messages and
  documents, LangGraph's own types, the standard library's plain value types, and what the caller
  adds with ``allowed_types=``), the one allowed method (``datetime.fromisoformat``) and
  LangGraph's delta snapshots. Anything else is refused as a whole, before anything is built
  (``CheckpointIntegrityError``), rather than half-decoded.

A value whose encoding names a type it would not read back is refused on writing
(``ValidationError``): nothing is stored that the saver cannot read later.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from palimpsest.domain.errors import CheckpointIntegrityError, ValidationError

__all__ = ["DEFAULT_ALLOWED_TYPES", "READ_TYPE_TAGS", "CheckpointSerializer"]

READ_TYPE_TAGS = frozenset({"null", "bytes", "bytearray", "msgpack"})
"""The type tags :class:`CheckpointSerializer` writes, and the only ones it reads."""

_MESSAGE_CLASSES = {
    "base": ("BaseMessage", "BaseMessageChunk"),
    "human": ("HumanMessage", "HumanMessageChunk"),
    "ai": ("AIMessage", "AIMessageChunk"),
    "system": ("SystemMessage", "SystemMessageChunk"),
    "chat": ("ChatMessage", "ChatMessageChunk"),
    "tool": ("ToolMessage", "ToolMessageChunk"),
    "function": ("FunctionMessage", "FunctionMessageChunk"),
    "modifier": ("RemoveMessage",),
}

DEFAULT_ALLOWED_TYPES: frozenset[tuple[str, str]] = frozenset(
    {
        *(("datetime", name) for name in ("datetime", "date", "time", "timedelta", "timezone")),
        ("uuid", "UUID"),
        ("decimal", "Decimal"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("collections", "deque"),
        *(
            ("ipaddress", f"IPv{v}{kind}")
            for v in (4, 6)
            for kind in ("Address", "Interface", "Network")
        ),
        *(("pathlib", name) for name in ("Path", "PosixPath", "WindowsPath")),
        *(("pathlib._local", name) for name in ("Path", "PosixPath", "WindowsPath")),
        ("zoneinfo", "ZoneInfo"),
        *((f"langchain_core.messages.{module}", name) for module, names in _MESSAGE_CLASSES.items() for name in names),
        ("langchain_core.documents.base", "Document"),
        *(
            ("langgraph.types", name)
            for name in ("Send", "TimeoutPolicy", "Interrupt", "Command", "StateSnapshot", "PregelTask", "Overwrite")
        ),
        ("langgraph.store.base", "Item"),
        ("langgraph.store.base", "GetOp"),
    }
)
"""The ``(module, name)`` pairs read by default: values, messages and LangGraph's own types."""

_ALLOWED_METHODS = frozenset({("datetime", "datetime", "fromisoformat")})

# JsonPlusSerializer's msgpack extension codes (langgraph.checkpoint.serde.jsonplus).
_CONSTRUCTORS = frozenset({0, 1, 2, 4, 5})  # single arg, positional, keywords, pydantic v1, v2
_METHOD = 3
_DELTA_SNAPSHOT = 7
_OPTIONS = ormsgpack.OPT_NON_STR_KEYS


def _type_key(entry: tuple[str, ...] | type) -> tuple[str, str]:
    if isinstance(entry, type):
        return (entry.__module__, entry.__name__)  # as the encoding names a class
    if isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(part, str) for part in entry):
        return (entry[0], entry[1])
    raise ValidationError(f"allowed types are classes or (module, name) pairs, not {entry!r}.")


class CheckpointSerializer(SerializerProtocol):
    """LangGraph's msgpack encoding, read back through an allow-list (see the module docstring).

    ``allowed_types``: further classes (or ``(module, name)`` pairs) a graph's state holds,
    e.g. a pydantic state model or an ``Enum`` of its own."""

    def __init__(self, allowed_types: Iterable[tuple[str, ...] | type] = ()) -> None:
        self._allowed = DEFAULT_ALLOWED_TYPES | {_type_key(entry) for entry in allowed_types}
        self._inner = JsonPlusSerializer(
            pickle_fallback=False, allowed_json_modules=None, allowed_msgpack_modules=tuple(sorted(self._allowed))
        )

    @property
    def allowed_types(self) -> frozenset[tuple[str, str]]:
        """The ``(module, name)`` pairs this serializer reads."""
        return frozenset(self._allowed)

    def with_allowlist(self, extra: Iterable[tuple[str, ...] | type]) -> CheckpointSerializer:
        """A serializer that also reads ``extra`` (what LangGraph derives from a graph's schema)."""
        keys = {_type_key(entry) for entry in extra if not isinstance(entry, tuple) or len(entry) == 2}
        if keys <= self._allowed:
            return self
        return CheckpointSerializer(self._allowed | keys)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        try:
            type_, data = self._inner.dumps_typed(obj)
        except (ormsgpack.MsgpackEncodeError, TypeError) as exc:
            raise ValidationError(f"A checkpoint value of type {type(obj).__name__} cannot be serialized: {exc}") from exc
        if type_ == "msgpack":
            refused = self._refusal(data)
            if refused is not None:
                raise ValidationError(
                    f"A checkpoint value holds {refused}, which this saver would not read back; add the class "
                    "to PalimpsestSaver(allowed_types=[...]) if it is safe to rebuild from stored data."
                )
        return type_, bytes(data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, payload = data
        if type_ not in READ_TYPE_TAGS:
            raise CheckpointIntegrityError(f"Refused a checkpoint value with type tag {type_!r}: this saver never writes it.")
        if type_ == "msgpack":
            refused = self._refusal(payload)
            if refused is not None:
                raise CheckpointIntegrityError(f"Refused a checkpoint value: it names {refused}, which is not allow-listed.")
        try:
            return self._inner.loads_typed((type_, payload))
        except Exception as exc:  # a malformed payload: nothing was built from it
            raise CheckpointIntegrityError(f"Refused a checkpoint value that does not decode: {exc}") from exc

    def _refusal(self, payload: bytes) -> str | None:
        """What in ``payload`` is not read (a description), or ``None``: every extension is
        checked, nested ones too, and nothing is imported or called."""
        problems: list[str] = []

        def hook(code: int, data: bytes) -> None:
            if problems:
                return
            if code == _DELTA_SNAPSHOT:
                ormsgpack.unpackb(data, ext_hook=hook, option=_OPTIONS)
                return
            if code not in _CONSTRUCTORS and code != _METHOD:
                problems.append(f"msgpack extension {code}")
                return
            parts = ormsgpack.unpackb(data, ext_hook=hook, option=_OPTIONS)
            if not isinstance(parts, (list, tuple)) or len(parts) < 3 or not all(isinstance(p, str) for p in parts[:2]):
                problems.append(f"a malformed msgpack extension {code}")
            elif code == _METHOD:
                if len(parts) < 4 or (parts[0], parts[1], parts[3]) not in _ALLOWED_METHODS:
                    problems.append(f"the method call {parts[0]}.{parts[1]}.{parts[3] if len(parts) > 3 else '?'}")
            elif (parts[0], parts[1]) not in self._allowed:
                problems.append(f"{parts[0]}.{parts[1]}")
            return

        try:
            ormsgpack.unpackb(payload, ext_hook=hook, option=_OPTIONS)
        except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
            if not problems:
                return f"undecodable data ({exc})"
        return problems[0] if problems else None
