"""The HTML page in a real browser: headless Chromium renders it to a PNG that shows the graph.

Skipped when no Chromium is installed. The screenshot is decoded with the standard library and
checked by its colours: every record type's fill, the grey history boxes below the current
ones, and the edge colours of the arrows and their labels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter

import pytest
from graph_demo_support import decode_png, make_pizza_graph
from palimpsest.adapters.cli.graph import to_html

WIDTH, HEIGHT = 1200, 900

FILLS = {
    "memory": (0xE3, 0xF2, 0xFD),
    "fact": (0xE8, 0xF5, 0xE9),
    "guideline": (0xFF, 0xF3, 0xE0),
    "preference": (0xF3, 0xE5, 0xF5),
    "history": (0xF5, 0xF5, 0xF5),
}
LIFECYCLE_EDGE = (0x45, 0x5A, 0x64)
SUPPORTS_EDGE = (0x2E, 0x7D, 0x32)
OTHER_EDGE = (0x6D, 0x4C, 0x41)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int], tolerance: int = 10) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


def _graph_panel(width: int, pixels: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The pixels of the rows of the white panel holding the SVG (the page around it and the
    legend are off-white), so that the legend's own lines and swatches do not count."""
    white = (255, 255, 255)
    rows = [
        r
        for r in range(len(pixels) // width)
        if pixels[r * width : (r + 1) * width].count(white) > width // 3
    ]
    assert rows, "no graph panel in the screenshot"
    return pixels[rows[0] * width : (rows[-1] + 1) * width]


@pytest.fixture(scope="module")
def screenshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, int, list[tuple[int, int, int]]]:
    """The page of :func:`make_pizza_graph` as Chromium draws it, decoded (one browser run)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (chromium or chromium-browser on PATH)")
    tmp_path = tmp_path_factory.mktemp("chromium")
    page = tmp_path / "memory_graph.html"
    page.write_text(to_html(make_pizza_graph()), encoding="utf-8")
    png = tmp_path / "memory_graph.png"
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            f"--window-size={WIDTH},{HEIGHT}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert png.is_file(), f"Chromium wrote no screenshot (exit {result.returncode}):\n{result.stderr[-2000:]}"
    return decode_png(png.read_bytes())


def test_the_page_renders_nodes_and_labelled_edges(
    screenshot: tuple[int, int, list[tuple[int, int, int]]],
) -> None:
    width, height, pixels = screenshot
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(Counter(pixels)) >= 50, "the screenshot is (nearly) blank"
    panel = Counter(_graph_panel(width, pixels))
    for name, fill in FILLS.items():
        assert panel[fill] >= 3000, f"no {name} box visible ({panel[fill]} pixels of its fill)"
    for name, colour in (
        ("lifecycle", LIFECYCLE_EDGE),
        ("supports", SUPPORTS_EDGE),
        ("custom relation", OTHER_EDGE),
    ):
        drawn = sum(n for pixel, n in panel.items() if _near(pixel, colour))
        assert drawn >= 100, f"no {name} arrow or label visible ({drawn} pixels)"


def test_history_is_drawn_below_the_current_preference(
    screenshot: tuple[int, int, list[tuple[int, int, int]]],
) -> None:
    width, _, pixels = screenshot

    def mean_row(colour: tuple[int, int, int]) -> float:
        rows = [index // width for index, pixel in enumerate(pixels) if pixel == colour]
        return sum(rows) / len(rows)

    assert mean_row(FILLS["history"]) > mean_row(FILLS["preference"]) + 50
