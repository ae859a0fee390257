"""Benchmark (outside the package): what the observability events cost one ``search``.

An embedded store with ``--memories`` memories of one user (hashing embedder: the query's
embedding is nearly free, so the library's own overhead is what shows), then ``search`` p50 and
mean over ``--repeat`` calls in each mode, the modes interleaved round by round (so drift hits
them alike):

* ``unwrapped``: the facade's method without the observability decorator
  (``AgentMemory.search.__wrapped__``): the code path of a library without events, timed in the
  same process as the others;
* ``none``: no listener registered (the default of every program);
* ``unrelated``: a listener registered for an event class no search emits;
* ``all``: a listener of every event (the search's started/completed pair and the embedder's
  pair are built and dispatched; the listener only counts them).

Then the wrapper alone: a method that returns at once, undecorated and decorated as the facades'
methods are, per call (best of 5 runs of ``--calls`` calls), in the same three modes.

On a library without observability (an older tree on ``PYTHONPATH``) only ``none`` runs.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_observability.py`` (``--quick``: a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import AgentMemory, MemoryExtractionConfig

TOPICS = ["pizza", "travel", "rome", "budget", "hiking", "coffee", "music", "books", "cooking", "weather"]


def _modes() -> dict[str, Callable[[], contextlib.AbstractContextManager[Any]]]:
    modes: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {"none": contextlib.nullcontext}
    import palimpsest.application

    if not hasattr(palimpsest.application, "register_event_listeners"):  # a library without observability
        return modes
    from palimpsest.application import observability as obs

    class _Unrelated(obs.Event):
        pass

    class _Counter(obs.EventListener):
        def __init__(self) -> None:
            self.count = 0

        def on_event(self, event: Any) -> None:
            self.count += 1

    unrelated = obs.GenericEventListener(_Unrelated, lambda event: None)
    counter = _Counter()
    modes = {"unwrapped": contextlib.nullcontext, **modes}
    modes["unrelated"] = lambda: obs.register_event_listeners([unrelated])
    modes["all"] = lambda: obs.register_event_listeners([counter])
    return modes


def _wrapper_costs(calls: int, modes: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]]) -> None:
    if len(modes) == 1:
        return
    from palimpsest.application.observability import observed_operations

    class Plain:
        def search(self, query: str, *, user_id: str | None = None, max_results: int = 10) -> list[int]:
            return [1, 2, 3]

    @observed_operations("agent_memory")
    class Observed(Plain):
        def search(self, query: str, *, user_id: str | None = None, max_results: int = 10) -> list[int]:
            return [1, 2, 3]

    def per_call(target: Any) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                target.search("q", user_id="u")
            best = min(best, (time.perf_counter() - start) / calls)
        return best

    print(f"the wrapper alone, per call (best of 5 x {calls} calls)")
    print(f"  {'undecorated':10s} {per_call(Plain()) * 1e6:8.2f} µs")
    for name, registered in modes.items():
        if name == "unwrapped":
            continue
        with registered():
            print(f"  {name:10s} {per_call(Observed()) * 1e6:8.2f} µs")


def _fill(memory: AgentMemory, count: int) -> None:
    for i in range(count):
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
        memory.add_memory(f"Memory {i}: the user likes {a} and {b}, detail {i % 97}.", user_id="u1")


@contextlib.contextmanager
def _client(folder: Path) -> Iterator[AgentMemory]:
    memory = open_memory(
        folder / "bench.db",
        embedder=HashingEmbedder(),
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
    )
    try:
        yield memory
    finally:
        memory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2000, help="searches timed per mode")
    parser.add_argument("--calls", type=int, default=100_000, help="calls of the wrapper alone per run")
    args = parser.parse_args(argv)
    memories, repeat, calls = (200, 50, 1000) if args.quick else (args.memories, args.repeat, args.calls)
    modes = _modes()
    times: dict[str, list[float]] = {name: [] for name in modes}
    with tempfile.TemporaryDirectory() as tmp, _client(Path(tmp)) as memory:
        _fill(memory, memories)
        queries = [f"what does the user think of {TOPICS[i % len(TOPICS)]}?" for i in range(repeat)]
        for query in queries[:20]:  # warm up the caches and the first-call paths
            memory.search(query, user_id="u1")
        for query in queries:
            for name, registered in modes.items():
                search = getattr(type(memory).search, "__wrapped__", None) if name == "unwrapped" else None
                with registered():
                    if search is not None:
                        start = time.perf_counter()
                        search(memory, query, user_id="u1")
                    else:
                        start = time.perf_counter()
                        memory.search(query, user_id="u1")
                    times[name].append(time.perf_counter() - start)
    print(f"search p50 / mean over {repeat} calls, {memories} memories, embedded store, hashing embedder")
    for name, samples in times.items():
        p50, mean = statistics.median(samples), statistics.fmean(samples)
        print(f"  {name:10s} p50 {p50 * 1e6:8.1f} µs   mean {mean * 1e6:8.1f} µs")
    _wrapper_costs(calls, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
