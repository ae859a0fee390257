"""Adapters layer (command line): ``palimpsest demo``, the three seed scenarios end to end, offline.

:func:`run_demo` opens the embedded store ``demo.db`` in a folder with ``open_memory``'s offline
defaults (the MiniLM embedder when its weights are installed, the heuristic extractor, TextRank
summaries and the rule link resolver) and plays, as a person would like to watch them:

1. Maya's short-term compaction (seed 001): her conversation is persisted turn by turn to a
   thread, facts are extracted from it, and the prompt is compacted into a context card plus
   the raw tail of the last messages (the external-tail pattern);
2. context-card customisation (seed 002): another user's card with per-type minimums, which
   keep a preference, a guideline and a message in the card although facts are plentiful;
3. the linked pizza preferences (seed 004): said in conversation, "thin crust" is superseded by
   "sourdough", which "Neapolitan sourdough" refines; a 2-hop search returns the current
   preference with the history it replaced.

It then draws the store's memory graph into ``memory_graph.html``, ``memory_graph.svg`` and
``memory_graph.mmd`` in the folder and prints where they are. The scenarios follow
``examples/short_term_context_card.py``, ``examples/customize_context_card.py`` and
``examples/offline_extraction.py``. Memory text, cards and messages are untrusted: they are
printed as plain text or highlighted XML, never interpreted as console markup.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from palimpsest.adapters import open_memory
from palimpsest.application import (
    AgentMemory,
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OracleSearchResultFormatConfig,
    SearchResult,
)
from palimpsest.domain import MemoryRecord, Message
from palimpsest.domain.errors import ConfigurationError, ConflictError, StorageError
from palimpsest.domain.search import Fusion
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from .graph import MemoryGraph, collect_graph, to_html, to_mermaid, to_svg

__all__ = ["DEMO_STORE", "GRAPH_FILES", "run_demo"]

DEMO_STORE: Final = "demo.db"
"""The store file the demo creates in its folder."""

GRAPH_FILES: Final = ("memory_graph.html", "memory_graph.svg", "memory_graph.mmd")
"""The pictures of the memory graph written next to the store."""

# --- seed 001: Maya ------------------------------------------------------------------------------

MAYA_THREAD: Final = "langgraph_short_term_demo"
MAYA_USER: Final = "user_123"
MAYA_AGENT: Final = "assistant_456"
KEPT_MESSAGE_COUNT: Final = 3
"""The raw tail the seed's middleware keeps after the card (``kept_message_count``)."""

MAYA_TURNS: Final = (
    (
        "I'm Maya. I'm migrating our nightly invoice reconciliation workflow from cron jobs to LangGraph.",
        "Nice to meet you, Maya. Moving invoice reconciliation to LangGraph makes the steps easier to observe.",
    ),
    (
        "The failing step right now is ledger enrichment after reconciliation.",
        "Ledger enrichment failing after reconciliation often means a lookup times out.",
    ),
    (
        "What workflow am I migrating, which step is failing, and who am I?",
        "You're Maya, migrating the nightly invoice reconciliation workflow, and ledger enrichment is failing.",
    ),
)
"""The seed's three user turns, each with the kind of reply its agent gives."""

# --- seed 002: card customisation --------------------------------------------------------------

CARD_THREAD: Final = "context_card_customization_demo"
CARD_USER: Final = "user_789"
"""The user of seed 002: not Maya, so that this card holds none of her conversation's facts."""
CARD_AGENT: Final = "assistant_789"
CARD_INSTRUCTIONS: Final = (
    "Extract restaurant preferences as preference records and assistant "
    "response-style instructions as guideline records."
)
CARD_MESSAGES: Final = (
    ("user", "I need vegetarian dinner recommendations for Friday."),
    ("assistant", "I can compare concise options and tradeoffs."),
    ("user", "I prefer vegetarian restaurants. Please keep recommendations concise, with clear tradeoffs."),
    ("user", "I'm comparing pizza places for Friday."),
)
"""The seed's two messages, then the user saying what its sample card shows was extracted."""

CARD_MINIMUMS: Final = {"preference": 1, "guideline": 1, "message": 1}
CARD_MAX_RESULTS: Final = 6

# --- seed 004: pizza ---------------------------------------------------------------------------

PIZZA_THREAD: Final = "pizza-preferences"
PIZZA_USER: Final = "graph-demo-user"
PIZZA_TURNS: Final = (
    "My preferred pizza style is thin crust.",
    "I now prefer sourdough pizza.",
    "My preferred pizza style is sourdough, especially Neapolitan sourdough.",
)
PIZZA_QUERY: Final = "What pizza should I recommend?"
PIZZA_CHAIN: Final = (
    ("now prefers sourdough", "supersedes", "thin crust"),
    ("neapolitan", "refines", "now prefers sourdough"),
)
"""The links the scenario expects, as (source text, relation, target text), matched case-blind."""

FORMAT_CONFIG: Final = OracleSearchResultFormatConfig(
    include_invalid_results=True, show_timestamp=False, show_role=False, show_status=True
)


def run_demo(folder: Path | None, console: Console) -> int:
    """Run the three seed scenarios on a new store in ``folder`` (a new temporary folder when
    ``None``), print them to ``console`` and write the graph pictures there; returns 0.

    Raises ``ConflictError`` when the folder already holds a demo store, ``ConfigurationError``
    when the folder cannot be used, ``StorageError`` when a picture cannot be written, and any
    other ``AgentMemoryError`` the library raises.
    """
    started = time.perf_counter()
    target = _prepare_folder(folder)
    extraction = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)
    with open_memory(target / DEMO_STORE, memory_extraction_config=extraction) as memory:
        console.rule(Text("palimpsest demo: durable memory for agents, offline", style="bold"))
        console.print(Text.assemble(("Store: ", "bold"), str(target / DEMO_STORE)))
        console.print(
            Text(
                "Offline adapters: the MiniLM embedder when installed, the heuristic extractor, TextRank "
                "summaries and the rule link resolver. No model server, no network.",
                style="dim",
            )
        )
        _maya(memory, console)
        _card_customisation(memory, console)
        _pizza(memory, console)
        search_mode = _search_mode(memory)
        graph = collect_graph(memory)
    written = _write_pictures(graph, target)
    _finale(console, graph, written, search_mode, time.perf_counter() - started)
    return 0


# --- the scenarios ---------------------------------------------------------------------------------


def _maya(memory: AgentMemory, console: Console) -> None:
    """Seed 001: persist Maya's turns, then compact the prompt into a card plus the raw tail."""
    _heading(console, "1", "Short-term compaction: Maya's conversation becomes a context card (seed 001)")
    thread = memory.create_thread(
        thread_id=MAYA_THREAD,
        user_id=MAYA_USER,
        agent_id=MAYA_AGENT,
        memory_extraction_config=MemoryExtractionConfig(context_summary_update_frequency=4),
    )
    for user_text, assistant_text in MAYA_TURNS:  # persisted turn by turn, as the seed's middleware does
        thread.add_messages(
            [{"role": "user", "content": user_text}, {"role": "assistant", "content": assistant_text}]
        )
    messages = thread.get_messages()
    console.print(_messages_table(f"Thread {MAYA_THREAD}: {len(messages)} messages persisted", messages))
    console.print(
        _records_table("Extracted from the user's turns", memory.list_memories(thread_id=MAYA_THREAD))
    )

    tail = thread.get_messages(start=-KEPT_MESSAGE_COUNT)
    card = thread.get_context_card(except_last_messages=KEPT_MESSAGE_COUNT, max_recent_messages=0).content
    console.print(
        Text(
            f"Compaction, external-tail pattern: prompt = [context card, last {KEPT_MESSAGE_COUNT} raw messages]; "
            f"get_context_card(except_last_messages={KEPT_MESSAGE_COUNT}, max_recent_messages=0)",
            style="bold",
        )
    )
    console.print(
        _xml_panel(
            card or "<context_card>\n  No relevant short-term context yet.\n</context_card>", "context card"
        )
    )
    console.print(_messages_table(f"...followed by the raw tail ({len(tail)} messages)", tail))
    self_contained = thread.get_context_card(
        except_last_messages=KEPT_MESSAGE_COUNT, max_recent_messages=KEPT_MESSAGE_COUNT
    ).content
    console.print(
        Text(
            f"Self-contained alternative (max_recent_messages={KEPT_MESSAGE_COUNT}): one prompt message of "
            f"{len(self_contained)} characters whose <recent_messages> holds the same {KEPT_MESSAGE_COUNT} messages, "
            f"instead of 1 + {KEPT_MESSAGE_COUNT} messages.",
            style="dim",
        )
    )


def _card_customisation(memory: AgentMemory, console: Console) -> None:
    """Seed 002: another user's card, without and with per-type minimums."""
    _heading(console, "2", "Customised context card: per-type minimums (seed 002)")
    thread = memory.create_thread(
        thread_id=CARD_THREAD,
        user_id=CARD_USER,
        agent_id=CARD_AGENT,
        memory_extraction_config=MemoryExtractionConfig(
            memory_extraction_custom_instructions=CARD_INSTRUCTIONS
        ),
    )
    thread.add_messages([{"role": role, "content": content} for role, content in CARD_MESSAGES])
    console.print(_messages_table(f"Thread {CARD_THREAD}", thread.get_messages()))
    console.print(_records_table("Extracted", memory.list_memories(thread_id=CARD_THREAD)))
    console.print(
        Text(
            "Custom extraction instructions are stored with the thread and given to the extractor; the offline "
            "pattern extractor cannot follow instructions and ignores them, a model-backed extractor follows them.",
            style="dim",
        )
    )
    plain = thread.get_context_card(max_relevant_results=CARD_MAX_RESULTS)
    custom = thread.get_context_card(
        max_relevant_results=CARD_MAX_RESULTS, min_relevant_results_by_type=CARD_MINIMUMS
    )
    # The seed's second listing: the same card with at most two type searches at a time.
    reopened = memory.get_thread(CARD_THREAD, context_card_type_search_concurrency=2)
    again = reopened.get_context_card(
        max_relevant_results=CARD_MAX_RESULTS, min_relevant_results_by_type=CARD_MINIMUMS
    )

    counts = Table(title=Text(f"Relevant records in the card (max_relevant_results={CARD_MAX_RESULTS})"))
    counts.add_column("record type")
    counts.add_column("default card", justify="right")
    counts.add_column(
        "with minimums " + ", ".join(f"{k}={v}" for k, v in CARD_MINIMUMS.items()), justify="right"
    )
    plain_counts = Counter(r.record_type.value for r in plain.relevant_results)
    custom_counts = Counter(r.record_type.value for r in custom.relevant_results)
    for record_type in ("fact", "memory", "preference", "guideline", "message"):
        counts.add_row(record_type, str(plain_counts[record_type]), str(custom_counts[record_type]))
    console.print(counts)
    console.print(_xml_panel(custom.content, "context card with per-type minimums"))
    same = "identical" if again.content == custom.content else "different (the store changed in between)"
    console.print(
        Text(f"Reopened with context_card_type_search_concurrency=2: the card is {same}.", style="dim")
    )


def _pizza(memory: AgentMemory, console: Console) -> None:
    """Seed 004: preferences said in conversation, linked automatically, searched two hops deep."""
    _heading(console, "3", "Linked memory graph: pizza preferences (seed 004)")
    thread = memory.create_thread(thread_id=PIZZA_THREAD, user_id=PIZZA_USER)
    for turn in PIZZA_TURNS:
        thread.add_messages([{"role": "user", "content": turn}])  # extracted and linked before it returns
    console.print(_messages_table(f"Thread {PIZZA_THREAD}", thread.get_messages()))
    by_hand = _complete_chain(memory, memory.list_memories(user_id=PIZZA_USER))
    preferences = memory.list_memories(user_id=PIZZA_USER)
    console.print(_records_table("Preferences (history stays, marked invalid)", preferences))
    graph = collect_graph(memory, user_id=PIZZA_USER)
    console.print(_links_table(graph, by_hand))

    results = memory.search(
        PIZZA_QUERY,
        user_id=PIZZA_USER,
        record_types=["preference"],
        max_results=5,
        num_hops=2,
        max_linked_results=20,
        include_invalid_results=False,
    )
    tree = Tree(Text(f"search({PIZZA_QUERY!r}, num_hops=2, include_invalid_results=False)", style="bold"))
    for result in results:
        _grow(tree.add(_result_label(result, None)), result)
    console.print(
        Panel(tree, title=Text("2-hop search: current results with their linked records"), expand=False)
    )
    console.print(
        _xml_panel("\n".join(result.format_content(FORMAT_CONFIG) for result in results), "format_content()")
    )


def _complete_chain(memory: AgentMemory, records: Sequence[MemoryRecord]) -> list[str]:
    """Create, by hand, any link of :data:`PIZZA_CHAIN` the rule link resolver did not find.

    Returns the relations created this way (normally none), so the demo can say so."""
    graph = collect_graph(memory, user_id=PIZZA_USER)
    created: list[str] = []
    for source_text, relation, target_text in PIZZA_CHAIN:
        source = _find(records, source_text)
        target = _find(records, target_text)
        if source is None or target is None:
            continue  # the extractor missed a preference: nothing to link
        if any(
            e.source == source.id and e.target == target.id and e.relation_type == relation
            for e in graph.edges
        ):
            continue
        if any({e.source, e.target} == {source.id, target.id} for e in graph.edges):
            continue  # linked otherwise: the rules allow one orientation per pair
        memory.link_records(
            source.id, source.record_type.value, target.id, target.record_type.value, relation
        )
        created.append(relation)
    return created


def _find(records: Iterable[MemoryRecord], text: str) -> MemoryRecord | None:
    return next((r for r in reversed(list(records)) if text in r.content.lower()), None)


# --- rendering helpers -----------------------------------------------------------------------------


def _heading(console: Console, number: str, title: str) -> None:
    console.print()
    console.rule(Text(f"{number}. {title}", style="bold cyan"), align="left")


def _xml_panel(content: str, title: str) -> Panel:
    """Untrusted XML-like text, highlighted but never interpreted as markup."""
    return Panel(
        Syntax(content, "xml", theme="ansi_dark", word_wrap=True, background_color="default"),
        title=Text(title),
        title_align="left",
        expand=False,
    )


def _messages_table(title: str, messages: Sequence[Message]) -> Table:
    table = Table(title=Text(title), title_justify="left", show_lines=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("role")
    table.add_column("content", overflow="fold")
    for message in messages:
        table.add_row(str(message.seq), Text(message.role), Text(message.content))
    return table


def _status(record: MemoryRecord) -> Text:
    return Text("current", style="green") if record.is_valid else Text("history", style="dim")


def _records_table(title: str, records: Sequence[MemoryRecord]) -> Table | Text:
    if not records:
        return Text(f"{title}: nothing.", style="dim")
    table = Table(title=Text(title), title_justify="left")
    table.add_column("type")
    table.add_column("status")
    table.add_column("content", overflow="fold")
    for record in records:
        table.add_row(Text(record.record_type.value), _status(record), Text(record.content))
    return table


def _links_table(graph: MemoryGraph, by_hand: Sequence[str]) -> Table | Text:
    if not graph.edges:
        return Text("No links.", style="dim")
    labels = {node.id: node.label for node in graph.nodes}
    title = "Links found by the rule link resolver"
    if by_hand:
        title += f" (created by hand, as in the seed's manual listing: {', '.join(by_hand)})"
    table = Table(title=Text(title), title_justify="left")
    table.add_column("newer record", overflow="fold")
    table.add_column("relation", style="bold")
    table.add_column("older record (now history)", overflow="fold")
    for edge in graph.edges:
        table.add_row(Text(labels[edge.source]), Text(edge.relation_type), Text(labels[edge.target]))
    return table


def _result_label(result: SearchResult, relation: str | None) -> Text:
    record = result.record
    status = result.status.value
    text = Text()
    if relation is not None:
        text.append(f"{relation} -> ", style="bold magenta")
    text.append(f"{record.record_type.value} ", style="bold")
    text.append(
        f"[{'current' if status == 'valid' else 'history'}] ", style="green" if status == "valid" else "dim"
    )
    text.append(record.content)
    return text


def _grow(branch: Tree, result: SearchResult) -> None:
    """Add the linked-record tree of ``result`` under ``branch``, direction-aware labels."""
    for node in result.linked_records:
        child = SearchResult(node.record, distance=float("nan"), linked=node.children)
        _grow(branch.add(_result_label(child, node.relation_label)), child)


def _search_mode(memory: AgentMemory) -> str:
    """What the client's searches did: its strategy, and for hybrid search how it fused."""
    strategy = memory.search_strategy
    if strategy == "keyword":
        return "keyword (BM25) search only: the MiniLM weights are not installed."
    dimension = memory.admin.dimension
    vectors = f"{dimension}-dimensional embeddings" if dimension else "embeddings"
    if strategy == "vector":
        return f"vector search over {vectors} computed locally."
    retrieval = memory.retrieval
    return (
        f"hybrid search: {vectors} computed locally and BM25 keywords, "
        f"{Fusion(retrieval.fusion).value} fusion with a dense weight of {retrieval.dense_weight:g}."
    )


# --- folder and files --------------------------------------------------------------------------


def _prepare_folder(folder: Path | None) -> Path:
    if folder is None:
        try:
            return Path(tempfile.mkdtemp(prefix="palimpsest-demo-"))
        except OSError as exc:
            raise ConfigurationError(f"cannot create a temporary demo folder: {exc.strerror or exc}") from exc
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"{folder} is not a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"cannot create the demo folder {folder}: {exc.strerror or exc}") from exc
    if (folder / DEMO_STORE).exists():
        raise ConflictError(
            f"{folder / DEMO_STORE} already exists: the demo starts from a new store; "
            "choose another folder or remove that file."
        )
    return folder


def _write_pictures(graph: MemoryGraph, folder: Path) -> list[Path]:
    html_path, svg_path, mermaid_path = (folder / name for name in GRAPH_FILES)
    contents = (
        (html_path, to_html(graph, title="palimpsest demo: memory graph")),
        (svg_path, to_svg(graph)),
        (mermaid_path, to_mermaid(graph)),
    )
    for path, text in contents:
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return [path for path, _ in contents]


def _finale(
    console: Console, graph: MemoryGraph, written: Sequence[Path], search_mode: str, seconds: float
) -> None:
    _heading(console, "4", "The memory graph")
    console.print(
        Text(
            f"{len(graph.nodes)} memories ({graph.current_count} current, {graph.history_count} history) "
            f"and {len(graph.edges)} links, drawn to:"
        )
    )
    table = Table(show_header=False, box=None, padding=(0, 2))
    for path, what in zip(written, ("open in a browser", "picture", "Mermaid flowchart"), strict=True):
        table.add_row(Text(str(path)), Text(what, style="dim"))
    console.print(Panel(Group(table), title=Text("files"), title_align="left", expand=False))
    console.print(Text.assemble(("Search used ", "dim"), (search_mode, "dim")))
    console.print(Text(f"Done in {seconds:.1f} s.", style="dim"))
