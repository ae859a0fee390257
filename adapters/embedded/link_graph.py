"""Embedded adapter: the in-process link graph (networkx), a per-record cache of the ``links`` table.

Private to ``EmbeddedStore`` (not an adapter of a port; not exported from the package).
Edges are keyed by link id and carry their :class:`RecordLink` (edge attribute ``link``),
built from trusted rows without re-validation.

The graph is filled lazily, one record at a time: opening a store does not read the links
table (at a million links that alone took seconds). A search that reaches a record not in
:attr:`NetworkxLinkGraph.loaded` reads that record's links from SQLite and loads them; from
then on the change log keeps them current (:meth:`NetworkxLinkGraph.replay`). A record with some
edges in the graph but not in ``loaded`` (the other end of a loaded record's link) has only
those edges: it is read again on first use, which upserting by link id makes harmless.
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
        self.loaded: set[str] = set()
        """Record ids whose *every* link is in the graph: :meth:`links_of` is complete for
        these only. Kept when a record loses its last link (it then has none, which is known)."""

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
        self.loaded.clear()

    def load(self, record_ids: Iterable[str], rows: Iterable[LinkRow]) -> None:
        """Add ``rows``, every link touching ``record_ids`` as of the graph's position in the
        change log, and mark those ids loaded.

        A link the graph holds already is left as it is: the replays keep every held link at
        that same position, so its row is the one given (often half of them: the link back to
        the record a search came from).
        """
        ends = self._ends
        self.upsert([row for row in rows if row[0] not in ends])
        self.loaded.update(record_ids)

    def replay(self, rows: Iterable[LinkRow], changed: Iterable[str]) -> None:
        """Apply the change log's ``changed`` link ids, of which ``rows`` are the ones still stored.

        Gone links leave the graph. A row is upserted only when one of its ends is loaded: no
        one needs the others yet, and keeping them would grow the graph towards the whole table
        with links no search asked for. A skipped row's older copy, if any, leaves too, so the
        graph never holds a version of a link older than its position.
        """
        loaded = self.loaded
        kept = [row for row in rows if row[1] in loaded or row[3] in loaded]
        fresh = {row[0] for row in kept}
        self.remove(link_id for link_id in changed if link_id not in fresh)
        self.upsert(kept)

    def upsert(self, rows: Iterable[LinkRow]) -> None:
        rows = list(rows)
        if not rows:
            return
        ends = self._ends
        graph = self._graph
        for row in rows:
            if row[0] in ends:
                self._discard(row[0])
        ends.update((row[0], (row[1], row[3])) for row in rows)
        if not _plain_dict_graph(self._storage):
            # (source, target, key, data): the multigraph form, which the networkx stubs omit.
            graph.add_edges_from(
                (row[1], row[3], row[0], {"link": stored_link(row)}) for row in rows  # type: ignore[misc]
            )
            return
        # add_edge's per-call bookkeeping costs several µs an edge, which every search that
        # loads records pays, so fill networkx's documented dict-of-dicts structure directly,
        # exactly as MultiDiGraph.add_edge lays it out (one key dict shared by _succ[u][v] and
        # _pred[v][u]).
        storage = self._storage
        succ, pred, nodes = storage._succ, storage._pred, storage._node
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
        """The links in the graph touching ``record_id``, whichever their direction: all of
        them when ``record_id`` is :attr:`loaded`."""
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
