"""Benchmarks (outside the package): search latency, graph-expansion cost and open time of EmbeddedStore.

Run ``python benchmarks/bench_search.py`` (100,000 records, under two minutes) or with
``--quick`` for a small smoke run. Everything is written through the public ports, exactly as
an application would: records and links in units of work, queries through ``store.search``.
Figures are printed, never asserted: speed is measured here, not in the test suite.

The two store files are built in two worker processes at once (SQLite serialises the writers
of one file, not of two); every figure is measured afterwards, in this process, with nothing
else running.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain import (
    LinkedRecord,
    MemoryRecord,
    RecordLink,
    RecordType,
    ScopeFilter,
    SearchHit,
    SearchQuery,
    opposite_label,
)

# A fixed epoch: every run stores the same rows, so runs on different days are comparable.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
NOW = EPOCH + timedelta(days=1)
SOLO_USER = "solo"
SCOPED_USER = "u7"
SPREAD, SOLO = "spread", "solo"
# Non-lifecycle types only: a lifecycle link written through the port without the service
# would leave its target VALID, breaking the invariant; these change no status.
LINK_TYPES = ("supports", "contradicts", "related_to")
LINK_TYPE_WEIGHTS = (0.55, 0.35, 0.10)
# Independent random streams, so that each part is reproducible on its own.
STREAM_SPREAD, STREAM_SOLO, STREAM_LINKS, STREAM_QUERIES = range(4)


@dataclass(frozen=True)
class Config:
    records: int = 100_000
    users: int = 100
    links: int = 100_000
    dim: int = 384
    k: int = 10
    queries: int = 200
    warmup: int = 10
    batch: int = 5_000
    open_repeats: int = 3
    seed: int = 20_260_101
    parallel_build: bool = True

    @classmethod
    def quick(cls) -> Config:
        return cls(records=5_000, links=5_000, queries=50, warmup=5, batch=1_000)


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    value_ms: float
    target_ms: float
    detail: str

    @property
    def passed(self) -> bool:
        return self.value_ms <= self.target_ms


@dataclass
class Result:
    config: Config
    build: dict[str, float] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    mean_linked_at_two_hops: float = 0.0
    hits_per_query: dict[str, float] = field(default_factory=dict)


# -- building --------------------------------------------------------------------------------


def unit_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def add_records(
    store: EmbeddedStore,
    config: Config,
    rng: np.random.Generator,
    *,
    prefix: str,
    user_of: Callable[[int], str],
) -> list[str]:
    """Insert ``config.records`` memory records with random unit vectors, in batches."""
    ids: list[str] = []
    for start in range(0, config.records, config.batch):
        stop = min(start + config.batch, config.records)
        vectors = unit_vectors(rng, stop - start, config.dim)
        with store.unit_of_work() as uow:
            for offset, i in enumerate(range(start, stop)):
                created = EPOCH + timedelta(microseconds=i)
                record = MemoryRecord(
                    id=f"{prefix}{i:07d}",
                    record_type=RecordType.MEMORY,
                    content=f"benchmark memory {i} on topic {i % 97} for {user_of(i)}",
                    created_at=created,
                    updated_at=created,
                    user_id=user_of(i),
                )
                uow.records.add(record, embedding=vectors[offset].tolist())
                ids.append(record.id)
            uow.commit()
    return ids


def random_pairs(rng: np.random.Generator, ids: Sequence[str], count: int) -> list[tuple[str, str]]:
    """``count`` distinct unordered pairs: no self-links, no duplicates, no reversed duplicates."""
    if len(ids) < 2:
        return []
    count = min(count, len(ids) * (len(ids) - 1) // 2)
    seen: set[tuple[int, int]] = set()
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        for a, b in rng.integers(0, len(ids), size=(count - len(pairs) + 64, 2)).tolist():
            key = (a, b) if a < b else (b, a)
            if a == b or key in seen:
                continue
            seen.add(key)
            pairs.append((ids[a], ids[b]))
            if len(pairs) == count:
                break
    return pairs


def add_links(store: EmbeddedStore, config: Config, rng: np.random.Generator, ids: Sequence[str]) -> int:
    return write_links(store, random_pairs(rng, ids, config.links), rng, config.batch)


def write_links(store: Any, pairs: Sequence[tuple[str, str]], rng: np.random.Generator, batch: int) -> int:
    """Memory-to-memory links between ``pairs`` through ``store``'s ports (any MemoryStore), in
    units of work of ``batch`` links, each a non-lifecycle type drawn by ``LINK_TYPE_WEIGHTS``."""
    types = rng.choice(len(LINK_TYPES), size=len(pairs), p=LINK_TYPE_WEIGHTS).tolist()
    for start in range(0, len(pairs), batch):
        with store.unit_of_work() as uow:
            for j in range(start, min(start + batch, len(pairs))):
                source, target = pairs[j]
                relation = LINK_TYPES[types[j]]
                uow.links.add(
                    RecordLink(
                        id=f"l{j:07d}",
                        source_id=source,
                        source_type=RecordType.MEMORY,
                        target_id=target,
                        target_type=RecordType.MEMORY,
                        relation_type=relation,
                        opposite_relation_type=opposite_label(relation),
                        created_at=EPOCH + timedelta(seconds=1, microseconds=j),
                    )
                )
            uow.commit()
    return len(pairs)


def store_path(workdir: Path, kind: str) -> Path:
    return workdir / f"{kind}.db"


def build_store(kind: str, config: Config, workdir: Path) -> dict[str, float]:
    """Build one store file: SPREAD (records over ``users`` users) or SOLO (one user + links)."""
    timings: dict[str, float] = {}
    store = EmbeddedStore(store_path(workdir, kind), dimension=config.dim)
    try:
        started = time.perf_counter()
        if kind == SPREAD:
            rng = np.random.default_rng([config.seed, STREAM_SPREAD])
            add_records(store, config, rng, prefix="a", user_of=lambda i: f"u{i % config.users}")
            timings[f"{kind}_records_s"] = time.perf_counter() - started
        elif kind == SOLO:
            rng = np.random.default_rng([config.seed, STREAM_SOLO])
            ids = add_records(store, config, rng, prefix="b", user_of=lambda _i: SOLO_USER)
            timings[f"{kind}_records_s"] = time.perf_counter() - started
            started = time.perf_counter()
            linked = add_links(store, config, np.random.default_rng([config.seed, STREAM_LINKS]), ids)
            timings["links"] = linked
            timings["links_s"] = time.perf_counter() - started
        else:
            raise ValueError(f"unknown store kind {kind!r}")
    finally:
        store.close()
    return timings


def build_all(config: Config, workdir: Path) -> dict[str, float]:
    """Both store files; in two worker processes unless ``config.parallel_build`` is off."""
    if not config.parallel_build:
        return {**build_store(SPREAD, config, workdir), **build_store(SOLO, config, workdir)}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--build-worker",
                kind,
                "--dir",
                str(workdir),
                "--config-json",
                json.dumps(asdict(config)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for kind in (SPREAD, SOLO)
    ]
    timings: dict[str, float] = {}
    for worker in workers:
        out, _ = worker.communicate()
        if worker.returncode != 0:
            raise RuntimeError(f"a build worker failed (exit {worker.returncode}): {worker.args}")
        timings.update(json.loads(out))
    return timings


# -- measurement -----------------------------------------------------------------------------


def queries(rng: np.random.Generator, config: Config, user: str) -> list[SearchQuery]:
    """Prebuilt requests: building (and validating) a query is the caller's cost, not the store's."""
    vectors = unit_vectors(rng, config.warmup + config.queries, config.dim)
    return [
        SearchQuery(k=config.k, now=NOW, vector=tuple(v.tolist()), scope=ScopeFilter(user_id=user))
        for v in vectors
    ]


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def timed_search(store: EmbeddedStore, query: SearchQuery) -> tuple[float, list[SearchHit]]:
    start = time.perf_counter()
    hits = store.search(query)
    return (time.perf_counter() - start) * 1000.0, hits


def latencies(store: EmbeddedStore, requests: Sequence[SearchQuery], warmup: int) -> tuple[list[float], float]:
    """Milliseconds per measured search (after ``warmup``), and mean hits per search."""
    for query in requests[:warmup]:
        store.search(query)
    gc.collect()
    samples: list[float] = []
    hits_total = 0
    for query in requests[warmup:]:
        elapsed, hits = timed_search(store, query)
        samples.append(elapsed)
        hits_total += len(hits)
    return samples, hits_total / max(1, len(samples))


def tree_size(nodes: Sequence[LinkedRecord]) -> int:
    return sum(1 + tree_size(node.children) for node in nodes)


def _latency_figure(key: str, title: str, samples: Sequence[float], target_ms: float) -> Figure:
    p50, p95 = percentile(samples, 50), percentile(samples, 95)
    # The targets are stated as medians; p95 is printed beside them for the tail.
    return Figure(key, title, p50, target_ms, f"p50 {p50:.3f} ms, p95 {p95:.3f} ms")


def measure_spread(config: Config, workdir: Path, rng: np.random.Generator, result: Result) -> None:
    """(a) many users, search scoped to one of them."""
    store = EmbeddedStore(store_path(workdir, SPREAD), dimension=config.dim)
    try:
        samples, hits = latencies(store, queries(rng, config, SCOPED_USER), config.warmup)
    finally:
        store.close()
    result.hits_per_query["a"] = hits
    in_scope = len(range(int(SCOPED_USER[1:]), config.records, config.users))
    title = f"scoped vector search, {in_scope:,} of {config.records:,} rows, k={config.k}"
    result.figures.append(_latency_figure("a", title, samples, 1.0))


def measure_solo(config: Config, workdir: Path, rng: np.random.Generator, result: Result) -> None:
    """(b) exact search over one full scope, (c) graph-expansion cost, (d) open time."""
    linked = int(result.build.get("links", 0))
    probe = queries(rng, config, SOLO_USER)[0]
    opens: list[tuple[float, float]] = []
    for attempt in range(config.open_repeats):
        gc.collect()
        started = time.perf_counter()
        store = EmbeddedStore(store_path(workdir, SOLO), dimension=config.dim)
        constructed = time.perf_counter()
        try:
            # The first search is part of opening: a store that rebuilds lazily pays here.
            store.search(probe)
            opens.append((constructed - started, time.perf_counter() - started))
            if attempt == 0:
                _measure_searches(config, store, rng, result, linked)
        finally:
            store.close()
    construct = min(o[0] for o in opens)
    total = min(o[1] for o in opens)
    result.figures.append(
        Figure(
            "d",
            f"open {config.records:,} records + {linked:,} links (best of {config.open_repeats})",
            total * 1000.0,
            3000.0,
            f"constructor {construct:.3f} s, until first search answered {total:.3f} s",
        )
    )


def _measure_searches(
    config: Config, store: EmbeddedStore, rng: np.random.Generator, result: Result, linked: int
) -> None:
    samples, hits = latencies(store, queries(rng, config, SOLO_USER), config.warmup)
    result.hits_per_query["b"] = hits
    title = f"exact vector search, {config.records:,} rows in scope, k={config.k}"
    result.figures.append(_latency_figure("b", title, samples, 15.0))

    # The same searches with and without a two-hop expansion, interleaved so that both see
    # the same machine state; the figure is the difference of the medians.
    flat = queries(rng, config, SOLO_USER)
    deep = [replace(q, num_hops=2) for q in flat]
    for q0, q2 in zip(flat[: config.warmup], deep[: config.warmup]):
        store.search(q0)
        store.search(q2)
    gc.collect()
    zero: list[float] = []
    two: list[float] = []
    linked_total = 0
    for q0, q2 in zip(flat[config.warmup :], deep[config.warmup :]):
        zero.append(timed_search(store, q0)[0])
        elapsed, hits = timed_search(store, q2)
        two.append(elapsed)
        linked_total += sum(tree_size(hit.linked) for hit in hits)
    result.mean_linked_at_two_hops = linked_total / max(1, len(two))
    m2, m0 = statistics.median(two), statistics.median(zero)
    result.figures.append(
        Figure(
            "c",
            f"graph expansion cost, num_hops=2 vs 0, {linked:,} links",
            m2 - m0,
            2.0,
            f"p50 {m2:.3f} ms - {m0:.3f} ms; {result.mean_linked_at_two_hops:.1f} linked records per search",
        )
    )


def run(config: Config, workdir: Path, log: Callable[[str], None] = print, *, reuse: bool = False) -> Result:
    """Build both store files under ``workdir`` (unless reusing them), then measure the four figures."""
    result = Result(config)
    started = time.perf_counter()
    if reuse:
        result.build = {"spread_records_s": 0.0, "solo_records_s": 0.0, "links": float(config.links), "links_s": 0.0}
        log("reusing the store files already built in " + str(workdir))
        rng = np.random.default_rng([config.seed, STREAM_QUERIES])
        measure_spread(config, workdir, rng, result)
        measure_solo(config, workdir, rng, result)
        result.figures.sort(key=lambda f: f.key)
        return result
    result.build = build_all(config, workdir)
    log(
        f"built in {time.perf_counter() - started:.1f} s (wall): "
        f"{config.records:,} records over {config.users} users in {result.build['spread_records_s']:.1f} s; "
        f"{config.records:,} records in one scope in {result.build['solo_records_s']:.1f} s, "
        f"then {int(result.build['links']):,} links in {result.build['links_s']:.1f} s"
    )
    rng = np.random.default_rng([config.seed, STREAM_QUERIES])
    measure_spread(config, workdir, rng, result)
    measure_solo(config, workdir, rng, result)
    result.figures.sort(key=lambda f: f.key)
    return result


# -- report ----------------------------------------------------------------------------------


def machine_info() -> list[str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass  # not Linux: keep platform.processor()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    try:
        deps: Any = np.show_config(mode="dicts").get("Build Dependencies", {})  # type: ignore[func-returns-value]
        info = deps.get("blas", {})
        blas = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except (TypeError, AttributeError):  # older numpy: no dict mode; BLAS is a courtesy line
        blas = "unknown"
    return [
        f"platform: {platform.platform()}",
        f"cpu: {cpu}, {os.cpu_count()} logical cores ({usable} usable)",
        f"python {platform.python_version()}, numpy {np.__version__} (BLAS: {blas}), SQLite {sqlite3.sqlite_version}",
    ]


def report(result: Result, elapsed: float, quick: bool) -> str:
    c = result.config
    lines = ["palimpsest search benchmark (EmbeddedStore)", *machine_info()]
    lines.append(
        f"N={c.records:,} records per store, {c.users} users for (a), {c.links:,} links for (c), "
        f"dim={c.dim}, k={c.k}, {c.queries} measured queries after {c.warmup} warm-up"
    )
    if quick:
        lines.append("quick run: the targets are for the full run (N=100,000); PASS/FAIL here is indicative only")
    lines.append("(a) and (b) are judged on p50, (c) on the difference of medians, (d) on the best open")
    for fig in result.figures:
        value = f"{fig.value_ms / 1000:.3f} s" if fig.target_ms >= 1000 else f"{fig.value_ms:.3f} ms"
        target = f"{fig.target_ms / 1000:g} s" if fig.target_ms >= 1000 else f"{fig.target_ms:g} ms"
        verdict = "PASS" if fig.passed else "FAIL"
        lines.append(f"({fig.key}) {fig.title}: {value}  target <= {target}  {verdict}  [{fig.detail}]")
    lines.append(f"total run time {elapsed:.1f} s (build included)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N smoke run (seconds)")
    parser.add_argument("--records", type=int, help="records per store (default 100,000)")
    parser.add_argument("--links", type=int, help="links for the graph figure (default 100,000)")
    parser.add_argument("--queries", type=int, help="measured queries per figure (default 200)")
    parser.add_argument("--serial", action="store_true", help="build the two stores one after the other")
    parser.add_argument("--dir", type=Path, help="keep the store files here instead of a temporary folder")
    parser.add_argument("--reuse", action="store_true", help="with --dir: measure the files built by an earlier run")
    parser.add_argument("--build-worker", choices=(SPREAD, SOLO), help=argparse.SUPPRESS)
    parser.add_argument("--config-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.build_worker:  # internal: one store file, timings as JSON on stdout
        config = Config(**json.loads(args.config_json))
        print(json.dumps(build_store(args.build_worker, config, args.dir)))
        return 0

    config = Config.quick() if args.quick else Config()
    overrides: dict[str, Any] = {
        k: v for k, v in (("records", args.records), ("links", args.links), ("queries", args.queries)) if v
    }
    if args.serial:
        overrides["parallel_build"] = False
    config = replace(config, **overrides)
    if config.queries < 200 and not args.quick:
        print("note: fewer than 200 measured queries; p95 is noisy", file=sys.stderr)

    started = time.perf_counter()

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    if args.dir is not None and args.reuse:
        result = run(config, args.dir, log, reuse=True)
    elif args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        for kind in (SPREAD, SOLO):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{store_path(args.dir, kind)}{suffix}").unlink(missing_ok=True)
        result = run(config, args.dir, log)
    else:
        with tempfile.TemporaryDirectory(prefix="palimpsest-bench-") as folder:
            result = run(config, Path(folder), log)
    print(report(result, time.perf_counter() - started, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
