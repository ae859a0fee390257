"""Application layer: XML-like rendering of search results and context cards for prompts.

Everything rendered from stored text is untrusted: values are XML-escaped, characters XML 1.0
forbids are dropped, and a caller-chosen metadata key becomes a tag name only when it is a plain
XML name that no element of ours uses (else it is an attribute value), so no memory, message or
summary can close an element, open one of ours, or open one with markup in its name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Final

__all__ = ["RESERVED_TAGS", "element", "escape_xml", "format_time", "indent", "metadata_element"]

_FORBIDDEN: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_SPECIAL: Final = re.compile("[&<>\"']")
_PLAIN_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")

RESERVED_TAGS: Final = frozenset(
    {
        "memory", "fact", "guideline", "preference", "message", "image", "user_profile", "agent_profile",
        "record_id", "thread_id", "estimated_relevance", "timestamp", "role", "user_id", "agent_id", "status",
        "metadata", "invalidation_reason", "content", "linked_records", "linked_record", "relation_type",
        "context_card", "topics", "topic", "summary", "relevant_information", "recent_messages",
    }
)
"""The element names the library writes: a metadata key never takes one of them."""


def escape_xml(text: object) -> str:
    """Escape for element text and attribute values, dropping characters XML cannot carry."""
    cleaned = _FORBIDDEN.sub("", str(text))
    return _SPECIAL.sub(lambda m: _ESCAPES[m.group(0)], cleaned)


def format_time(value: datetime | None) -> str:
    return "-" if value is None else value.isoformat()


def indent(lines: Iterable[str], spaces: int = 2) -> list[str]:
    pad = " " * spaces
    return [pad + line if line else line for line in lines]


def element(tag: str, text: object, *, attributes: dict[str, str] | None = None) -> str:
    """``<tag attr="v">escaped text</tag>`` on one line (``tag`` is one of ours, or a checked
    metadata key: :func:`metadata_element`)."""
    attrs = "".join(f' {k}="{escape_xml(v)}"' for k, v in (attributes or {}).items())
    return f"<{tag}{attrs}>{escape_xml(text)}</{tag}>"


def metadata_element(key: str, value: object) -> str:
    """One caller metadata entry: ``<key>value</key>`` when ``key`` is a plain XML name (ASCII
    letters, digits, ``_ . -``, not starting with a digit, ``.``, ``-`` or ``xml``, at most 64
    characters) that is not one of :data:`RESERVED_TAGS` in any case; otherwise ``<metadata key="...">value</metadata>``.
    The value is ``str(value)``, escaped."""
    if _PLAIN_NAME.fullmatch(key) and key.lower() not in RESERVED_TAGS and not key.lower().startswith("xml"):
        return element(key, value)
    return element("metadata", value, attributes={"key": key})
