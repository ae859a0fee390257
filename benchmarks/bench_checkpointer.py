"""LangGraph checkpointers side by side: ``PalimpsestSaver`` against LangGraph's own savers.

One command, one process, the same data for every saver, and ratios to ``InMemorySaver``:

* ``put``: p50 of one checkpoint put with a ``messages`` channel of 20 LangChain messages (a new
  version each put) and a counter channel, chained to its parent, on one thread;
* ``get_tuple``: p50 of reading that thread's newest checkpoint (its blobs and pending writes);
* ``list``: p50 of listing the thread's 10 newest checkpoints;
* a 50-step graph run: ``invoke`` of a graph whose one node loops 50 times, appending a message
  each step (about 50 checkpoints), on a fresh thread each repeat; the median run.

Savers: ``InMemorySaver``; ``SqliteSaver`` (``pip install langgraph-checkpoint-sqlite``; a file
in a temporary folder); ``PalimpsestSaver`` on the in-memory store and on the embedded store (a
file), each only when its store keeps checkpoints, with and without ``key=`` and retention
(``keep_latest=10``). A saver that is missing is reported as skipped, with the reason.

Run ``python benchmarks/bench_checkpointer.py`` (``--puts 300``), ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from palimpsest.adapters import open_memory
from palimpsest.adapters.langgraph import CheckpointRetention, PalimpsestSaver
from palimpsest.application import MemoryExtractionConfig

KEY = b"a benchmark key, thirty-two byte"


def _messages(n: int) -> list[AnyMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}: " + "words " * 30, id=f"m{i}")
        for i in range(n)
    ]


@contextmanager
def _savers(folder: Path) -> Iterator[dict[str, BaseCheckpointSaver[Any] | str]]:
    """Saver name -> saver, or the reason it is skipped."""
    found: dict[str, BaseCheckpointSaver[Any] | str] = {"InMemorySaver": InMemorySaver()}
    with ExitStack() as stack:
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError:
            found["SqliteSaver"] = "skipped: pip install langgraph-checkpoint-sqlite"
        else:
            found["SqliteSaver"] = stack.enter_context(SqliteSaver.from_conn_string(str(folder / "sqlite-saver.db")))
        no_extraction = MemoryExtractionConfig(extract_memories=False)
        variants: dict[str, dict[str, Any]] = {
            "": {},
            ", key=": {"key": KEY},
            ", keep_latest=10": {"retention": CheckpointRetention(keep_latest=10)},
        }
        for store in ("memory", "embedded"):
            for suffix, options in variants.items():  # each on a store of its own
                location = None if store == "memory" else str(folder / f"palimpsest{len(found)}.db")
                memory = stack.enter_context(open_memory(location, memory_extraction_config=no_extraction))
                if not memory.checkpoints.available:
                    found[f"PalimpsestSaver ({store})"] = f"skipped: the {store} store keeps no checkpoints"
                    break
                found[f"PalimpsestSaver ({store}{suffix})"] = PalimpsestSaver(memory, **options)
        yield found


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
    reads = max(puts, 50)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--puts", type=int, default=300, help="checkpoints put on the primitives' thread")
    parser.add_argument("--runs", type=int, default=7, help="repeats of the 50-step graph run")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 puts, 2 graph runs")
    args = parser.parse_args(argv)
    puts, runs = (20, 2) if args.quick else (args.puts, args.runs)
    print(f"LangGraph checkpointers: {puts} puts (20 messages each), get_tuple/list p50, a 50-step graph run x{runs}")
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder, _savers(Path(folder)) as savers:
        for name, saver in savers.items():
            if isinstance(saver, str):
                print(f"  {name}: {saver}")
                continue
            rows[name] = {**_primitives(saver, name, puts), "graph": _graph_run(saver, name, runs, 50)}
    base = rows["InMemorySaver"]
    print(f"  {'saver':44s} {'put ms':>9s} {'get ms':>9s} {'list ms':>9s} {'50 steps ms':>12s}   ratios to InMemorySaver")
    for name, row in rows.items():
        ratios = " ".join(f"{row[k] / base[k]:.1f}x" for k in ("put", "get_tuple", "list", "graph"))
        print(f"  {name:44s} {row['put']:9.3f} {row['get_tuple']:9.3f} {row['list']:9.3f} {row['graph']:12.1f}   {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
