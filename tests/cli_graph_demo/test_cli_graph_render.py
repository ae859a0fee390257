"""Mermaid, SVG and HTML renderings of a memory graph: structure, escaping, self-containment, determinism."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from graph_demo_support import EVIL_MARKUP, EVIL_MERMAID
from palimpsest.adapters.cli.graph import (
    MemoryGraph,
    mermaid_escape,
    to_html,
    to_mermaid,
    to_svg,
    xml_escape,
)

SVG = "{http://www.w3.org/2000/svg}"

# --- Mermaid ---------------------------------------------------------------------------------------

_MERMAID_LINES = (
    re.compile(r"flowchart TB"),
    re.compile(r"    classDef [a-z]+ [a-z\-]+:[#0-9a-z]+(,[a-z\-]+:[#0-9a-z ]+)*"),
    re.compile(r'    n\d+\("(?P<label>[^"]*)"\)'),
    re.compile(r'    n\d+ (-->|-\.->)\|"(?P<label>[^"]*)"\| n\d+'),
    re.compile(r"    linkStyle \d+ stroke:#[0-9a-f]{6}"),
    re.compile(r"    class n\d+ [a-z]+"),
)


def _mermaid_statements(text: str) -> list[re.Match[str]]:
    """Every line must be one of the statements we emit; labels must hold no syntax character."""
    assert text.endswith("\n")
    matches = []
    for line in text.splitlines():
        match = next((m for pattern in _MERMAID_LINES if (m := pattern.fullmatch(line))), None)
        assert match is not None, f"unexpected Mermaid line: {line!r}"
        label = match.groupdict().get("label")
        if label is not None:
            bare = re.sub(r"#\d+;", "", label)  # entity codes are the only allowed escapes
            assert not set(bare) & set('"[](){}<>;#%|`\n\r&'), f"syntax character in label {label!r}"
        matches.append(match)
    return matches


def test_mermaid_is_a_flowchart_with_one_node_per_record_and_labelled_edges(pizza_graph: MemoryGraph) -> None:
    text = to_mermaid(pizza_graph)
    statements = _mermaid_statements(text)
    nodes = [
        m
        for m in statements
        if m.group(0).lstrip().startswith("n") and "(" in m.group(0) and "|" not in m.group(0)
    ]
    edges = [m for m in statements if "|" in m.group(0)]
    assert text.startswith("flowchart TB\n")
    assert len(nodes) == len(pizza_graph.nodes)
    assert len(edges) == len(pizza_graph.edges)
    assert '    n1 -->|"supersedes"| n0' in text.splitlines()
    assert '    n2 -->|"refines"| n1' in text.splitlines()
    assert '    n3 -.->|"supports"| n4' in text.splitlines()
    assert "classDef history" in text and "stroke-dasharray:5 5" in text
    assert "    class n0 history" in text and "    class n1 history" in text
    assert "    class n2 preference" in text and "    class n5 guideline" in text
    assert 'n0("preference, history: The user\'s preferred pizza style is thin crust.")' in text


def test_hostile_text_cannot_leave_a_mermaid_label(pizza_graph: MemoryGraph) -> None:
    text = to_mermaid(pizza_graph)
    _mermaid_statements(text)  # every line is still one of ours
    assert EVIL_MERMAID not in text and EVIL_MARKUP not in text
    assert not any(line.lstrip().startswith(("click", "%%", "<")) for line in text.splitlines())
    assert "script" in text  # the words are still there, only their syntax is gone
    # Record ids never reach the Mermaid text: nodes are numbered.
    assert "alert(2)" not in text


@pytest.mark.parametrize("ch", list('"[](){}<>;#%|`&\n\r\t\u2028\u202e'))
def test_mermaid_escape_encodes_every_syntax_character(ch: str) -> None:
    assert mermaid_escape(f"a{ch}b") == f"a#{ord(ch)};b"


def test_mermaid_escape_keeps_plain_text_readable() -> None:
    assert mermaid_escape("Alice's café, 2 pizzas: yes/no?") == "Alice's café, 2 pizzas: yes/no?"


# --- SVG -------------------------------------------------------------------------------------------


def _nodes_by_id(root: ET.Element) -> dict[str, ET.Element]:
    return {g.attrib["data-record-id"]: g for g in root.iter(f"{SVG}g") if "data-record-id" in g.attrib}


def test_svg_is_well_formed_and_draws_every_node_and_edge(pizza_graph: MemoryGraph) -> None:
    root = ET.fromstring(to_svg(pizza_graph))
    assert root.tag == f"{SVG}svg"
    nodes = _nodes_by_id(root)
    assert set(nodes) == {node.id for node in pizza_graph.nodes}
    edges = [g for g in root.iter(f"{SVG}g") if "data-link-id" in g.attrib]
    assert [g.attrib["data-link-id"] for g in edges] == [edge.id for edge in pizza_graph.edges]
    labels = {g.attrib["data-label-of"]: g for g in root.iter(f"{SVG}g") if "data-label-of" in g.attrib}
    for group, edge in zip(edges, pizza_graph.edges, strict=True):
        path = group.find(f"{SVG}path")
        assert path is not None and path.attrib["marker-end"].startswith("url(#pg-arrow-")
        label = labels[edge.id].find(f"{SVG}text")
        assert label is not None and label.text == edge.relation_type
    history = nodes["pizza-thin-crust"].find(f"{SVG}rect")
    current = nodes["pizza-neapolitan-sourdough"].find(f"{SVG}rect")
    assert history is not None and current is not None
    assert "stroke-dasharray" in history.attrib and "stroke-dasharray" not in current.attrib
    assert history.attrib["fill"] == "#f5f5f5" and current.attrib["fill"] == "#f3e5f5"
    assert "history" in nodes["pizza-thin-crust"].attrib["class"]
    fills = {nodes[n].find(f"{SVG}rect").attrib["fill"] for n in ("rec-3", "rec-5")}  # type: ignore[union-attr]
    assert len(fills) == 2  # a fact and a guideline are coloured apart


def test_svg_lays_history_out_below_what_replaced_it(pizza_graph: MemoryGraph) -> None:
    nodes = _nodes_by_id(ET.fromstring(to_svg(pizza_graph)))

    def top(node_id: str) -> float:
        rect = nodes[node_id].find(f"{SVG}rect")
        assert rect is not None
        return float(rect.attrib["y"])

    def box(node_id: str) -> tuple[float, float, float, float]:
        rect = nodes[node_id].find(f"{SVG}rect")
        assert rect is not None
        x, y = float(rect.attrib["x"]), float(rect.attrib["y"])
        return x, y, x + float(rect.attrib["width"]), y + float(rect.attrib["height"])

    assert top("pizza-neapolitan-sourdough") < top("pizza-sourdough") < top("pizza-thin-crust")
    boxes = [box(node_id) for node_id in nodes]
    for i, a in enumerate(boxes):  # no two boxes overlap
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def test_svg_escapes_memory_text_and_ids(pizza_graph: MemoryGraph) -> None:
    text = to_svg(pizza_graph)
    assert "<script" not in text and EVIL_MARKUP not in text
    root = ET.fromstring(text)
    assert not [
        e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("script", "foreignObject", "a", "image")
    ]
    evil = _nodes_by_id(root)['evil"><script>alert(2)</script>']
    title = evil.find(f"{SVG}title")
    assert title is not None and title.text is not None and EVIL_MARKUP in title.text  # shown as text
    shown = " ".join(t.text or "" for t in evil.iter(f"{SVG}tspan"))
    assert "<" in shown and "&lt;" not in shown  # the parsed text is the memory's own text
    assert len(list(evil.iter(f"{SVG}tspan"))) <= 4  # wrapped, at most four lines


def test_svg_survives_characters_xml_cannot_hold(graph_factory: Callable[..., MemoryGraph]) -> None:
    graph = graph_factory([("memory", "bell \x07 nul \x00 \ud800 end", "valid")], [])
    root = ET.fromstring(to_svg(graph))
    assert "end" in " ".join(t.text or "" for t in root.iter(f"{SVG}tspan"))
    assert xml_escape("a\x00b<") == "a\ufffdb&lt;"


def test_an_empty_graph_still_draws(graph_factory: Callable[..., MemoryGraph]) -> None:
    root = ET.fromstring(to_svg(graph_factory([], [])))
    assert "No memories" in "".join(root.itertext())
    assert "0 memories" in to_html(graph_factory([], []))


def test_parallel_links_and_arcs_are_drawn_apart(graph_factory: Callable[..., MemoryGraph]) -> None:
    graph = graph_factory(
        [
            ("fact", "Bob is Alice's colleague.", "invalid"),
            ("fact", "Bob is Alice's manager.", "valid"),
            ("preference", "Trains.", "valid"),
            ("preference", "No flights.", "valid"),
            ("memory", "Hates trains.", "valid"),
        ],
        [(1, 0, "supersedes"), (1, 0, "reports_to"), (3, 2, "supports"), (4, 2, "contradicts")],
    )
    root = ET.fromstring(to_svg(graph))
    paths = [g.find(f"{SVG}path") for g in root.iter(f"{SVG}g") if "data-link-id" in g.attrib]
    assert len({p.attrib["d"] for p in paths if p is not None}) == 4
    labels = [g.find(f"{SVG}rect") for g in root.iter(f"{SVG}g") if "data-label-of" in g.attrib]
    positions = {(r.attrib["x"], r.attrib["y"]) for r in labels if r is not None}
    assert len(positions) == 4
    arcs = [p.attrib["d"] for p in paths if p is not None and " Q" in p.attrib["d"]]
    assert len(arcs) == 2  # records side by side are joined over their tops


def test_long_text_is_wrapped_and_cut(graph_factory: Callable[..., MemoryGraph]) -> None:
    graph = graph_factory([("memory", "A" * 300, "valid"), ("fact", "word " * 80, "valid")], [])
    root = ET.fromstring(to_svg(graph))
    for group in _nodes_by_id(root).values():
        lines = [t.text or "" for t in group.iter(f"{SVG}tspan")]
        assert 1 < len(lines) <= 4 and lines[-1].endswith("…")


# --- HTML ------------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_is_self_contained(pizza_graph: MemoryGraph) -> None:
    page = to_html(pizza_graph)
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower() and "@import" not in page
    assert re.findall(r"url\(([^)]*)\)", page) and all(
        u.startswith("#pg-arrow-") for u in re.findall(r"url\(([^)]*)\)", page)
    )
    parser = _Tags()
    parser.feed(page)
    names = [tag for tag, _ in parser.tags]
    assert names.count("svg") == 1 and names.count("style") == 1
    assert not set(names) & {
        "script",
        "link",
        "img",
        "iframe",
        "object",
        "embed",
        "image",
        "foreignobject",
        "a",
    }
    assert not [attrs for _, attrs in parser.tags if {"src", "href", "xlink:href"} & set(attrs)]
    assert any(
        tag == "meta" and "default-src 'none'" in (attrs.get("content") or "") for tag, attrs in parser.tags
    )
    for kind in (
        "memory",
        "fact",
        "guideline",
        "preference",
        "history",
        "supersedes",
        "supports",
        "contradicts",
    ):
        assert kind in page  # the legend
    assert "7 memories (5 current, 2 history), 4 links" in page


def test_html_escapes_the_title_and_memory_text(pizza_graph: MemoryGraph) -> None:
    page = to_html(pizza_graph, title='<script>alert("title")</script> & co')
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt; &amp; co" in page
    assert EVIL_MARKUP not in page and "<b>" not in page
    assert page.count("<svg") == 1 and page.count("</svg>") == 1


# --- determinism -----------------------------------------------------------------------------------


def test_the_same_graph_gives_the_same_output(pizza_graph: MemoryGraph) -> None:
    copy = MemoryGraph(
        nodes=tuple(replace(n) for n in pizza_graph.nodes), edges=tuple(replace(e) for e in pizza_graph.edges)
    )
    for render in (to_mermaid, to_svg, to_html):
        assert render(pizza_graph) == render(pizza_graph) == render(copy)  # type: ignore[operator]


def test_a_big_graph_stays_within_a_screen_wide_picture(graph_factory: Callable[..., MemoryGraph]) -> None:
    nodes = [("preference", "The user likes trains.", "valid")]
    nodes += [("fact", f"Evidence number {i} for trains.", "valid") for i in range(12)]
    nodes += [("memory", f"Unrelated note {i}.", "valid") for i in range(15)]
    graph = graph_factory(nodes, [(i, 0, "supports") for i in range(1, 13)])
    root = ET.fromstring(to_svg(graph))
    width = float(root.attrib["width"])
    assert width <= 1200
    rights = [
        float(r.attrib["x"]) + float(r.attrib["width"])
        for g in _nodes_by_id(root).values()
        if (r := g.find(f"{SVG}rect")) is not None
    ]
    assert len(rights) == 28 and max(rights) <= width
