"""Application layer: XML-like rendering of search results and context cards for prompts.

Everything rendered from stored text is untrusted: values are XML-escaped, characters XML 1.0
forbids are dropped, and caller-chosen metadata keys become attribute values, never tag names,
so no memory, message or summary can close an element or open a new one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Final

__all__ = ["element", "escape_xml", "format_time", "indent"]

_FORBIDDEN: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_SPECIAL: Final = re.compile("[&<>\"']")


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
    """``<tag attr="v">escaped text</tag>`` on one line (``tag`` is always one of ours)."""
    attrs = "".join(f' {k}="{escape_xml(v)}"' for k, v in (attributes or {}).items())
    return f"<{tag}{attrs}>{escape_xml(text)}</{tag}>"
