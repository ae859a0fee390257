"""Application layer: what is embedded for a message (its *index text*), kept apart from what is
stored and rendered (ARCHITECTURE.md D20).

A chat line on its own ("Sounds good, book it.") says little; who said it and when can help
an embedding place it. With ``RetrievalConfig(index_context=("role", "date"))`` a message is
embedded as ``"user on Saturday 20 May 2023: Sounds good, book it."`` while its stored content,
its keyword index and every rendering stay the plain text. Memories are embedded as they are:
extraction already writes them as stand-alone statements.

The recipe is part of what the vectors mean, like the model: the store records it, a client
with another recipe is refused until ``reembed()`` (as for a model change), and an import that
embeds follows the store's recipe.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.model import speaker_of, turn_context

__all__ = [
    "INDEX_CONTEXT_PARTS",
    "INDEX_CONTEXT_SETTING",
    "check_index_context",
    "message_index_text",
    "turn_before",
]

INDEX_CONTEXT_PARTS: Final = ("role", "date")
"""What a message's index text may carry besides its content, in the order it is written."""

INDEX_CONTEXT_SETTING: Final = "embedding_index_context"
"""The store setting that records the recipe its message vectors were made with (absent: none)."""


def check_index_context(value: object) -> tuple[str, ...]:
    """The recipe as a canonical tuple (parts in :data:`INDEX_CONTEXT_PARTS` order, once each)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"index_context must be a tuple of parts from {INDEX_CONTEXT_PARTS!r}, for example ('role',)."
        )
    parts = list(value)
    unknown = [p for p in parts if p not in INDEX_CONTEXT_PARTS]
    if unknown:
        raise ConfigurationError(
            f"index_context parts must be among {INDEX_CONTEXT_PARTS!r}, not {unknown[0]!r}."
        )
    return tuple(p for p in INDEX_CONTEXT_PARTS if p in parts)


def message_index_text(
    content: str,
    role: str,
    timestamp: datetime | None,
    context: tuple[str, ...],
    speaker: str | None = None,
    previous: str | None = None,
) -> str:
    """The text embedded for a message under the recipe ``context``: its content, after its
    ``speaker`` when it has one (whatever the recipe: who said it is part of what a turn means
    in a conversation of several people, as in :func:`~palimpsest.domain.model.searched_text`)
    and the recipe's parts; a named turn whose thread's message before it is named too comes
    after that turn's searched text (``previous``, a line of its own): "Adoption agencies." is
    embedded as the answer to "What are you researching?"."""
    head = [speaker] if speaker else []
    if "role" in context:
        head.append(role)
    if "date" in context and timestamp is not None:
        head.append(f"on {timestamp:%A %d %B %Y}")
    text = f"{' '.join(head)}: {content}" if head else content
    return f"{previous}\n{text}" if previous and speaker else text


def turn_before(message: object, before: object | None) -> str | None:
    """What a message's index text is read after (``previous`` of :func:`message_index_text`):
    the searched text of ``before``, the thread's message just before it, when both have a
    speaker; else ``None``."""
    if before is None:
        return None
    return turn_context(
        speaker_of(getattr(message, "metadata", None)),
        str(getattr(before, "content", "")),
        speaker_of(getattr(before, "metadata", None)),
    )
