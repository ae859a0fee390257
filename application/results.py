"""Application layer: the result objects users get back (search results, summaries, context cards)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from palimpsest.domain.errors import ValidationError
from palimpsest.domain.model import MemoryRecord, Message, RecordLink, RecordStatus, RecordType
from palimpsest.domain.search import LinkedRecord, SearchHit
from palimpsest.domain.sentinel import NOTSET, NotSetType

from .rendering import element, escape_xml, format_time, indent, metadata_element

__all__ = [
    "ContextCard",
    "OracleSearchResultFormatConfig",
    "SearchResult",
    "SearchResultFormatConfig",
    "Summary",
]

_FORMAT_DEFAULTS: dict[str, bool] = {
    "include_invalid_results": True,
    "show_thread_id": False,
    "show_distance": False,
    "show_timestamp": True,
    "show_role": True,
    "show_user_id": False,
    "show_agent_id": False,
    "show_status": True,
    "show_metadata": False,
}


@dataclass(frozen=True, slots=True)
class SearchResultFormatConfig:
    """What :meth:`SearchResult.format_content` shows. Omitted options keep the result's own."""

    include_invalid_results: bool | NotSetType = NOTSET
    show_thread_id: bool | NotSetType = NOTSET
    show_distance: bool | NotSetType = NOTSET
    show_timestamp: bool | NotSetType = NOTSET
    show_role: bool | NotSetType = NOTSET
    show_user_id: bool | NotSetType = NOTSET
    show_agent_id: bool | NotSetType = NOTSET
    show_status: bool | NotSetType = NOTSET
    show_metadata: bool | NotSetType = NOTSET

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not NOTSET and not isinstance(value, bool):
                raise ValidationError(f"{f.name} must be True or False.")

    def over(self, base: SearchResultFormatConfig) -> SearchResultFormatConfig:
        """This config's explicit options over ``base``."""
        changes = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not NOTSET}
        return replace(base, **changes)

    def option(self, name: str) -> bool:
        value = getattr(self, name)
        return _FORMAT_DEFAULTS[name] if value is NOTSET else bool(value)


OracleSearchResultFormatConfig = SearchResultFormatConfig
"""An alias of :class:`SearchResultFormatConfig` (the same class), kept for compatibility: it is
the reference API's name, so code written for it runs unchanged. Nothing about it is specific to
Oracle or to any store; new code should say ``SearchResultFormatConfig``."""


def _effective_time(record: MemoryRecord | Message) -> datetime:
    """The event time, else when the record was stored (what reads return, as in the reference)."""
    return record.timestamp or record.created_at


class SearchResult:
    """One direct search hit with its linked-record tree; renders itself for prompts.

    Scores follow **one convention**, the same on every store (it is
    :func:`~palimpsest.domain.search.run_search`'s): :attr:`relevance` is higher-is-better and
    :attr:`distance` is ``1 - relevance``.

    * dense only (``search_strategy="vector"``): the cosine similarity of the record's vector to
      the query vector, in [-1, 1]; comparable across queries of one embedding model;
    * keyword only: the raw relevance over the query's ideal relevance
      (:func:`~palimpsest.domain.search.keyword_score`), in [0, 1]; comparable across queries and
      stores;
    * hybrid: the fused score. ``Fusion.ABSOLUTE`` (the default) is
      ``w · clip(cosine) + (1 - w) · keyword_score`` in [0, 1] and comparable across queries;
      ``RRF`` and ``SCORE`` normalise within one query's lists, so their scores rank one query's
      hits and mean nothing across queries.

    A record a refinement brings in (a successor, another version) has the score the same search
    gives it, or 0 (distance 1) when it matches neither the query's vector nor its words. The
    refinements may reorder results (third parties demoted, a reranker, versions after what they
    precede), so results are best first but not always sorted by score. A linked result's
    distance is NaN: it was reached through links, not scored.
    """

    __slots__ = ("_config", "_distance", "_linked", "_record", "_score")

    def __init__(
        self,
        record: MemoryRecord | Message,
        *,
        distance: float,
        score: float | None = None,
        linked: Sequence[LinkedRecord] = (),
        format_config: SearchResultFormatConfig | None = None,
    ) -> None:
        self._record = record
        self._distance = float(distance)
        self._score = float(score) if score is not None else 1.0 - self._distance
        self._linked = tuple(linked)
        self._config = format_config or SearchResultFormatConfig()

    @classmethod
    def from_hit(cls, hit: SearchHit, *, include_invalid_results: bool = True) -> SearchResult:
        return cls(
            hit.record,
            distance=hit.distance,
            score=hit.score,
            linked=hit.linked,
            format_config=SearchResultFormatConfig(include_invalid_results=include_invalid_results),
        )

    # -- data ------------------------------------------------------------------------------

    @property
    def record(self) -> MemoryRecord | Message:
        return self._record

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def record_type(self) -> RecordType:
        return self._record.record_type

    @property
    def content(self) -> str:
        return self._record.content

    @property
    def status(self) -> RecordStatus:
        record = self._record
        return record.status if isinstance(record, MemoryRecord) else RecordStatus.VALID

    @property
    def distance(self) -> float:
        """Lower is better: ``1 - relevance`` (see the class docstring)."""
        return self._distance

    @property
    def relevance(self) -> float:
        """Higher is better: the search score (cosine similarity, keyword score or fused score,
        see the class docstring)."""
        return self._score

    @property
    def metadata(self) -> dict[str, Any] | None:
        return self._record.metadata

    @property
    def timestamp(self) -> datetime:
        return _effective_time(self._record)

    @property
    def linked_results(self) -> list[tuple[RecordLink, SearchResult]]:
        """The shortest-path tree: (stored link, linked result) pairs; nested results carry
        their own ``linked_results``."""
        return [(node.link, _linked_result(node, self._config)) for node in self._linked]

    @property
    def linked_records(self) -> tuple[LinkedRecord, ...]:
        return self._linked

    @property
    def formatted_content(self) -> str:
        return self.format_content()

    def format_content(self, format_config: SearchResultFormatConfig | NotSetType | None = NOTSET) -> str:
        if isinstance(format_config, NotSetType) or format_config is None:
            config = self._config
        elif isinstance(format_config, SearchResultFormatConfig):
            config = format_config.over(self._config)
        else:
            raise ValidationError("format_config must be a SearchResultFormatConfig.")
        return "\n".join(self._lines(config))

    def _lines(self, config: SearchResultFormatConfig | None = None) -> list[str]:
        """The rendering as lines to indent; an element's multi-line text stays inside one line,
        so indenting the block never re-indents stored text."""
        config = self._config if config is None else config
        return _render(self._record, self._linked, config, distance=self._distance, direct=True) or []

    def __str__(self) -> str:
        return self.formatted_content

    def __repr__(self) -> str:
        return f"SearchResult({self.record_type.value} {self.id!r}, distance={self._distance:.4f})"


def _linked_result(node: LinkedRecord, config: SearchResultFormatConfig) -> SearchResult:
    return SearchResult(node.record, distance=float("nan"), linked=node.children, format_config=config)


def _is_invalid(record: MemoryRecord | Message) -> bool:
    return isinstance(record, MemoryRecord) and not record.is_valid


def _render(
    record: MemoryRecord | Message,
    linked: Sequence[LinkedRecord],
    config: SearchResultFormatConfig,
    *,
    distance: float | None,
    direct: bool,
) -> list[str] | None:
    """Lines for one record and its subtree, or None when the subtree must be dropped
    (an invalid-only linked branch while invalid content is hidden)."""
    include_invalid = config.option("include_invalid_results")
    children: list[str] = []
    for node in linked:
        sub = _render(node.record, node.children, config, distance=None, direct=False)
        if sub is None:
            continue
        children.append("<linked_record>")
        children.extend(indent([element("relation_type", node.relation_label)]))
        children.extend(indent(sub))
        children.append("</linked_record>")
    hide_content = _is_invalid(record) and not include_invalid
    if hide_content and not direct and not children:
        return None
    body: list[str] = [element("record_id", record.id)]
    if config.option("show_thread_id"):
        body.append(element("thread_id", record.thread_id or ""))
    if config.option("show_distance") and distance is not None:
        body.append(element("estimated_relevance", f"{1.0 - distance:.6g}"))
    if config.option("show_timestamp"):
        body.append(element("timestamp", format_time(_effective_time(record))))
    if isinstance(record, Message) and config.option("show_role"):
        body.append(element("role", record.role))
    if config.option("show_user_id"):
        body.append(element("user_id", record.user_id or ""))
    if config.option("show_agent_id"):
        body.append(element("agent_id", record.agent_id or ""))
    if config.option("show_status"):
        body.append(element("status", record.status.value if isinstance(record, MemoryRecord) else "valid"))
    if config.option("show_metadata"):
        for key, value in sorted((record.metadata or {}).items()):
            if key.startswith("$"):
                continue  # library-managed namespace, not caller metadata
            body.append(metadata_element(key, value))
        if isinstance(record, MemoryRecord) and record.invalidation_reason:
            body.append(element("invalidation_reason", record.invalidation_reason))
    if not hide_content:
        body.append(element("content", record.content))
    if children:
        body.append("<linked_records>")
        body.extend(indent(children))
        body.append("</linked_records>")
    tag = record.record_type.value
    return [f"<{tag}>", *indent(body), f"</{tag}>"]


@dataclass(frozen=True, slots=True)
class Summary:
    """A thread summary as text (``content``) plus its topics."""

    content: str
    topics: tuple[str, ...] = ()

    @property
    def formatted_content(self) -> str:
        return self.content

    def __str__(self) -> str:
        return self.content


def _section(tag: str, body: list[str]) -> list[str]:
    """``<tag>`` around its indented body; an empty section on one line, ``<tag></tag>``."""
    if not body:
        return [f"<{tag}></{tag}>"]
    return [f"<{tag}>", *indent(body), f"</{tag}>"]


_DEFAULT_MESSAGE_FORMAT = (
    "<message>\n  <timestamp>{timestamp}</timestamp>\n  <role>{role}</role>\n  <content>{content}</content>\n</message>"
)


@dataclass(frozen=True, slots=True)
class ContextCard:
    """A compact prompt block: topics, summary, relevant records and (optionally) recent messages."""

    summary: str
    topics: tuple[str, ...] = ()
    relevant_results: tuple[SearchResult, ...] = ()
    recent_messages: tuple[Message, ...] = ()
    message_format: str = _DEFAULT_MESSAGE_FORMAT

    @property
    def content(self) -> str:
        if not (self.summary or self.topics or self.relevant_results or self.recent_messages):
            return ""
        topics = [element("topic", t) for t in self.topics]
        summary = [escape_xml(line) for line in self.summary.splitlines()]
        relevant: list[str] = []
        for result in self.relevant_results:
            relevant.extend(result._lines())
        lines = ["<context_card>"]
        lines.extend(indent(_section("topics", topics)))
        lines.extend(indent(_section("summary", summary)))
        lines.extend(indent(_section("relevant_information", relevant)))
        if self.recent_messages:
            # The template is split before filling it in: the message's own line breaks stay
            # inside its line, so its text is escaped but never re-indented.
            template = self.message_format.splitlines()
            recent: list[str] = []
            for message in self.recent_messages:
                values = {
                    "timestamp": escape_xml(format_time(_effective_time(message))),
                    "role": escape_xml(message.role),
                    "content": escape_xml(message.content),
                }
                recent.extend(line.format(**values) for line in template)
            lines.extend(indent(_section("recent_messages", recent)))
        lines.append("</context_card>")
        return "\n".join(lines)

    @property
    def formatted_content(self) -> str:
        return self.content

    def __str__(self) -> str:
        return self.content
