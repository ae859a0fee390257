"""Adapters layer (command line): the memory graph as data, Mermaid text, an SVG picture and an HTML page.

:func:`collect_graph` reads the memory records of a store (current ones and the history they
replaced, never expired ones; the newest :data:`GRAPH_RECORD_LIMIT` unless told otherwise, saying
how many it left out) and the links among them into a :class:`MemoryGraph`, a plain frozen
value. Three pure functions draw it (each repeats the note on records left out):

* :func:`to_mermaid` — a Mermaid ``flowchart`` (for Markdown files and wikis);
* :func:`to_svg` — a self-contained SVG picture with a deterministic layered layout: each
  group of linked records is a small column, current memories on top and the records they
  superseded, refined or duplicated below them, drawn as history (grey, dashed);
* :func:`to_html` — one HTML page, with the SVG inlined, a legend and a list of the links; it
  loads nothing (no script, font, stylesheet or image from anywhere).

Memory text is untrusted: every label is escaped for its format (Mermaid entity codes, XML/HTML
character references), so no memory can end a label, add a statement or inject markup.
"""

from __future__ import annotations

import html
import logging
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import networkx as nx
from palimpsest.application import AgentMemory
from palimpsest.domain import NOTSET, RecordStatus, ValidationError
from palimpsest.domain.links import LIFECYCLE_TYPES

__all__ = [
    "GraphEdge",
    "GraphNode",
    "MemoryGraph",
    "collect_graph",
    "to_html",
    "to_mermaid",
    "to_svg",
]

LABEL_LIMIT: Final = 110
"""Characters of a memory's text kept in its node label (whitespace collapsed, then cut)."""

GRAPH_RECORD_LIMIT: Final = 10_000
"""Records a picture shows by default (the newest); a picture of more is unreadable and slow to
lay out. :func:`collect_graph` says how many it left out (``MemoryGraph.omitted`` and a log
warning); ``limit=None`` draws every record."""

log = logging.getLogger("palimpsest.adapters.cli.graph")


# --- the graph as data ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One memory record: its id, type, a short label, its status and when it was created."""

    id: str
    record_type: str
    label: str
    status: str
    created_at: datetime

    @property
    def is_history(self) -> bool:
        """True for an invalid record: one that a newer record supersedes, refines or duplicates."""
        return self.status != RecordStatus.VALID.value


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One stored link, read in its stored direction: ``source`` ``relation_type`` ``target``."""

    id: str
    source: str
    target: str
    relation_type: str

    @property
    def is_lifecycle(self) -> bool:
        """True for supersedes, refines and duplicates: the links that make their target history."""
        return self.relation_type in LIFECYCLE_TYPES


@dataclass(frozen=True, slots=True)
class MemoryGraph:
    """Memory records (oldest first) and the links among them (earliest created first).

    ``omitted`` counts the older records of the scope left out by a limit (0: none was)."""

    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()
    omitted: int = 0

    @property
    def current_count(self) -> int:
        """How many nodes are current (valid) memories."""
        return sum(1 for node in self.nodes if not node.is_history)

    @property
    def history_count(self) -> int:
        """How many nodes are history (invalid) memories."""
        return len(self.nodes) - self.current_count

    @property
    def omission_note(self) -> str:
        """One sentence saying how many older records were left out, or ``""`` when none was."""
        if not self.omitted:
            return ""
        total = len(self.nodes) + self.omitted
        return (
            f"the graph shows the newest {len(self.nodes):,} of {total:,} memory records; "
            f"the {self.omitted:,} oldest are left out"
        )


def short_label(text: str, limit: int = LABEL_LIMIT) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rstrip() + "…"


def collect_graph(
    memory: AgentMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    limit: int | None = GRAPH_RECORD_LIMIT,
) -> MemoryGraph:
    """The memory records of one user and/or agent (all of them when ``None``) and their links.

    Records come from :meth:`AgentMemory.list_memories` (valid and invalid, expired ones are
    hidden): the newest ``limit`` of them (``None``: all). Records left out are counted in
    ``omitted`` and logged as a warning. Links come from the client's
    :meth:`~palimpsest.application.StoreAdmin.links_among` (one read-only unit of work of the
    client's store): nothing is written. Only links whose two ends are both among the records are kept.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValidationError("limit must be a positive integer or None.")
    records = memory.list_memories(
        user_id=NOTSET if user_id is None else user_id,
        agent_id=NOTSET if agent_id is None else agent_id,
        limit=None,
    )
    omitted = 0 if limit is None else max(0, len(records) - limit)
    records = records[omitted:]
    ordered_links = memory.admin.links_among([record.id for record in records])
    graph = MemoryGraph(
        nodes=tuple(
            GraphNode(
                id=record.id,
                record_type=record.record_type.value,
                label=short_label(record.content),
                status=record.status.value,
                created_at=record.created_at,
            )
            for record in records
        ),
        edges=tuple(
            GraphEdge(
                id=link.id, source=link.source_id, target=link.target_id, relation_type=link.relation_type
            )
            for link in ordered_links
        ),
        omitted=omitted,
    )
    if omitted:
        log.warning("%s (limit %d).", graph.omission_note, limit)
    return graph


# --- colours, shared by every format ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Palette:
    fill: str
    stroke: str
    text: str


_TYPE_COLOURS: Final[Mapping[str, _Palette]] = {
    "memory": _Palette("#e3f2fd", "#1e88e5", "#0d47a1"),
    "fact": _Palette("#e8f5e9", "#43a047", "#1b5e20"),
    "guideline": _Palette("#fff3e0", "#fb8c00", "#e65100"),
    "preference": _Palette("#f3e5f5", "#8e24aa", "#4a148c"),
}
_OTHER_TYPE: Final = _Palette("#eceff1", "#546e7a", "#263238")
_HISTORY: Final = _Palette("#f5f5f5", "#9e9e9e", "#616161")

_EDGE_COLOURS: Final[Mapping[str, str]] = {
    "lifecycle": "#455a64",
    "supports": "#2e7d32",
    "contradicts": "#c62828",
    "other": "#6d4c41",
}
_EDGE_DASHES: Final[Mapping[str, str | None]] = {
    "lifecycle": None,
    "supports": None,
    "contradicts": "6 4",
    "other": "2 4",
}
_EDGE_LEGEND: Final[Mapping[str, str]] = {
    "lifecycle": "supersedes / refines / duplicates (target becomes history)",
    "supports": "supports",
    "contradicts": "contradicts",
    "other": "other relation",
}


def _palette(node: GraphNode) -> _Palette:
    return _TYPE_COLOURS.get(node.record_type, _OTHER_TYPE)


def _edge_kind(edge: GraphEdge) -> str:
    if edge.is_lifecycle:
        return "lifecycle"
    if edge.relation_type in ("supports", "contradicts"):
        return edge.relation_type
    return "other"


# --- Mermaid ---------------------------------------------------------------------------------------

_MERMAID_PUNCTUATION: Final = frozenset(" ,.:?!'/_-+=*@$")


def mermaid_escape(text: str) -> str:
    """``text`` made safe inside a double-quoted Mermaid label.

    Letters, digits, spaces and a little harmless punctuation stay; every other character
    (quotes, brackets, ``<``, ``>``, ``#``, ``;``, ``%``, ``|``, backticks, newlines, control and
    format characters...) becomes a Mermaid entity code ``#<decimal>;``, which Mermaid shows as
    the character itself but never parses as syntax.
    """
    return "".join(
        ch if (ch.isalnum() and ch.isprintable()) or ch in _MERMAID_PUNCTUATION else f"#{ord(ch)};"
        for ch in text
    )


def to_mermaid(graph: MemoryGraph) -> str:
    """A Mermaid ``flowchart``: one rounded node per record, one labelled arrow per link.

    Nodes are styled by record type with ``classDef``s; history records get the ``history``
    class (grey, dashed border). Lifecycle links are solid arrows, other relations dotted.
    Node ids are positional (``n0``, ``n1``...), so record ids never reach the syntax.
    """
    lines = ["flowchart TB"]
    if graph.omitted:
        lines.append(f"    %% {graph.omission_note}")
    for name, colours in _TYPE_COLOURS.items():
        lines.append(f"    classDef {name} fill:{colours.fill},stroke:{colours.stroke},color:{colours.text}")
    lines.append(
        f"    classDef history fill:{_HISTORY.fill},stroke:{_HISTORY.stroke},color:{_HISTORY.text},"
        "stroke-dasharray:5 5"
    )
    lines.append(
        f"    classDef other fill:{_OTHER_TYPE.fill},stroke:{_OTHER_TYPE.stroke},color:{_OTHER_TYPE.text}"
    )
    ids = {node.id: f"n{index}" for index, node in enumerate(graph.nodes)}
    for node in graph.nodes:
        kind = f"{node.record_type}, history" if node.is_history else node.record_type
        lines.append(f'    {ids[node.id]}("{mermaid_escape(f"{kind}: {short_label(node.label)}")}")')
    styles: list[str] = []
    for index, edge in enumerate(graph.edges):
        kind = _edge_kind(edge)
        arrow = "-->" if kind == "lifecycle" else "-.->"
        lines.append(
            f'    {ids[edge.source]} {arrow}|"{mermaid_escape(edge.relation_type)}"| {ids[edge.target]}'
        )
        styles.append(f"    linkStyle {index} stroke:{_EDGE_COLOURS[kind]}")
    lines.extend(styles)
    for node in graph.nodes:
        css_class = (
            "history"
            if node.is_history
            else node.record_type
            if node.record_type in _TYPE_COLOURS
            else "other"
        )
        lines.append(f"    class {ids[node.id]} {css_class}")
    return "\n".join(lines) + "\n"


# --- layout ----------------------------------------------------------------------------------------

_NODE_WIDTH: Final = 250
_PAD_X: Final = 12
_PAD_TOP: Final = 10
_HEADER: Final = 18
_LINE_HEIGHT: Final = 16
_PAD_BOTTOM: Final = 10
_FONT_SIZE: Final = 12.5
_MAX_LINES: Final = 4
_H_GAP: Final = 36
_V_GAP: Final = 72
_ARC_SPACE: Final = 64
_BLOCK_GAP: Final = 56
_MAX_ROW_WIDTH: Final = 1140
_MARGIN: Final = 24
_LEGEND_HEIGHT: Final = 64
_PER_ROW: Final = int((_MAX_ROW_WIDTH + _H_GAP) // (_NODE_WIDTH + _H_GAP))
_NARROW: Final = frozenset("iljI.,;:'!|`")
_SEMI_NARROW: Final = frozenset('ftr()[]{}"-/\\*')
_WIDE: Final = frozenset("mwMW@%")


@dataclass(frozen=True, slots=True)
class _Box:
    x: float
    y: float
    width: float
    height: float
    layer: int
    lines: tuple[str, ...]

    @property
    def cx(self) -> float:
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        return self.y + self.height / 2


def text_width(text: str, font_size: float) -> float:
    """An estimate of ``text``'s width in a common sans-serif font: no font is measured, so
    the layout is the same everywhere; the estimate errs on the wide side."""
    ems = 0.0
    for ch in text:
        if ch == " ":
            ems += 0.33
        elif ch in _NARROW:
            ems += 0.32
        elif ch in _SEMI_NARROW:
            ems += 0.42
        elif ch in _WIDE:
            ems += 0.95
        elif unicodedata.east_asian_width(ch) in ("W", "F"):
            ems += 1.0
        elif ch.isupper() or ch.isdigit():
            ems += 0.72
        else:
            ems += 0.62
    return ems * font_size


def _wrap(label: str) -> tuple[str, ...]:
    """The label in lines that fit a box (words kept whole unless one alone is too wide), at
    most ``_MAX_LINES`` of them, the last ending with an ellipsis when text was left out."""
    limit = _NODE_WIDTH - 2 * _PAD_X
    lines: list[str] = []
    current = ""
    for word in label.split():
        while text_width(word, _FONT_SIZE) > limit:  # a word wider than the box: cut it
            cut = len(word) - 1
            while cut > 1 and text_width(word[:cut], _FONT_SIZE) > limit:
                cut -= 1
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}" if current else word
        if current and text_width(candidate, _FONT_SIZE) > limit:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current or not lines:
        lines.append(current)
    if len(lines) > _MAX_LINES:
        last = lines[_MAX_LINES - 1]
        while last and text_width(last + "…", _FONT_SIZE) > limit:
            last = last[:-1]
        lines = [*lines[: _MAX_LINES - 1], last.rstrip() + "…"]
    return tuple(lines)


def _height(lines: Sequence[str]) -> float:
    return _PAD_TOP + _HEADER + len(lines) * _LINE_HEIGHT + _PAD_BOTTOM


@dataclass(frozen=True, slots=True)
class _Block:
    """Boxes of one group laid out from (0, 0), with the group's size."""

    boxes: dict[str, _Box]
    width: float
    height: float


def _layers(members: Sequence[str], edges: Iterable[GraphEdge]) -> dict[str, int]:
    """Layer of each member: 0 for records nothing retires (current ones), else one below the
    deepest record that retires them (longest path along lifecycle links, cycles collapsed)."""
    lifecycle: nx.DiGraph[str] = nx.DiGraph()
    lifecycle.add_nodes_from(members)
    lifecycle.add_edges_from((e.source, e.target) for e in edges if e.is_lifecycle)
    condensed = nx.condensation(lifecycle)
    mapping: dict[str, int] = condensed.graph["mapping"]
    depth_of: dict[int, int] = {}
    for depth, generation in enumerate(nx.topological_generations(condensed)):
        for component in generation:
            depth_of[component] = depth
    return {member: depth_of[mapping[member]] for member in members}


def _layout_group(
    members: Sequence[str], edges: Sequence[GraphEdge], lines: Mapping[str, tuple[str, ...]]
) -> _Block:
    """One connected group: layers top-down, each layer ordered by its parents' positions."""
    order = {node_id: index for index, node_id in enumerate(members)}  # members are oldest first
    layer_of = _layers(members, edges)
    rows: dict[int, list[str]] = defaultdict(list)
    for node_id in members:
        rows[layer_of[node_id]].append(node_id)
    parents: dict[str, list[str]] = defaultdict(list)
    for edge in edges:
        if layer_of[edge.source] < layer_of[edge.target]:
            parents[edge.target].append(edge.source)
        elif layer_of[edge.target] < layer_of[edge.source]:
            parents[edge.source].append(edge.target)
    position: dict[str, float] = {}
    for layer in sorted(rows):
        row = rows[layer]
        if layer > 0:

            def barycentre(node_id: str) -> tuple[float, int]:
                placed = [position[p] for p in parents[node_id] if p in position]
                return (sum(placed) / len(placed) if placed else math.inf, order[node_id])

            row.sort(key=barycentre)
        for index, node_id in enumerate(row):
            position[node_id] = index
    # A wide layer is cut into bands of at most _PER_ROW boxes, so no picture outgrows a screen.
    bands = [
        (layer, rows[layer][i : i + _PER_ROW])
        for layer in sorted(rows)
        for i in range(0, len(rows[layer]), _PER_ROW)
    ]
    width = max(_row_width(len(band)) for _, band in bands)
    boxes: dict[str, _Box] = {}
    y = 0.0
    for layer, band in bands:
        inside = set(band)
        if any(e.source in inside and e.target in inside for e in edges):
            y += _ARC_SPACE  # room for the arcs joining boxes of this band
        x = (width - _row_width(len(band))) / 2
        for node_id in band:
            boxes[node_id] = _Box(x, y, _NODE_WIDTH, _height(lines[node_id]), layer, lines[node_id])
            x += _NODE_WIDTH + _H_GAP
        y += max(_height(lines[node_id]) for node_id in band) + _V_GAP
    return _Block(boxes, width, y - _V_GAP)


def _row_width(count: int) -> float:
    return count * _NODE_WIDTH + (count - 1) * _H_GAP


def _grid_block(members: Sequence[str], lines: Mapping[str, tuple[str, ...]], columns: int) -> _Block:
    """Unlinked records in a grid, ``columns`` wide, row by row in their order."""
    boxes: dict[str, _Box] = {}
    y = 0.0
    for start in range(0, len(members), columns):
        row = members[start : start + columns]
        for index, node_id in enumerate(row):
            boxes[node_id] = _Box(
                index * (_NODE_WIDTH + _H_GAP), y, _NODE_WIDTH, _height(lines[node_id]), 0, lines[node_id]
            )
        y += max(_height(lines[node_id]) for node_id in row) + _H_GAP
    return _Block(boxes, _row_width(min(columns, len(members))), y - _H_GAP)


def _layout(graph: MemoryGraph) -> tuple[dict[str, _Box], float, float]:
    """Place every node: linked groups first (largest first), each a layered column, packed left
    to right in rows; then the unlinked records as a grid filling the rest. Deterministic: only
    the graph's order and structure decide."""
    lines = {node.id: _wrap(node.label) for node in graph.nodes}
    order = {node.id: index for index, node in enumerate(graph.nodes)}
    undirected: nx.Graph[str] = nx.Graph()
    undirected.add_nodes_from(order)
    undirected.add_edges_from((e.source, e.target) for e in graph.edges)
    groups = [sorted(component, key=order.__getitem__) for component in nx.connected_components(undirected)]
    linked = sorted((g for g in groups if len(g) > 1), key=lambda g: (-len(g), order[g[0]]))
    single = sorted((g[0] for g in groups if len(g) == 1), key=order.__getitem__)
    edges_of: dict[str, list[GraphEdge]] = defaultdict(list)
    for edge in graph.edges:
        edges_of[edge.source].append(edge)
    blocks = [
        _layout_group(group, [e for member in group for e in edges_of[member]], lines) for group in linked
    ]
    placed: dict[str, _Box] = {}
    x = y = 0.0
    row_height = 0.0
    total_width = 0.0

    def place(block: _Block) -> None:
        nonlocal x, y, row_height, total_width
        if x > 0 and x + block.width > _MAX_ROW_WIDTH:
            x, y, row_height = 0.0, y + row_height + _BLOCK_GAP, 0.0
        for node_id, box in block.boxes.items():
            placed[node_id] = _Box(
                _MARGIN + x + box.x, _MARGIN + y + box.y, box.width, box.height, box.layer, box.lines
            )
        total_width = max(total_width, x + block.width)
        row_height = max(row_height, block.height)
        x += block.width + _BLOCK_GAP

    for block in blocks:
        place(block)
    if single:
        # Beside the last linked groups when at least two columns fit there (or all of them do),
        # else on a row of their own.
        columns = int((_MAX_ROW_WIDTH - x + _H_GAP) // (_NODE_WIDTH + _H_GAP)) if x > 0 else 0
        if columns < min(2, len(single)):
            if x > 0:
                x, y, row_height = 0.0, y + row_height + _BLOCK_GAP, 0.0
            columns = _PER_ROW
        place(_grid_block(single, lines, columns))
    width = total_width + 2 * _MARGIN
    height = y + row_height + 2 * _MARGIN
    return placed, width, height


# --- SVG -------------------------------------------------------------------------------------------

_XML_ILLEGAL: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_escape(text: str) -> str:
    """``text`` safe as XML/HTML character data or a double-quoted attribute value.

    ``&``, ``<``, ``>``, ``"`` and ``'`` become character references; characters XML 1.0
    cannot hold at all (most control characters, lone surrogates) become U+FFFD.
    """
    return html.escape(_XML_ILLEGAL.sub("\ufffd", text), quote=True)


def _num(value: float) -> str:
    """A coordinate as short, stable text."""
    rounded = round(value, 1)
    return str(int(rounded)) if rounded == int(rounded) else f"{rounded:.1f}"


def _clip(box: _Box, towards_x: float, towards_y: float) -> tuple[float, float]:
    """Where the segment from ``box``'s centre towards a point leaves the box."""
    dx, dy = towards_x - box.cx, towards_y - box.cy
    if dx == 0 and dy == 0:
        return box.cx, box.cy
    scale = min(
        (box.width / 2) / abs(dx) if dx else math.inf,
        (box.height / 2) / abs(dy) if dy else math.inf,
    )
    return box.cx + dx * scale, box.cy + dy * scale


def _label_width(text: str) -> float:
    return text_width(text, 11) * 1.1 + 14  # the labels are semi-bold


def _edge_svg(
    edge: GraphEdge, source: _Box, target: _Box, rank: int, siblings: int
) -> tuple[list[str], list[str]]:
    """One link as (arrow, label) elements: a straight arrow between boxes of different rows
    (parallel links fanned out, their labels spread along them), an arc over the tops of boxes
    side by side. Labels are drawn after the boxes, so that no box hides one."""
    kind = _edge_kind(edge)
    colour = _EDGE_COLOURS[kind]
    dash = _EDGE_DASHES[kind]
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    offset = (rank - (siblings - 1) / 2) * 16
    if source.layer == target.layer and source.y == target.y:
        # Two records side by side: an arc over their tops, higher for a longer span; its ends
        # leave the centre of the top edge by more for a longer span, so arcs meet boxes apart.
        direction = 1.0 if target.cx >= source.cx else -1.0
        span = round(abs(target.cx - source.cx) / (_NODE_WIDTH + _H_GAP))
        shift = 28 + 22 * min(max(span - 1, 0), 4)
        x0, y0 = source.cx + direction * shift + offset, source.y
        x1, y1 = target.cx - direction * shift + offset, target.y
        rise = min(_ARC_SPACE * 0.4 + 0.1 * abs(x1 - x0) + rank * 14, _ARC_SPACE * 1.6)
        control_y = min(y0, y1) - rise
        path = f"M{_num(x0)},{_num(y0)} Q{_num((x0 + x1) / 2)},{_num(control_y)} {_num(x1)},{_num(y1)}"
        label_x, label_y = (x0 + x1) / 2, 0.25 * y0 + 0.5 * control_y + 0.25 * y1
    else:
        x0, y0 = _clip(source, target.cx, target.cy)
        x1, y1 = _clip(target, source.cx, source.cy)
        length = math.hypot(x1 - x0, y1 - y0) or 1.0
        nx_, ny_ = -(y1 - y0) / length * offset, (x1 - x0) / length * offset
        x0, y0, x1, y1 = x0 + nx_, y0 + ny_, x1 + nx_, y1 + ny_
        path = f"M{_num(x0)},{_num(y0)} L{_num(x1)},{_num(y1)}"
        # The label sits in the gap the arrow crosses first on leaving its source, so that it
        # lands between rows of boxes rather than on one; parallel links share that gap.
        along = (rank + 1) / (siblings + 1)
        if abs(y1 - y0) > _V_GAP:
            along = along * _V_GAP / abs(y1 - y0)
        label_x, label_y = x0 + (x1 - x0) * along, y0 + (y1 - y0) * along
    label = xml_escape(edge.relation_type)
    width = _label_width(edge.relation_type)
    link_id = xml_escape(edge.id)
    arrow = [
        f'<g class="edge edge-{kind}" data-link-id="{link_id}">',
        f"<title>{label}</title>",
        (
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="1.8"{dash_attr} '
            f'marker-end="url(#pg-arrow-{kind})"/>'
        ),
        "</g>",
    ]
    tag = [
        f'<g class="edge-label" data-label-of="{link_id}">',
        f"<title>{label}</title>",
        (
            f'<rect x="{_num(label_x - width / 2)}" y="{_num(label_y - 9)}" width="{_num(width)}" height="18" '
            f'rx="9" fill="#ffffff" fill-opacity="0.92" stroke="{colour}" stroke-width="0.8"/>'
        ),
        (
            f'<text x="{_num(label_x)}" y="{_num(label_y + 4)}" text-anchor="middle" font-size="11" '
            f'font-weight="600" fill="{colour}">{label}</text>'
        ),
        "</g>",
    ]
    return arrow, tag


def _node_svg(node: GraphNode, box: _Box) -> list[str]:
    colours = _HISTORY if node.is_history else _palette(node)
    type_colours = _palette(node)
    dash = ' stroke-dasharray="6 4"' if node.is_history else ""
    header = f"{node.record_type} · history" if node.is_history else node.record_type
    status = "history (invalid)" if node.is_history else "current (valid)"
    text_colour = "#757575" if node.is_history else "#212121"
    left = box.x + _PAD_X
    dot_opacity = ' fill-opacity="0.55"' if node.is_history else ""
    parts = [
        (
            f'<g class="node node-{xml_escape(node.record_type)}{" history" if node.is_history else ""}" '
            f'data-record-id="{xml_escape(node.id)}">'
        ),
        f"<title>{xml_escape(f'{node.record_type}, {status}: {node.label} [{node.id}]')}</title>",
        (
            f'<rect x="{_num(box.x)}" y="{_num(box.y)}" width="{_num(box.width)}" height="{_num(box.height)}" '
            f'rx="10" ry="10" fill="{colours.fill}" stroke="{colours.stroke}" stroke-width="1.6"{dash}/>'
        ),
        (
            f'<circle cx="{_num(left + 4)}" cy="{_num(box.y + _PAD_TOP + 7)}" r="4.5" fill="{type_colours.stroke}"'
            f"{dot_opacity}/>"
        ),
        (
            f'<text x="{_num(left + 14)}" y="{_num(box.y + _PAD_TOP + 11)}" font-size="10.5" font-weight="700" '
            f'letter-spacing="0.6" fill="{colours.text}">{xml_escape(header.upper())}</text>'
        ),
        f'<text x="{_num(left)}" y="{_num(box.y + _PAD_TOP + _HEADER + 12)}" font-size="{_FONT_SIZE}" fill="{text_colour}">',
    ]
    for index, line in enumerate(box.lines):
        dy = "0" if index == 0 else str(_LINE_HEIGHT)
        parts.append(f'<tspan x="{_num(left)}" dy="{dy}">{xml_escape(line)}</tspan>')
    parts.extend(["</text>", "</g>"])
    return parts


def _legend_svg(y: float) -> list[str]:
    parts = [f'<g class="legend" transform="translate({_MARGIN},{_num(y)})">']
    x = 0.0
    for name, colours in _TYPE_COLOURS.items():
        parts.append(
            f'<rect x="{_num(x)}" y="0" width="22" height="14" rx="4" fill="{colours.fill}" '
            f'stroke="{colours.stroke}" stroke-width="1.4"/>'
        )
        parts.append(f'<text x="{_num(x + 28)}" y="11" font-size="11.5" fill="#37474f">{name}</text>')
        x += 48 + text_width(name, 11.5)
    parts.append(
        f'<rect x="{_num(x)}" y="0" width="22" height="14" rx="4" fill="{_HISTORY.fill}" stroke="{_HISTORY.stroke}" '
        'stroke-width="1.4" stroke-dasharray="4 3"/>'
    )
    parts.append(f'<text x="{_num(x + 28)}" y="11" font-size="11.5" fill="#37474f">history (invalid)</text>')
    x = 0.0
    for kind, text in _EDGE_LEGEND.items():
        dash = _EDGE_DASHES[kind]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{_num(x)}" y1="35" x2="{_num(x + 26)}" y2="35" stroke="{_EDGE_COLOURS[kind]}" '
            f'stroke-width="1.8"{dash_attr} marker-end="url(#pg-arrow-{kind})"/>'
        )
        parts.append(
            f'<text x="{_num(x + 34)}" y="39" font-size="11.5" fill="#37474f">{xml_escape(text)}</text>'
        )
        x += 56 + text_width(text, 11.5)
    parts.append("</g>")
    return parts


def _svg(graph: MemoryGraph, *, standalone: bool) -> str:
    boxes, width, height = _layout(graph)
    if not graph.nodes:
        width, height = 420.0, 80.0
    legend_y = height
    if standalone:
        height += _LEGEND_HEIGHT
        width = max(width, 900.0)
    namespace = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    parts = [
        (
            f'<svg{namespace} width="{_num(width)}" height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" '
            'role="img" aria-label="memory graph" '
            'font-family="DejaVu Sans, Segoe UI, Helvetica, Arial, sans-serif">'
        ),
        f"<title>memory graph{f' ({graph.omission_note})' if graph.omitted else ''}</title>",
        "<defs>",
    ]
    for kind, colour in _EDGE_COLOURS.items():
        parts.append(
            f'<marker id="pg-arrow-{kind}" viewBox="0 0 10 10" refX="9.5" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        )
    parts.append("</defs>")
    parts.append(f'<rect x="0" y="0" width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>')
    if not graph.nodes:
        parts.append('<text x="24" y="46" font-size="14" fill="#616161">No memories to draw yet.</text>')
    # Parallel links between the same two records are spread apart.
    by_pair: dict[frozenset[str], list[GraphEdge]] = defaultdict(list)
    for edge in graph.edges:
        by_pair[frozenset((edge.source, edge.target))].append(edge)
    arrows: list[str] = []
    labels: list[str] = []
    for edge in graph.edges:
        siblings = by_pair[frozenset((edge.source, edge.target))]
        arrow, tag = _edge_svg(
            edge, boxes[edge.source], boxes[edge.target], siblings.index(edge), len(siblings)
        )
        arrows.extend(arrow)
        labels.extend(tag)
    parts.extend(['<g class="edges">', *arrows, "</g>", '<g class="nodes">'])
    for node in graph.nodes:
        parts.extend(_node_svg(node, boxes[node.id]))
    parts.extend(["</g>", '<g class="edge-labels">', *labels, "</g>"])
    if standalone:
        parts.extend(_legend_svg(legend_y))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def to_svg(graph: MemoryGraph) -> str:
    """A self-contained SVG picture of ``graph`` (with its legend), the same for the same graph.

    Rounded boxes coloured by record type hold the wrapped label; history records are grey with
    a dashed border; links are arrows labelled with their relation. Every text is XML-escaped.
    """
    return _svg(graph, standalone=True)


# --- HTML ------------------------------------------------------------------------------------------

_CSS: Final = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 24px 32px; background: #fafafa; color: #263238;
       font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
h1 { font-size: 20px; margin: 0 0 4px; }
p.stats { margin: 0 0 12px; color: #546e7a; font-size: 13px; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 6px 18px; padding: 0; margin: 0 0 14px;
            font-size: 12.5px; color: #37474f; }
ul.legend li { display: flex; align-items: center; gap: 7px; }
.swatch { display: inline-block; width: 22px; height: 14px; border-radius: 4px; border: 1.6px solid; }
.line { display: inline-block; width: 28px; height: 0; border-top: 2px solid; }
.graph { background: #ffffff; border: 1px solid #e0e0e0; border-radius: 8px; padding: 8px; overflow: auto; }
.graph svg { display: block; max-width: 100%; height: auto; }
details { margin-top: 14px; font-size: 13px; }
table { border-collapse: collapse; margin-top: 8px; }
td, th { border-bottom: 1px solid #e0e0e0; padding: 4px 10px; text-align: left; vertical-align: top; }
"""


def _legend_html() -> list[str]:
    items = []
    for name, colours in _TYPE_COLOURS.items():
        items.append(
            f'<li><span class="swatch" style="background:{colours.fill};border-color:{colours.stroke}"></span>'
            f"{name}</li>"
        )
    items.append(
        f'<li><span class="swatch" style="background:{_HISTORY.fill};border-color:{_HISTORY.stroke};'
        'border-style:dashed"></span>history (invalid: superseded, refined or duplicated)</li>'
    )
    for kind, text in _EDGE_LEGEND.items():
        style = "dashed" if kind == "contradicts" else "dotted" if kind == "other" else "solid"
        items.append(
            f'<li><span class="line" style="border-top-color:{_EDGE_COLOURS[kind]};border-top-style:{style}">'
            f"</span>{xml_escape(text)}</li>"
        )
    return ['<ul class="legend">', *items, "</ul>"]


def _links_table(graph: MemoryGraph) -> list[str]:
    labels = {node.id: node.label for node in graph.nodes}
    rows = [
        f"<tr><td>{xml_escape(labels[edge.source])}</td><td>{xml_escape(edge.relation_type)}</td>"
        f"<td>{xml_escape(labels[edge.target])}</td></tr>"
        for edge in graph.edges
    ]
    return [
        f"<details><summary>{len(graph.edges)} link{'s' if len(graph.edges) != 1 else ''} as text</summary>",
        "<table><thead><tr><th>source</th><th>relation</th><th>target</th></tr></thead><tbody>",
        *rows,
        "</tbody></table></details>",
    ]


def to_html(graph: MemoryGraph, *, title: str = "palimpsest memory graph") -> str:
    """One self-contained HTML page: the escaped ``title``, counts, a legend, the inline SVG and
    the links as a table. A content security policy forbids loading anything at all."""
    escaped_title = xml_escape(title)
    stats = (
        f"{len(graph.nodes)} memor{'ies' if len(graph.nodes) != 1 else 'y'} "
        f"({graph.current_count} current, {graph.history_count} history), "
        f"{len(graph.edges)} link{'s' if len(graph.edges) != 1 else ''}"
    )
    if graph.omitted:
        stats += f"; {graph.omission_note}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escaped_title}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{escaped_title}</h1>",
        f'<p class="stats">{stats}</p>',
        *_legend_html(),
        '<div class="graph">',
        _svg(graph, standalone=False).rstrip("\n"),
        "</div>",
        *_links_table(graph),
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"
