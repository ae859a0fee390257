"""The console script's HTTP server in a subprocess, on a free loopback port, and the stores the
tests serve: an embedded file or a fresh ``memory_store_id`` on the session's PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import AgentMemory

BOUND = 90.0
"""How long a server may take to start or to stop (seconds; generous on a loaded machine)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def script() -> str:
    beside = Path(sys.executable).with_name("palimpsest")
    found = str(beside) if beside.exists() else shutil.which("palimpsest")
    if found is None:
        pytest.fail("the palimpsest console script is not installed (pip install -e .)")
    return found


def environment() -> dict[str, str]:
    """This process's environment without store, database or model settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "ORACLE_", "OPENAI_"))}


def fresh_connections(base: str) -> httpx.Client:
    """A client that opens a new connection for each request (so that the kernel may hand each
    to any of the server's processes), without the cost of a new client per request."""
    return httpx.Client(base_url=base, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def open_store(location: str) -> AgentMemory:
    """A client on the served store (the hashing embedder the store records)."""
    return open_memory(location, embedder=HashingEmbedder())


def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new store, created (the server creates none): a file, or on PostgreSQL a fresh
    ``memory_store_id`` (its schema dropped afterwards)."""
    if request.param == "embedded":
        location = str(tmp_path / "memory.db")
        open_store(location).close()
        yield location
        return
    import psycopg
    from postgres_server import PostgresTarget

    target: PostgresTarget = request.getfixturevalue("postgres_target")
    store_id = f"s{uuid.uuid4().hex[:12]}"
    location = f"{target.url}{'&' if '?' in target.url else '?'}memory_store_id={store_id}"
    open_store(location).close()
    try:
        yield location
    finally:
        with psycopg.connect(target.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "palimpsest_{store_id}" CASCADE')


class Server:
    """``palimpsest --store LOCATION serve http --port P *options`` until :meth:`stop`."""

    def __init__(self, location: str, *options: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [script(), "--store", location, "serve", "http", "--port", str(self.port), *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
        )
        deadline = time.monotonic() + BOUND
        while True:
            if self.process.poll() is not None:
                _, err = self.process.communicate()
                raise AssertionError(f"the server exited with {self.process.returncode}:\n{err}")
            try:
                if httpx.get(self.base + "/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("the server did not start")
            time.sleep(0.1)

    def children(self) -> list[int]:
        """The server's worker processes."""
        found: list[int] = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            found += [int(pid) for pid in (task / "children").read_text().split()]
        return found

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig``; the exit code and standard error."""
        self.process.send_signal(sig)
        try:
            _, err = self.process.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("the server did not stop") from None
        return self.process.returncode, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
