"""Benchmarks (outside the package): extraction throughput of 1 and 3 ``palimpsest worker`` processes on one backlog.

A client with ``extraction_runs_in="workers"`` appends ``--conversations`` × ``--appends``
messages to an embedded store file (one extraction job per append, the hashing embedder) and
exits. For each worker count, a fresh copy of that file is served by that many ``palimpsest
worker --drain --extractor openai`` processes, whose model is
:class:`~palimpsest.adapters.openai.testing.LoopbackExtractionServer` in this process: an
OpenAI-compatible server on 127.0.0.1 answering each request after ``--delay`` seconds (a model
call of fixed latency, so the figure shows how the workers overlap their model calls rather
than this machine's cores).

The clock starts when every worker has its first requests held at the model (so interpreter
start-up is not counted) and stops when the store has no job left; throughput is jobs per
second over that span. The model's request log is checked: every job ran exactly once.

Run: ``python benchmarks/bench_workers.py`` (defaults: 240 jobs, 50 ms model, 1 and 3 workers
of 1 thread each); ``--worker-threads 4`` gives each worker the default four attempts at once.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CLIENT = r"""
import sys
from palimpsest.adapters import HashingEmbedder, open_memory

path, conversations, appends = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open_memory(path, embedder=HashingEmbedder(), extraction_runs_in="workers") as memory:
    for c in range(conversations):
        thread = memory.create_thread(thread_id=f"c{c}", user_id=f"u{c % 10}")
        for a in range(appends):
            thread.add_messages([{"role": "user", "content": f"message {c}.{a}: I moved to city number {a} in year {c}."}])
"""


def texts(conversations: int, appends: int) -> list[str]:
    return [f"message {c}.{a}: I moved to city number {a} in year {c}." for c in range(conversations) for a in range(appends)]


def pending(store: object) -> int:
    """Jobs still to run in ``store`` (read through its port: what the workers left)."""
    with store.reading() as uow:  # type: ignore[attr-defined]
        return len(uow.jobs.list())


def opened(path: Path) -> object:
    from palimpsest.adapters.embedded import EmbeddedStore

    return EmbeddedStore(path)


def run(backlog: Path, workers: int, args: argparse.Namespace, folder: Path) -> dict[str, float]:
    from palimpsest.adapters.openai.testing import LoopbackExtractionServer

    path = folder / f"served-{workers}.db"
    shutil.copyfile(backlog, path)
    jobs = args.conversations * args.appends
    palimpsest = str(Path(sys.executable).with_name("palimpsest"))
    with LoopbackExtractionServer(delay=args.delay) as model:
        model.open.clear()  # hold the first requests until every worker is up
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PALIMPSEST_"))}
        env |= {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "bench", "OPENAI_MODEL": "bench"}
        command = [palimpsest, "worker", "--store", str(path), "--drain", "--extractor", "openai",
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
            store = opened(path)
            started = time.perf_counter()
            model.open.set()
            while pending(store):
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
            store.close()  # type: ignore[attr-defined]
            for process in processes:
                _, err = process.communicate(timeout=300)
                if process.returncode != 0:
                    raise SystemExit(f"a worker failed:\n{err}")
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
        sent = Counter(model.targets())
    runs = "each job once" if sent == Counter(texts(args.conversations, args.appends)) else f"NOT each once: {sent.most_common(3)}"
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
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        folder = Path(tmp)
        backlog = folder / "backlog.db"
        subprocess.run(
            [sys.executable, "-c", CLIENT, str(backlog), str(args.conversations), str(args.appends)], check=True
        )
        store = opened(backlog)
        assert pending(store) == args.conversations * args.appends
        store.close()  # type: ignore[attr-defined]
        results = [run(backlog, n, args, folder) for n in counts]
    base = results[0]["jobs_per_s"]
    for result in results[1:]:
        print(f"{int(result['workers'])} workers / {int(results[0]['workers'])}: {result['jobs_per_s'] / base:.2f}x")


if __name__ == "__main__":
    main()
