"""Benchmarks (outside the package): opening a large EmbeddedStore, from its index snapshot and by a rebuild.

Builds (once; ``--dir`` keeps the files between runs) a store of ``--records`` memory records
(random unit vectors, dimension 384, one user) and as many links, written through the public
ports by ``bench_search.build_store``; closing it leaves the index snapshot (ARCHITECTURE.md
D26). Then, for each mode, ``--repeats`` fresh interpreters each open the store and answer one
vector search and one keyword search, and report:

- open: the constructor, and until the first search is answered;
- resident memory after opening and after the two searches: total RSS, split into anonymous
  memory (the process's own) and file-backed pages (the mapped snapshot and SQLite's pages,
  which the kernel can drop), and the peak;
- ``snapshot``: the store as closed; ``rebuild``: the same file with its snapshot moved aside
  (the caches built from the tables, as before D26);
- ``rewrite``: one interpreter opens the store from its snapshot, answers one search and closes
  with a new snapshot due (timed: what a process closing on shutdown waits for); then a fresh
  interpreter opens the store with ``vector_search="exact"`` and times its first full scan of
  the vector matrix against the median of the next five (the first query after a snapshot is
  written).

Run: ``python benchmarks/bench_open.py --records 100000`` (about a minute to build),
``--records 1000000 --dir /some/folder`` (about 3 minutes to build, 2.5 GB of store file and
2 GB of snapshot). Figures are printed, never asserted. The page cache is not dropped between
runs (that needs root): the file-backed figures are for a warm cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search

CHILD = r"""
import json, os, resource, sys, time
from datetime import UTC, datetime
import numpy as np
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain import ScopeFilter, SearchQuery

def memory():
    status = open(f"/proc/{os.getpid()}/status").read()
    read = lambda key: int(status.split(key + ":")[1].split()[0]) / 1024
    return {"rss": read("VmRSS"), "anon": read("RssAnon"), "file": read("RssFile")}

path, mode = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)
vector = rng.standard_normal(384).astype(np.float32)
vector /= np.linalg.norm(vector)
now = datetime(2026, 1, 2, tzinfo=UTC)
dense = SearchQuery(k=10, now=now, vector=tuple(vector.tolist()), scope=ScopeFilter(user_id="solo"), num_hops=1)
words = SearchQuery(k=10, now=now, text="benchmark memory topic 13", scope=ScopeFilter(user_id="solo"))
started = time.perf_counter()
store = EmbeddedStore(path)
constructed = time.perf_counter()
opened = memory()
store.search(dense)
answered = time.perf_counter()
store.search(words)
searched = memory()
restored = getattr(store, "_snapshot_seq", None) is not None
store.SNAPSHOT_MIN_ROWS = 1 << 62  # measuring: leave the snapshot file as it is
store.close()
print(json.dumps({
    "constructor_s": constructed - started,
    "first_search_s": answered - started,
    "opened": opened,
    "searched": searched,
    "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "restored": restored,
}))
"""


CLOSE = r"""
import json, sys, time
from datetime import UTC, datetime
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain import ScopeFilter, SearchQuery

store = EmbeddedStore(sys.argv[1])
store.SNAPSHOT_MIN_ROWS = int(sys.argv[2])
restored = store._snapshot_seq is not None
now = datetime(2026, 1, 2, tzinfo=UTC)
store.search(SearchQuery(k=10, now=now, text="benchmark memory topic 13", scope=ScopeFilter(user_id="solo")))
store._snapshot_seq = None  # a new snapshot is due, as after 1 % of the rows changed
started = time.perf_counter()
store.close()
print(json.dumps({"close_s": time.perf_counter() - started, "restored": restored}))
"""

SCAN = r"""
import json, statistics, sys, time
from datetime import UTC, datetime
import numpy as np
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain import ScopeFilter, SearchQuery

rng = np.random.default_rng(12)
now = datetime(2026, 1, 2, tzinfo=UTC)

def query():
    vector = rng.standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    return SearchQuery(k=10, now=now, vector=tuple(vector.tolist()), scope=ScopeFilter(user_id="solo"))

started = time.perf_counter()
store = EmbeddedStore(sys.argv[1], vector_search="exact")
opened = time.perf_counter()
store.search(query())
first = time.perf_counter() - opened
steady = []
for _ in range(5):
    begun = time.perf_counter()
    store.search(query())
    steady.append(time.perf_counter() - begun)
restored = store._snapshot_seq is not None
store.SNAPSHOT_MIN_ROWS = 1 << 62
store.close()
print(json.dumps({"open_s": opened - started, "first_scan_s": first, "steady_scan_s": statistics.median(steady),
                  "restored": restored}))
"""


def child(code: str, *args: object) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out)
    return result


def rewrite(path: Path, repeats: int, min_rows: int) -> None:
    """Close with a new snapshot, then the first full scan of a fresh process (see the docstring)."""
    for _ in range(repeats):
        closed, scanned = child(CLOSE, path, min_rows), child(SCAN, path)
        print(
            f"rewrite  restored={closed['restored']!s:5s} close() writing the snapshot {closed['close_s']:.2f} s; "
            f"then a fresh process (restored={scanned['restored']}): open {scanned['open_s']:.2f} s, "
            f"first full scan {scanned['first_scan_s'] * 1000:,.0f} ms, "
            f"steady {scanned['steady_scan_s'] * 1000:,.0f} ms (median of 5)"
        )


def measure(path: Path, mode: str, repeats: int) -> dict[str, object]:
    index = Path(str(path) + ".index")
    aside = Path(str(path) + ".index.aside")
    moved = mode == "rebuild" and index.exists()
    if moved:
        index.rename(aside)
    try:
        runs = []
        for _ in range(repeats):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), mode], check=True, capture_output=True, text=True
            ).stdout
            runs.append(json.loads(out))
    finally:
        if moved:
            aside.rename(index)
    best = min(runs, key=lambda run: float(run["first_search_s"]))
    best["median_first_search_s"] = statistics.median(float(run["first_search_s"]) for run in runs)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the built store here (reused if present)")
    parser.add_argument(
        "--snapshot-min-rows",
        type=int,
        default=None,
        help="EmbeddedStore.SNAPSHOT_MIN_ROWS for the build (a small store gets a snapshot too)",
    )
    parser.add_argument(
        "--modes", default="snapshot,rebuild", help="comma-separated: snapshot (the store as closed), rebuild, rewrite"
    )
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="palimpsest-open-"))
    workdir.mkdir(parents=True, exist_ok=True)
    config = replace(bench_search.Config(), records=args.records, links=args.records, batch=10_000)
    path = bench_search.store_path(workdir, bench_search.SOLO)
    try:
        if args.snapshot_min_rows is not None:
            from palimpsest.adapters.embedded import EmbeddedStore

            EmbeddedStore.SNAPSHOT_MIN_ROWS = args.snapshot_min_rows
        if not path.exists():
            started = time.perf_counter()
            bench_search.build_store(bench_search.SOLO, config, workdir)
            print(f"built {args.records:,} records + {args.records:,} links in {time.perf_counter() - started:.0f} s")
        sizes = {p.name: p.stat().st_size / 2**20 for p in workdir.iterdir() if p.name.startswith("solo.db")}
        print("files (MiB): " + ", ".join(f"{name} {size:,.0f}" for name, size in sorted(sizes.items())))
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
        for mode in args.modes.split(","):
            if mode == "rewrite":
                rewrite(path, args.repeats, bench_search.EmbeddedStore.SNAPSHOT_MIN_ROWS)
                continue
            run = measure(path, mode, args.repeats if mode == "snapshot" else max(1, args.repeats - 2))
            opened, searched = run["opened"], run["searched"]
            assert isinstance(opened, dict) and isinstance(searched, dict)
            print(
                f"{mode:8s} restored={run['restored']!s:5s} constructor {run['constructor_s']:.2f} s, "
                f"first search answered {run['first_search_s']:.2f} s (median {run['median_first_search_s']:.2f}); "
                f"RSS opened {opened['rss']:,.0f} MiB (anon {opened['anon']:,.0f}, file {opened['file']:,.0f}), "
                f"after 2 searches {searched['rss']:,.0f} (anon {searched['anon']:,.0f}, file {searched['file']:,.0f}), "
                f"peak {run['peak']:,.0f}"
            )
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
