"""Fixtures of the memory-graph and demo tests: clients on both local stores, and small graphs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from clients import build_client
from graph_demo_support import START, make_node, make_pizza_graph
from palimpsest.adapters.cli.graph import GraphEdge, MemoryGraph
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import AgentMemory, MemoryExtractionConfig


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START, tick=timedelta(milliseconds=1))


@pytest.fixture(params=["memory", "embedded"])
def client(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[AgentMemory]:
    """A client without models on the in-memory store, then on the embedded store."""
    memory = build_client(  # the root opens the store of the backend and closes it with the client
        backend=request.param,
        path=tmp_path / "graph.db" if request.param == "embedded" else None,
        clock=clock,
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def pizza_graph() -> MemoryGraph:
    """See :func:`graph_demo_support.make_pizza_graph`."""
    return make_pizza_graph()


@pytest.fixture
def graph_factory() -> Callable[..., MemoryGraph]:
    """Build graphs from (type, label, status) triples and (source, target, relation) index triples."""

    def build(nodes: list[tuple[str, str, str]], edges: list[tuple[int, int, str]]) -> MemoryGraph:
        built = tuple(make_node(i, t, label, status) for i, (t, label, status) in enumerate(nodes))
        return MemoryGraph(
            nodes=built,
            edges=tuple(
                GraphEdge(f"link-{i}", built[s].id, built[t].id, relation)
                for i, (s, t, relation) in enumerate(edges)
            ),
        )

    return build
