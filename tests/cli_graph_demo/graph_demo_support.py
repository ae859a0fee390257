"""Constants and helpers shared by the memory-graph and demo tests (imported as a top-level module)."""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, datetime, timedelta

from palimpsest.adapters.cli.graph import GraphEdge, GraphNode, MemoryGraph

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

EVIL_MERMAID = '"]); click X call evil() %%'
EVIL_MARKUP = "</svg><script>alert(1)</script>"
HOSTILE = f"{EVIL_MERMAID}\n`code` #1; [x] {{y}} <b>&amp; {EVIL_MARKUP}"
"""Memory text trying to leave a Mermaid label, an SVG text node and an HTML page."""


def make_node(
    index: int, record_type: str, label: str, status: str = "valid", node_id: str | None = None
) -> GraphNode:
    return GraphNode(
        id=node_id or f"rec-{index}",
        record_type=record_type,
        label=label,
        status=status,
        created_at=START + timedelta(minutes=index),
    )


def make_pizza_graph() -> MemoryGraph:
    """Seed 004's chain, a supports link between two current records, an unlinked guideline and
    a memory whose text (and id) is hostile to every output format."""
    return MemoryGraph(
        nodes=(
            make_node(
                0,
                "preference",
                "The user's preferred pizza style is thin crust.",
                "invalid",
                "pizza-thin-crust",
            ),
            make_node(1, "preference", "The user now prefers sourdough pizza.", "invalid", "pizza-sourdough"),
            make_node(
                2,
                "preference",
                "The user's preferred pizza style is sourdough, especially Neapolitan sourdough.",
                node_id="pizza-neapolitan-sourdough",
            ),
            make_node(3, "fact", "The user avoids meat and fish."),
            make_node(4, "preference", "The user prefers vegetarian restaurants."),
            make_node(5, "guideline", "Offer concise recommendations with clear tradeoffs."),
            make_node(6, "memory", HOSTILE, node_id='evil"><script>alert(2)</script>'),
        ),
        edges=(
            GraphEdge("link-1", "pizza-sourdough", "pizza-thin-crust", "supersedes"),
            GraphEdge("link-2", "pizza-neapolitan-sourdough", "pizza-sourdough", "refines"),
            GraphEdge("link-3", "rec-3", "rec-4", "supports"),
            GraphEdge("link-4", 'evil"><script>alert(2)</script>', "rec-5", 'contradicts"]-->|x|'),
        ),
    )


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """(width, height, RGB pixels row by row) of an 8-bit, non-interlaced RGB or RGBA PNG, with
    the standard library only (zlib and struct)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    position, header, compressed = 8, b"", bytearray()
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            compressed += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(bytes(compressed))
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for row in range(height):
        kind = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1 : (row + 1) * (stride + 1)])
        _unfilter(kind, line, previous, channels)
        pixels.extend(zip(line[0::channels], line[1::channels], line[2::channels]))
        previous = line
    return width, height, pixels


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    if kind == 2:  # up
        line[:] = bytes((a + b) & 0xFF for a, b in zip(line, previous))
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 1:  # sub
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:  # average
            line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            corner = previous[i - bpp] if i >= bpp else 0
            estimate = left + up - corner
            pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
            predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + predictor) & 0xFF
        else:
            raise ValueError(f"bad PNG filter type {kind}")
