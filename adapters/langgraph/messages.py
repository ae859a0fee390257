"""Adapters layer (LangGraph): LangChain messages seen from palimpsest.

Helpers shared by the middleware and the tools: the marked context-card message, the text and
role of a LangChain message, stable palimpsest ids for LangChain message ids, and the start of a
kept tail that never separates an AI message with tool calls from its tool results.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

__all__ = [
    "CARD_MESSAGE_ID",
    "CARD_MESSAGE_NAME",
    "CARD_SOURCE",
    "MESSAGE_METADATA_KEY",
    "SEED_CARD_MESSAGE_NAME",
    "SUMMARY_SOURCE",
    "is_context_card_message",
    "is_summary_message",
    "make_context_card_message",
    "message_role",
    "message_text",
    "palimpsest_message_id",
    "safe_tail_start",
]

CARD_MESSAGE_NAME: Final = "palimpsest_context_card"
"""The ``name`` of the injected context-card message."""

SEED_CARD_MESSAGE_NAME: Final = "memory_context_card"
"""The ``name`` the seed example's own middleware gives its card, recognised too, so a
conversation compacted by that middleware never has its card stored as a user turn."""

CARD_MESSAGE_ID: Final = "palimpsest-context-card"
"""The fixed ``id`` of the injected context-card message (one per conversation state)."""

CARD_SOURCE: Final = "palimpsest_context_card"
SUMMARY_SOURCE: Final = "summarization"
"""``lc_source`` of the summary message LangChain's ``SummarizationMiddleware`` writes."""
"""``additional_kwargs["lc_source"]`` of the card message (LangChain's convention for
messages a middleware synthesised, as its summarisation middleware does)."""

MESSAGE_METADATA_KEY: Final = "$langgraph"
"""Key of the palimpsest message metadata recording the LangChain message a turn came from.
``$`` keys are library-managed: extraction does not copy them onto memories and search results
do not render them."""

_ID_NAMESPACE: Final = uuid.UUID("6f1d3c2e-8a4b-5e7f-9c0d-1b2a3e4f5a6b")


def message_text(message: BaseMessage | Any) -> str:
    """The text of a message: its string content, or the text blocks of a block list."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
        return "".join(parts)
    return str(content)


def is_context_card_message(message: BaseMessage | Any) -> bool:
    """Is ``message`` a context card injected by :class:`ShortTermMemoryMiddleware`?"""
    if not isinstance(message, (HumanMessage, SystemMessage)):
        return False
    if getattr(message, "name", None) in (CARD_MESSAGE_NAME, SEED_CARD_MESSAGE_NAME):
        return True
    extra = getattr(message, "additional_kwargs", None) or {}
    return extra.get("lc_source") == CARD_SOURCE


def make_context_card_message(
    content: str, *, thread_id: str, role: Literal["user", "system"] = "user"
) -> HumanMessage | SystemMessage:
    """The marked message carrying a card's XML (already escaped by palimpsest)."""
    kwargs: dict[str, Any] = {
        "content": content,
        "name": CARD_MESSAGE_NAME,
        "id": CARD_MESSAGE_ID,
        "additional_kwargs": {"lc_source": CARD_SOURCE, "palimpsest_thread_id": thread_id},
    }
    return SystemMessage(**kwargs) if role == "system" else HumanMessage(**kwargs)


def is_summary_message(message: BaseMessage | Any) -> bool:
    """Is ``message`` the summary LangChain's ``SummarizationMiddleware`` puts in place of the
    messages it summarised (marked ``additional_kwargs["lc_source"] == "summarization"``)?"""
    if not isinstance(message, (HumanMessage, SystemMessage)):
        return False
    extra = getattr(message, "additional_kwargs", None) or {}
    return extra.get("lc_source") == SUMMARY_SOURCE


def message_role(message: BaseMessage | Any) -> Literal["user", "assistant"] | None:
    """The palimpsest role of a conversational turn (``None``: not a turn we persist: the
    context card, another middleware's summary, tool and system messages)."""
    if is_context_card_message(message) or is_summary_message(message):
        return None
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    return None


def palimpsest_message_id(thread_id: str, langchain_id: str) -> str:
    """A stable palimpsest message id for a LangChain message id within one thread.

    The same LangChain message always maps to the same id, so a second write of one turn (by a
    restarted process, or by two runs racing) is refused by the store as a duplicate id."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{thread_id}\x1f{langchain_id}"))


def _tool_call_ids(message: AIMessage) -> set[str]:
    return {call_id for call in message.tool_calls if (call_id := call.get("id"))}


def safe_tail_start(messages: Sequence[BaseMessage], keep: int) -> int:
    """Index at which the last ``keep`` messages start, moved so the tail is self-consistent.

    A tail must not begin with a ``ToolMessage``: the start moves back to the ``AIMessage``
    whose tool calls it answers (keeping the whole exchange), or, when no such message exists
    (an orphan already), forward past the orphan tool results. Since tool results always follow
    their call, a tail never holds an AI message without the results recorded after it.
    """
    size = len(messages)
    if keep <= 0:
        return size
    start = max(0, size - keep)
    if start >= size or not isinstance(messages[start], ToolMessage):
        return start
    answered: set[str] = set()
    end = start
    while end < size and isinstance(messages[end], ToolMessage):
        answered.add(messages[end].tool_call_id)  # type: ignore[attr-defined]
        end += 1
    for index in range(start - 1, -1, -1):
        candidate = messages[index]
        if isinstance(candidate, ToolMessage):
            answered.add(candidate.tool_call_id)
            continue
        if isinstance(candidate, AIMessage) and candidate.tool_calls and answered & _tool_call_ids(candidate):
            return index
        break
    return end
