"""collect_graph: the records of a scope (current and history, not expired) and the links among them."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from graph_demo_support import HOSTILE
from palimpsest.adapters.cli.graph import (
    GraphEdge,
    MemoryGraph,
    collect_graph,
    short_label,
    to_html,
    to_mermaid,
    to_svg,
)
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory
from palimpsest.domain import ValidationError


def _pizza(memory: AgentMemory, user_id: str = "graph-demo-user") -> dict[str, str]:
    ids = {
        "thin": memory.add_memory(
            "The user's preferred pizza style is thin crust.", memory_type="preference", user_id=user_id
        ),
        "sourdough": memory.add_memory(
            "The user now prefers sourdough pizza.", memory_type="preference", user_id=user_id
        ),
        "neapolitan": memory.add_memory(
            "The user's preferred pizza style is sourdough, especially Neapolitan sourdough.",
            memory_type="preference",
            user_id=user_id,
        ),
    }
    ids["supersedes"] = memory.link_records(
        ids["sourdough"], "preference", ids["thin"], "preference", "supersedes"
    )
    ids["refines"] = memory.link_records(
        ids["neapolitan"], "preference", ids["sourdough"], "preference", "refines"
    )
    return ids


def test_nodes_edges_and_statuses_of_a_linked_store(client: AgentMemory) -> None:
    ids = _pizza(client)
    veggie = client.add_memory(
        "The user avoids meat and fish.", memory_type="fact", user_id="graph-demo-user"
    )
    supports = client.link_records(veggie, "fact", ids["neapolitan"], "preference", "supports")

    graph = collect_graph(client)

    assert [node.id for node in graph.nodes] == [ids["thin"], ids["sourdough"], ids["neapolitan"], veggie]
    by_id = {node.id: node for node in graph.nodes}
    assert {node.id for node in graph.nodes if node.is_history} == {ids["thin"], ids["sourdough"]}
    assert by_id[ids["thin"]].status == "invalid"
    assert by_id[ids["neapolitan"]].status == "valid"
    assert by_id[veggie].record_type == "fact"
    assert by_id[ids["sourdough"]].label == "The user now prefers sourdough pizza."
    assert by_id[ids["thin"]].created_at < by_id[ids["neapolitan"]].created_at
    assert graph.edges == (
        GraphEdge(ids["supersedes"], ids["sourdough"], ids["thin"], "supersedes"),
        GraphEdge(ids["refines"], ids["neapolitan"], ids["sourdough"], "refines"),
        GraphEdge(supports, veggie, ids["neapolitan"], "supports"),
    )
    assert [edge.is_lifecycle for edge in graph.edges] == [True, True, False]
    assert (graph.current_count, graph.history_count) == (2, 2)


def test_scopes_keep_only_their_records_and_the_links_inside_them(client: AgentMemory) -> None:
    ids = _pizza(client)
    other = client.add_memory("Another user likes calzone.", memory_type="preference", user_id="someone-else")
    agent_note = client.add_memory(
        "The assistant should suggest a pizzeria.",
        memory_type="guideline",
        user_id="graph-demo-user",
        agent_id="bot",
    )
    shared = client.add_memory("Neapolitan pizza comes from Naples.", memory_type="fact")
    # A link leaving the scope (to an unscoped record, the only way out: links stay inside one
    # user): it is kept for everyone, dropped from the user's picture.
    client.link_records(ids["neapolitan"], "preference", shared, "fact", "supports")

    everything = collect_graph(client)
    mine = collect_graph(client, user_id="graph-demo-user")
    bots = collect_graph(client, agent_id="bot")
    theirs = collect_graph(client, user_id="someone-else")

    assert len(everything.nodes) == 6 and len(everything.edges) == 3
    assert {node.id for node in mine.nodes} == {ids["thin"], ids["sourdough"], ids["neapolitan"], agent_note}
    assert {edge.relation_type for edge in mine.edges} == {"supersedes", "refines"}
    assert [node.id for node in bots.nodes] == [agent_note] and bots.edges == ()
    assert [node.id for node in theirs.nodes] == [other] and theirs.edges == ()


def test_expired_records_and_their_links_are_left_out(client: AgentMemory, clock: ManualClock) -> None:
    ids = _pizza(client)
    fleeting = client.add_memory(
        "The user is hungry right now.", memory_type="memory", user_id="graph-demo-user", ttl_days=1
    )
    client.link_records(fleeting, "memory", ids["neapolitan"], "preference", "supports")
    assert len(collect_graph(client).nodes) == 4

    clock.advance(timedelta(days=2))

    graph = collect_graph(client)
    assert fleeting not in {node.id for node in graph.nodes}
    assert {edge.relation_type for edge in graph.edges} == {"supersedes", "refines"}


def test_collecting_writes_nothing_and_is_repeatable(client: AgentMemory) -> None:
    _pizza(client)
    client.add_memory(HOSTILE, memory_id='evil"]><x>', user_id="graph-demo-user")
    before = client.list_memories()
    first = collect_graph(client)
    second = collect_graph(client)
    assert client.list_memories() == before
    assert first == second
    assert to_svg(first) == to_svg(second)
    evil = next(node for node in first.nodes if node.id == 'evil"]><x>')
    assert evil.label == short_label(HOSTILE) and "\n" not in evil.label


def test_an_empty_store_gives_an_empty_graph(client: AgentMemory) -> None:
    assert collect_graph(client) == MemoryGraph()


def test_labels_are_short_single_lines() -> None:
    assert short_label("  a\n\tb  c ") == "a b c"
    long = short_label("word " * 100)
    assert len(long) <= 110 and long.endswith("…")


def test_a_limit_keeps_the_newest_records_and_says_how_many_were_left_out(
    client: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _pizza(client)
    veggie = client.add_memory("The user avoids meat and fish.", memory_type="fact", user_id="graph-demo-user")
    supports = client.link_records(veggie, "fact", ids["neapolitan"], "preference", "supports")

    with caplog.at_level(logging.WARNING, logger="palimpsest.adapters.cli.graph"):
        graph = collect_graph(client, limit=2)

    assert [node.id for node in graph.nodes] == [ids["neapolitan"], veggie]
    assert graph.edges == (GraphEdge(supports, veggie, ids["neapolitan"], "supports"),)
    assert graph.omitted == 2
    note = "the graph shows the newest 2 of 4 memory records; the 2 oldest are left out"
    assert graph.omission_note == note
    assert [r.getMessage() for r in caplog.records] == [f"{note} (limit 2)."]
    assert f"%% {note}" in to_mermaid(graph).splitlines()[1]
    assert note in to_html(graph) and note in to_svg(graph)


def test_without_a_limit_every_record_is_drawn_and_nothing_is_said(
    client: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    _pizza(client)
    with caplog.at_level(logging.WARNING, logger="palimpsest.adapters.cli.graph"):
        everything = collect_graph(client, limit=None)
        enough = collect_graph(client, limit=3)
    assert len(everything.nodes) == 3 and everything.omitted == 0 and everything.omission_note == ""
    assert enough == everything
    assert caplog.records == []
    assert "left out" not in to_mermaid(everything) + to_html(everything) + to_svg(everything)


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_a_malformed_limit_is_refused(client: AgentMemory, limit: object) -> None:
    with pytest.raises(ValidationError):
        collect_graph(client, limit=limit)  # type: ignore[arg-type]
