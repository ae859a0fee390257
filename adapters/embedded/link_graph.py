"""Embedded adapter: the in-process link graph (networkx), a cache of the ``links`` table.

Private to ``EmbeddedStore`` (not an adapter of a port; not exported from the package).
Edges are keyed by link id and carry their :class:`RecordLink` (edge attribute ``link``),
rebuilt from trusted rows without re-validation so that loading 100k links stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, cast

import networkx as nx
from palimpsest.domain.model import RecordLink

from .codec import stored_link

__all__ = ["NetworkxLinkGraph"]

LinkRow = Sequence[Any]
"""A ``links`` row in :data:`~.codec.LINK_COLUMNS` order (id, source_id, _, target_id, ...)."""

_Adjacency = dict[str, dict[str, dict[str, dict[str, RecordLink]]]]
"""node -> neighbour -> link id -> ``{"link": RecordLink}``."""


class _Storage(Protocol):
    """A ``MultiDiGraph``'s documented dict-of-dicts storage, as this module reads and fills it
    (networkx's type stubs declare only the public views and give the factories as class-level
    callables)."""

    _adj: _Adjacency
    _succ: _Adjacency
    _pred: _Adjacency
    _node: dict[str, dict[str, Any]]
    node_dict_factory: Callable[[], object]
    node_attr_dict_factory: Callable[[], object]
    adjlist_outer_dict_factory: Callable[[], object]
    adjlist_inner_dict_factory: Callable[[], object]
    edge_key_dict_factory: Callable[[], object]
    edge_attr_dict_factory: Callable[[], object]


def _plain_dict_graph(graph: _Storage) -> bool:
    """True when ``graph`` uses networkx's documented default dict-of-dicts storage."""
    return (
        all(
            factory is dict
            for factory in (
                graph.node_dict_factory,
                graph.node_attr_dict_factory,
                graph.adjlist_outer_dict_factory,
                graph.adjlist_inner_dict_factory,
                graph.edge_key_dict_factory,
                graph.edge_attr_dict_factory,
            )
        )
        and graph._adj is graph._succ
    )


class NetworkxLinkGraph:
    """A ``MultiDiGraph`` of links (key = link id), traversed in both directions.

    Not thread-safe: the store serialises access.
    """

    def __init__(self) -> None:
        self._graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        self._storage = cast(_Storage, self._graph)  # the same object, typed as its storage
        self._ends: dict[str, tuple[str, str]] = {}

    @property
    def graph(self) -> nx.MultiDiGraph[str]:
        """The underlying graph (read-only use: it is a cache owned by the store)."""
        return self._graph

    def __len__(self) -> int:
        return len(self._ends)

    def __contains__(self, link_id: object) -> bool:
        return link_id in self._ends

    def clear(self) -> None:
        self._graph = nx.MultiDiGraph()
        self._storage = cast(_Storage, self._graph)
        self._ends.clear()

    def upsert(self, rows: Iterable[LinkRow]) -> None:
        rows = list(rows)
        ends = self._ends
        graph = self._graph
        if len(rows) < 1000 or not _plain_dict_graph(self._storage):
            for row in rows:
                if row[0] in ends:
                    self._discard(row[0])
                ends[row[0]] = (row[1], row[3])
            # (source, target, key, data): the multigraph form, which the networkx stubs omit.
            graph.add_edges_from(
                (row[1], row[3], row[0], {"link": stored_link(row)}) for row in rows  # type: ignore[misc]
            )
            return
        # Bulk load (open, large replays): add_edge's per-call bookkeeping costs several µs an
        # edge, so fill networkx's documented dict-of-dicts structure directly, exactly as
        # MultiDiGraph.add_edge lays it out (one key dict shared by _succ[u][v] and _pred[v][u]).
        storage = self._storage
        succ, pred, nodes = storage._succ, storage._pred, storage._node
        for row in rows:
            if row[0] in ends:
                self._discard(row[0])
        ends.update((row[0], (row[1], row[3])) for row in rows)
        for row, link in zip(rows, map(stored_link, rows)):
            source, target = row[1], row[3]
            if source not in succ:
                succ[source], pred[source], nodes[source] = {}, {}, {}
            if target not in succ:
                succ[target], pred[target], nodes[target] = {}, {}, {}
            keydict = succ[source].get(target)
            if keydict is None:
                keydict = succ[source][target] = pred[target][source] = {}
            keydict[row[0]] = {"link": link}
        clear_cache = getattr(nx, "_clear_cache", None)  # networkx >= 3.3 caches backend conversions
        if clear_cache is not None:
            clear_cache(graph)

    def remove(self, link_ids: Iterable[str]) -> None:
        for link_id in link_ids:
            if link_id in self._ends:
                self._discard(link_id)

    def _discard(self, link_id: str) -> None:
        source, target = self._ends.pop(link_id)
        graph, storage = self._graph, self._storage
        graph.remove_edge(source, target, key=link_id)
        # Drop nodes left without links so that the graph stays as small as the link table.
        for node in (source, target):
            if node in graph and not storage._succ[node] and not storage._pred[node]:
                graph.remove_node(node)

    def links_of(self, record_id: str) -> list[RecordLink]:
        """Every link touching ``record_id``, whichever its direction."""
        storage = self._storage
        succ = storage._succ.get(record_id)
        if succ is None:
            return []
        # Plain dict access (networkx's documented storage) instead of view objects: this runs
        # for every node a graph expansion visits.
        return [
            data["link"]
            for adjacency in (succ, storage._pred[record_id])
            for edges in adjacency.values()
            for data in edges.values()
        ]
