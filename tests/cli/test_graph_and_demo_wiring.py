"""The graph and demo commands hand their work to ``palimpsest.adapters.cli.graph`` and ``.demo``.

The graph command is checked against the graph module itself (its output must be exactly what
the module's functions return for the same store); a recording stand-in module takes its place
only where the real one does not exist. The demo runs for seconds, so its ``run_demo`` is
replaced by a recorder: these tests are about the wiring, the modules have their own tests.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from rich.console import Console

from .conftest import Invoke, Seeded
from .helpers import one_line_error

GRAPH = "palimpsest.adapters.cli.graph"
DEMO = "palimpsest.adapters.cli.demo"


def _stand_in_graph() -> ModuleType:
    module = ModuleType(GRAPH)

    def collect_graph(
        memory: Any, *, user_id: str | None = None, agent_id: str | None = None, limit: int | None = 10_000
    ) -> Any:
        records = tuple(r.id for r in memory.list_memories())
        return SimpleNamespace(omitted=0, records=records, scope=(user_id, agent_id))

    module.GRAPH_RECORD_LIMIT = 10_000  # type: ignore[attr-defined]
    module.log = logging.getLogger(GRAPH)  # type: ignore[attr-defined]
    module.collect_graph = collect_graph  # type: ignore[attr-defined]
    module.to_mermaid = lambda graph: f"mermaid {graph}"  # type: ignore[attr-defined]
    module.to_html = lambda graph, *, title: f"<html>{title} {graph}</html>"  # type: ignore[attr-defined]
    module.to_svg = lambda graph: f"<svg>{graph}</svg>"  # type: ignore[attr-defined]
    return module


@pytest.fixture
def graph_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    try:
        yield importlib.import_module(GRAPH)
    except ModuleNotFoundError as exc:
        if exc.name != GRAPH:
            raise
        module = _stand_in_graph()
        monkeypatch.setitem(sys.modules, GRAPH, module)
        yield module


@pytest.fixture
def demo_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path | None, Console]]:
    """Every call the command makes to ``run_demo`` (which returns 3 here)."""
    calls: list[tuple[Path | None, Console]] = []

    def run_demo(folder: Path | None, console: Console) -> int:
        calls.append((folder, console))
        console.print("demo ran")
        return 3

    try:
        module = importlib.import_module(DEMO)
    except ModuleNotFoundError as exc:
        if exc.name != DEMO:
            raise
        module = ModuleType(DEMO)
        monkeypatch.setitem(sys.modules, DEMO, module)
    monkeypatch.setattr(module, "run_demo", run_demo, raising=False)
    return calls


def _expected(module: ModuleType, seeded: Seeded, render: str, **scope: str | None) -> str:
    with open_memory(seeded.path, embedder=HashingEmbedder()) as memory:
        graph = module.collect_graph(memory, user_id=scope.get("user_id"), agent_id=scope.get("agent_id"))
    if render == "html":
        return str(module.to_html(graph, title=scope.get("title") or "palimpsest memory graph"))
    return str(getattr(module, f"to_{render}")(graph))


def test_graph_prints_the_mermaid_of_every_record_by_default(
    invoke: Invoke, seeded: Seeded, graph_module: ModuleType
) -> None:
    result = invoke("--store", seeded.store, "graph")
    assert result.exit_code == 0, result.output
    expected = _expected(graph_module, seeded, "mermaid")
    assert result.stdout.rstrip("\n") == expected.rstrip("\n")


def test_graph_scopes_and_formats(
    invoke: Invoke, seeded: Seeded, graph_module: ModuleType, tmp_path: Path
) -> None:
    svg = invoke("--store", seeded.store, "graph", "--user", "u1", "--format", "svg")
    assert svg.exit_code == 0, svg.output
    assert svg.stdout.rstrip("\n") == _expected(graph_module, seeded, "svg", user_id="u1").rstrip("\n")

    page = tmp_path / "graph.html"
    html = invoke(
        "--store", seeded.store, "graph", "--user", "u2", "--agent", "a1", "--format", "html", "-o", str(page)
    )
    assert html.exit_code == 0, html.output
    assert html.stdout == ""
    assert f"wrote the html graph to {page}" in html.stderr
    title = "palimpsest memory graph (user u2, agent a1)"
    assert page.read_text(encoding="utf-8") == _expected(
        graph_module, seeded, "html", user_id="u2", agent_id="a1", title=title
    )


def test_graph_does_not_overwrite_a_file_without_force(
    invoke: Invoke, seeded: Seeded, graph_module: ModuleType, tmp_path: Path
) -> None:
    target = tmp_path / "graph.mmd"
    target.write_text("keep me\n", encoding="utf-8")
    result = invoke("--store", seeded.store, "graph", "-o", str(target))
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == f"error: {target} exists; pass --force to overwrite it."
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert invoke("--store", seeded.store, "graph", "-o", str(target), "--force").exit_code == 0
    assert target.read_text(encoding="utf-8") == _expected(graph_module, seeded, "mermaid")


def test_graph_output_errors_are_one_line(
    invoke: Invoke, seeded: Seeded, graph_module: ModuleType, tmp_path: Path
) -> None:
    result = invoke("--store", seeded.store, "graph", "-o", str(tmp_path / "no" / "such" / "folder.mmd"))
    assert result.exit_code == 1
    assert "No such file or directory" in one_line_error(result.stderr)
    assert invoke("--store", seeded.store, "graph", "--format", "png").exit_code == 2


def test_demo_hands_the_folder_and_a_console_to_run_demo(
    invoke: Invoke, demo_calls: list[tuple[Path | None, Console]], tmp_path: Path
) -> None:
    result = invoke("demo", "--folder", str(tmp_path / "demo"))
    assert result.exit_code == 3  # run_demo's return code
    assert "demo ran" in result.stdout
    ((folder, console),) = demo_calls
    assert folder == tmp_path / "demo" and isinstance(console, Console)


def test_demo_defaults_to_a_new_temporary_folder_chosen_by_run_demo(
    invoke: Invoke, demo_calls: list[tuple[Path | None, Console]]
) -> None:
    result = invoke("demo")
    assert result.exit_code == 3
    assert demo_calls[0][0] is None


def test_demo_needs_no_store(
    invoke: Invoke, demo_calls: list[tuple[Path | None, Console]], tmp_path: Path
) -> None:
    result = invoke("--store", str(tmp_path / "missing.db"), "demo")
    assert result.exit_code == 3
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(("module", "command"), [(GRAPH, ["graph"]), (DEMO, ["demo"])])
def test_a_missing_module_is_a_one_line_error(
    invoke: Invoke, seeded: Seeded, monkeypatch: pytest.MonkeyPatch, module: str, command: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    result = invoke("--store", seeded.store, *command)
    assert result.exit_code == 1
    assert f"the {command[0]}" in one_line_error(result.stderr)
    assert "not available in this installation" in result.stderr


def test_graph_with_a_limit_draws_the_newest_records_and_notes_how_many_were_left_out(
    invoke: Invoke, seeded: Seeded
) -> None:
    from palimpsest.adapters.cli.graph import collect_graph, to_mermaid

    with open_memory(seeded.path, embedder=HashingEmbedder()) as memory:
        total = len(memory.list_memories())
        expected = to_mermaid(collect_graph(memory, limit=2))
    assert total > 2

    limited = invoke("--store", seeded.store, "graph", "--limit", "2")
    assert limited.exit_code == 0, limited.output
    assert limited.stdout == expected
    note = (
        f"note: the graph shows the newest 2 of {total} memory records; the {total - 2} oldest are left "
        "out; --limit 0 draws every record."
    )
    assert limited.stderr.splitlines() == [note]  # once: the library's warning is not printed again

    everything = invoke("--store", seeded.store, "graph", "--limit", "0")
    assert everything.exit_code == 0, everything.output
    assert everything.stderr == ""
    assert everything.stdout.count('("') == total  # one node per record
