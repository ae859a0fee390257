"""run_demo: the three seed scenarios end to end, offline, on a new store; the pictures written."""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.bootstrap import NO_EXTRACTION
from palimpsest.adapters.cli import demo
from palimpsest.adapters.cli.demo import DEMO_STORE, GRAPH_FILES, run_demo
from palimpsest.adapters.cli.graph import collect_graph
from palimpsest.adapters.inmemory import InMemoryStore
from palimpsest.domain import MemoryRecord
from palimpsest.domain.errors import AgentMemoryError, ConfigurationError, ConflictError
from rich.console import Console


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """One demo run for the module: (folder, return code, console text)."""
    folder = tmp_path_factory.mktemp("demo") / "new-folder"
    console = Console(record=True, width=120, color_system=None)
    code = run_demo(folder, console)
    return folder, code, console.export_text()


def test_the_demo_succeeds_and_writes_the_three_pictures(demo_run: tuple[Path, int, str]) -> None:
    folder, code, text = demo_run
    assert code == 0
    for name in (DEMO_STORE, *GRAPH_FILES):
        assert (folder / name).is_file(), name
    ET.fromstring((folder / "memory_graph.svg").read_text(encoding="utf-8"))
    assert (folder / "memory_graph.mmd").read_text(encoding="utf-8").startswith("flowchart TB\n")
    page = (folder / "memory_graph.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page and "<script" not in page
    for name in GRAPH_FILES:
        assert str(folder / name) in text.replace("\n", "")


def test_the_demo_prints_maya_s_card_and_tail(demo_run: tuple[Path, int, str]) -> None:
    _, _, text = demo_run
    assert "<context_card>" in text and "</context_card>" in text
    assert "The user&apos;s name is Maya." in text  # the card, escaped as in the prompt
    assert "ledger enrichment" in text
    assert "except_last_messages=3, max_recent_messages=0" in text
    assert "raw tail (3 messages)" in text
    assert "What workflow am I migrating" in text


def test_the_demo_prints_the_customised_card(demo_run: tuple[Path, int, str]) -> None:
    _, _, text = demo_run
    assert "with minimums preference=1, guideline=1, message=1" in text
    assert "<preference>" in text and "<guideline>" in text and "<message>" in text
    assert "The user prefers vegetarian restaurants." in text
    assert "Keep recommendations concise, with clear tradeoffs." in text


def test_the_demo_prints_the_linked_pizza_results(demo_run: tuple[Path, int, str]) -> None:
    _, _, text = demo_run
    tree = text[text.index("2-hop search") :]
    current = tree.index("[current] The user's preferred pizza style is sourdough, especially Neapolitan")
    refined = tree.index("refines -> preference [history] The user now prefers sourdough pizza.")
    superseded = tree.index(
        "supersedes -> preference [history] The user's preferred pizza style is thin crust."
    )
    assert current < refined < superseded
    assert "<relation_type>supersedes</relation_type>" in text
    assert "created by hand" not in text  # the offline rule link resolver found both links


def test_the_demo_names_the_search_it_ran(demo_run: tuple[Path, int, str]) -> None:
    _, _, text = demo_run
    line = next(line for line in text.splitlines() if line.startswith("Search used "))
    with open_memory() as defaults:  # the demo's client: open_memory's offline defaults
        expected = demo._search_mode(defaults).split(":")[0]
    assert line.startswith(f"Search used {expected}")


def test_the_search_line_says_what_the_client_s_strategy_does() -> None:
    with build_client(store=InMemoryStore(), embedder=HashingEmbedder(8)) as hybrid:
        assert demo._search_mode(hybrid) == (
            "hybrid search: embeddings computed locally and BM25 keywords, "
            "absolute fusion with a dense weight of 0.5."
        )
        hybrid.add_memory("a vector fixes the dimension", user_id="u")
        assert demo._search_mode(hybrid).startswith("hybrid search: 8-dimensional embeddings computed locally")
    with build_client(store=InMemoryStore(), embedder=HashingEmbedder(8), search_strategy="vector") as vector:
        assert demo._search_mode(vector) == "vector search over embeddings computed locally."
    with build_client(store=InMemoryStore()) as keyword:
        assert demo._search_mode(keyword).startswith("keyword (BM25) search only")


def test_the_demo_store_holds_the_pizza_graph(demo_run: tuple[Path, int, str]) -> None:
    folder, _, _ = demo_run
    with open_memory(folder / DEMO_STORE, extractor=None) as memory:
        graph = collect_graph(memory, user_id="graph-demo-user")
    labels = {node.id: node.label for node in graph.nodes}
    chain = {(labels[e.source], e.relation_type, labels[e.target]) for e in graph.edges}
    assert chain == {
        (
            "The user now prefers sourdough pizza.",
            "supersedes",
            "The user's preferred pizza style is thin crust.",
        ),
        (
            "The user's preferred pizza style is sourdough, especially Neapolitan sourdough.",
            "refines",
            "The user now prefers sourdough pizza.",
        ),
    }
    assert graph.history_count == 2


def test_a_second_run_in_the_same_folder_is_refused(demo_run: tuple[Path, int, str]) -> None:
    folder, _, _ = demo_run
    with pytest.raises(ConflictError, match="already exists"):
        run_demo(folder, Console(record=True, width=120))


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError):
        run_demo(tmp_path / "file", Console(record=True, width=120))


def test_without_a_folder_the_demo_makes_a_new_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = demo._prepare_folder(None)
    assert made.parent == tmp_path and made.name.startswith("palimpsest-demo-") and made.is_dir()
    assert demo._prepare_folder(None) != made  # a new one each time


def test_untrusted_text_is_printed_literally() -> None:
    """Cards and memories may contain console markup: it must be shown, not interpreted."""
    console = Console(record=True, width=120, color_system=None)
    hostile = "[bold red]boom[/bold red] [link=file:///etc/passwd]x[/link] <a>&amp;</a>"
    console.print(demo._xml_panel(hostile, "card"))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    record = MemoryRecord(id="m1", record_type="memory", content=hostile, created_at=now, updated_at=now)
    console.print(demo._records_table("records", [record]))
    text = console.export_text()
    assert text.count("[bold red]boom[/bold red]") == 2
    assert text.count("[link=file:///etc/passwd]") == 2


def test_demo_errors_are_agent_memory_errors() -> None:
    assert issubclass(ConflictError, AgentMemoryError) and issubclass(ConfigurationError, AgentMemoryError)


def test_the_second_card_holds_none_of_the_first_scenarios_facts(demo_run: tuple[Path, int, str]) -> None:
    """Seed 002 is another user's conversation: Maya's workflow, failing step and name (seed
    001) are not in its card, neither as printed nor when the card is built again."""
    folder, _, text = demo_run
    second = text[text.index("(seed 002)") : text.index("(seed 004)")]
    maya = ("Maya", "ledger", "invoice", "reconciliation", "LangGraph")
    assert not [word for word in maya if word.lower() in second.lower()]
    memory = open_memory(folder / DEMO_STORE, profile="inspect")  # the embedder that made the vectors
    try:
        thread = memory.get_thread(demo.CARD_THREAD, memory_extraction_config=NO_EXTRACTION)
        card = thread.get_context_card(
            max_relevant_results=demo.CARD_MAX_RESULTS, min_relevant_results_by_type=demo.CARD_MINIMUMS
        )
        assert card.relevant_results
        assert all(result.record.user_id == thread.user_id for result in card.relevant_results)
        assert not [word for word in maya if word.lower() in card.content.lower()]
        assert thread.user_id != demo.MAYA_USER
    finally:
        memory.close()
