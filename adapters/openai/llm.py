"""Adapters layer (OpenAI-compatible): the ``Extractor``, ``Summariser`` and ``LinkResolver`` ports on top of ``OpenAIChatModel``."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from palimpsest.application.ports import (
    ExtractedMemory,
    ExtractionRequest,
    Extractor,
    LinkProposal,
    LinkResolution,
    LinkResolver,
    Summariser,
    SummaryText,
)
from palimpsest.domain.links import BUILTIN_OPPOSITES
from palimpsest.domain.model import MEMORY_RECORD_TYPES, MemoryRecord, Message

from . import prompts
from .errors import ModelOutputError
from .schemas import ExtractionPayload, LinkResolutionPayload, SummaryPayload
from .usage import TokenUsage

__all__ = ["JsonModel", "LlmExtractor", "LlmLinkResolver", "LlmSummariser"]

log = logging.getLogger("palimpsest.adapters.openai")

MAX_PARSED_MEMORIES: Final = 100
MAX_TOPICS: Final = 8
MAX_ENTITIES: Final = 8
LINK_BATCH_SIZE: Final = 10
MAX_CANDIDATES_PER_SOURCE: Final = 7
SCOPES: Final = frozenset({"user", "agent", "environment", "multi_agent"})
LINK_TYPES: Final = frozenset(BUILTIN_OPPOSITES)
_TYPES_BY_VALUE: Final = {t.value: t for t in MEMORY_RECORD_TYPES}


class JsonModel(Protocol):
    """What the adapters need from a chat model (``OpenAIChatModel`` or a test double such as
    :class:`~palimpsest.adapters.openai.testing.FunctionChatModel`)."""

    def complete_json(self, system: str, user: str, schema: Any, *, name: str) -> dict[str, Any]: ...


class _UsesModel:
    _model: JsonModel
    uses_model = True
    """Every answer comes from the chat model (see the ``LinkResolver`` port)."""

    @property
    def usage(self) -> TokenUsage | None:
        """The chat model's token ledger (shared with other adapters on the same model), if it keeps one."""
        ledger = getattr(self._model, "usage", None)
        return ledger if isinstance(ledger, TokenUsage) else None


def _parse_time(value: str | None) -> datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())  # 3.11+ reads a trailing Z
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _link_type(value: str) -> str | None:
    cleaned = value.strip().lower().replace(" ", "_") if isinstance(value, str) else ""
    return cleaned if cleaned in LINK_TYPES else None


def _sources(value: Any, targets: Sequence[Message]) -> tuple[str, ...]:
    """The ids of the newest messages a memory names as its sources (shown numbered from 1 when
    there are several; one message is every memory's source); indexes not shown are dropped,
    and none left means "not attributed"."""
    if len(targets) == 1:
        return (targets[0].id,)
    indexes = value if isinstance(value, list) else []
    chosen = [i for i in indexes if isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= len(targets)]
    return tuple(dict.fromkeys(targets[i - 1].id for i in chosen))


def _replaced(value: Any, number: int, positions: Mapping[int, int]) -> tuple[int, ...]:
    """The places of the earlier memories that memory ``number`` of an answer says it corrects
    (``"replaces"``: their numbers in the answer, from 1); later, unknown and dropped ones are
    ignored."""
    numbers = value if isinstance(value, list) else []
    valid = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and n < number]
    return tuple(dict.fromkeys(positions[n] for n in valid if n in positions))


class LlmExtractor(_UsesModel, Extractor):
    """Implements the ``Extractor`` port with one JSON-schema chat request per extraction pass.

    Link candidates are shown numbered from 1; proposals naming any other index, or an unknown
    link type, are dropped. A memory's ``"replaces"`` names earlier memories of the same answer
    it corrects (``ExtractedMemory.replaces``). At most 100 memories are read from one answer.
    A malformed answer raises ``ModelOutputError`` and transport failures ``ModelError``/``ConfigurationError``: the
    extraction attempt fails, the stored messages stay, and the job is retried.
    """

    def __init__(self, model: JsonModel) -> None:
        self._model = model

    def extract(self, request: ExtractionRequest) -> list[ExtractedMemory]:
        if not request.target_messages:
            return []
        candidates = list(request.link_candidates)
        system, user = prompts.extraction_prompt(
            targets=request.target_messages,
            history=request.history_messages,
            summary=request.summary,
            past_memories=request.past_memories,
            candidates=candidates,
            custom_instructions=request.custom_instructions,
            token_limit=request.token_limit,
        )
        # An unusable answer (truncated or schema-violating JSON) raises ModelOutputError: the
        # extraction job stays in the store and is retried, like a transport failure, instead of
        # being finished as if the messages held no memory.
        payload = self._model.complete_json(system, user, ExtractionPayload, name="extract_memories")
        items = payload.get("memories") or []
        if len(items) > MAX_PARSED_MEMORIES:
            log.warning("memory extraction: %d memories returned, keeping the first %d", len(items),
                        MAX_PARSED_MEMORIES)
            items = items[:MAX_PARSED_MEMORIES]
        memories: list[ExtractedMemory] = []
        targets = list(request.target_messages)
        positions: dict[int, int] = {}  # an answer's memory number (from 1) -> its place in ``memories``
        for number, item in enumerate(items, start=1):
            memory = self._memory(item, candidates, targets)
            if memory is not None:
                replaced = _replaced(item.get("replaces"), number, positions)
                positions[number] = len(memories)
                memories.append(replace(memory, replaces=replaced) if replaced else memory)
        return memories

    @staticmethod
    def _memory(
        item: Mapping[str, Any], candidates: Sequence[MemoryRecord], targets: Sequence[Message]
    ) -> ExtractedMemory | None:
        text = " ".join(str(item.get("text") or "").split())
        record_type = _TYPES_BY_VALUE.get(str(item.get("record_type") or "").strip().lower())
        if not text or record_type is None:
            log.warning("memory extraction: dropped an item without text or with record type %r",
                        item.get("record_type"))
            return None
        importance = item.get("importance")
        if isinstance(importance, int):
            importance = min(5, max(1, importance))
        scope = item.get("scope")
        entities: list[str] = []
        for entity in item.get("entities") or ():
            cleaned = " ".join(str(entity).split())
            if cleaned and cleaned not in entities:
                entities.append(cleaned)
        links: list[LinkProposal] = []
        seen: set[tuple[str, str]] = set()
        for link in item.get("links") or ():
            index, link_type = link.get("candidate"), _link_type(link.get("link_type", ""))
            if not isinstance(index, int) or not 1 <= index <= len(candidates) or link_type is None:
                log.info("memory extraction: dropped a link to candidate %r of type %r", index, link.get("link_type"))
                continue
            key = (candidates[index - 1].id, link_type)
            if key not in seen:
                seen.add(key)
                links.append(LinkProposal(target_id=key[0], link_type=link_type))
        return ExtractedMemory(
            record_type=record_type,
            text=text,
            entities=tuple(entities[:MAX_ENTITIES]),
            importance=importance,
            scope=scope if scope in SCOPES else None,
            timestamp=_parse_time(item.get("timestamp")),
            valid_to=_parse_time(item.get("valid_to")),
            links=tuple(links),
            source_message_ids=_sources(item.get("sources"), targets),
        )

    def __repr__(self) -> str:
        return f"LlmExtractor({self._model!r})"


class LlmSummariser(_UsesModel, Summariser):
    """Implements the ``Summariser`` port: the previous summary plus new messages → a new summary.

    Topics are trimmed, de-duplicated (case-insensitively) and capped at 8. An unusable answer
    raises ``ModelOutputError``: the application then keeps a transcript fallback rather than
    store an empty or invented summary.
    """

    def __init__(self, model: JsonModel) -> None:
        self._model = model

    def summarise(
        self, previous: SummaryText | None, messages: Sequence[Any], *, token_limit: int | None = None
    ) -> SummaryText:
        if not messages and previous is not None:
            return previous
        system, user = prompts.summary_prompt(previous, messages, token_limit=token_limit)
        payload = self._model.complete_json(system, user, SummaryPayload, name="summarise")
        text = str(payload.get("summary") or "").strip()
        if not text:
            raise ModelOutputError("summarise: the model returned an empty summary.")
        topics: list[str] = []
        seen: set[str] = set()
        for topic in payload.get("topics") or ():
            cleaned = " ".join(str(topic).split())
            if cleaned and cleaned.lower() not in seen:
                seen.add(cleaned.lower())
                topics.append(cleaned)
        return SummaryText(text=text, topics=tuple(topics[:MAX_TOPICS]))

    def __repr__(self) -> str:
        return f"LlmSummariser({self._model!r})"


class LlmLinkResolver(_UsesModel, LinkResolver):
    """Implements the ``LinkResolver`` port in batches of at most 10 sources with 7 candidates each.

    Links may only point at candidates shown for that source (never at the source itself);
    unknown indexes and link types are dropped. A source without links or new text gets no
    resolution. A batch whose answer is unusable is logged and contributes nothing; the other
    batches still count.
    """

    def __init__(self, model: JsonModel, *, batch_size: int = LINK_BATCH_SIZE,
                 max_candidates: int = MAX_CANDIDATES_PER_SOURCE) -> None:
        self._model = model
        self._batch_size = max(1, batch_size)
        self._max_candidates = max(1, max_candidates)

    def resolve(
        self,
        sources: Sequence[MemoryRecord],
        candidates: Mapping[str, Sequence[MemoryRecord]],
        *,
        custom_instructions: str | None = None,
    ) -> list[LinkResolution]:
        shown = {
            s.id: [c for c in candidates.get(s.id, ()) if c.id != s.id and c.record_type.is_memory_like][
                : self._max_candidates
            ]
            for s in sources
        }
        with_candidates = [s for s in sources if shown[s.id]]
        resolutions: list[LinkResolution] = []
        for start in range(0, len(with_candidates), self._batch_size):
            batch = with_candidates[start : start + self._batch_size]
            resolutions.extend(self._resolve_batch(batch, shown, custom_instructions))
        return resolutions

    def _resolve_batch(
        self, batch: Sequence[MemoryRecord], shown: Mapping[str, Sequence[MemoryRecord]], custom: str | None
    ) -> list[LinkResolution]:
        system, user = prompts.link_prompt(batch, shown, custom_instructions=custom)
        try:
            payload = self._model.complete_json(system, user, LinkResolutionPayload, name="resolve_links")
        except ModelOutputError as exc:
            log.warning("link resolution: unusable model answer (%s); no links for %d memories", exc, len(batch))
            return []
        merged: dict[int, tuple[list[LinkProposal], str | None]] = {}
        for item in payload.get("resolutions") or ():
            index = item.get("source")
            if not isinstance(index, int) or not 1 <= index <= len(batch):
                continue
            source = batch[index - 1]
            options = shown[source.id]
            links, updated = merged.setdefault(index, ([], None))
            for link in item.get("links") or ():
                c_index, link_type = link.get("candidate"), _link_type(link.get("link_type", ""))
                if not isinstance(c_index, int) or not 1 <= c_index <= len(options) or link_type is None:
                    continue
                target = options[c_index - 1].id
                if all(p.target_id != target for p in links):  # one link per pair of records
                    links.append(LinkProposal(target_id=target, link_type=link_type))
            text = " ".join(str(item.get("updated_text") or "").split()) or None
            merged[index] = (links, text or updated)
        return [
            LinkResolution(source_id=batch[i - 1].id, links=tuple(links), updated_text=text)
            for i, (links, text) in sorted(merged.items())
            if links or text
        ]

    def __repr__(self) -> str:
        return f"LlmLinkResolver({self._model!r})"


