"""Reads never wait for writers: while another process holds the embedded store's write lock, or
a PostgreSQL writer's locks (its changed rows, an appender's thread lock, the keyword totals).

In WAL mode a reader never needs SQLite's write lock, so no read path may take it; on PostgreSQL
a read is one read-only snapshot that takes no lock a writer holds. A child process
(``lock_holder.py``) opens ``BEGIN IMMEDIATE`` with a pending change and keeps it until the test
lets it go; meanwhile this process opens a client (and the command line opens its own) and every
read must return the committed data. Writes in this process wait ``BUSY`` seconds at most (the
embedded busy timeout; PostgreSQL's ``lock_timeout`` on the client's connections), so a read that
still took a lock fails fast with ``StoreBusyError``; a write attempted after the
reads proves the lock was held all along.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from clients import build_client
from palimpsest.adapters import HashingEmbedder, embedded
from palimpsest.adapters.cli import app
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.application import AgentMemory, MemoryExtractionConfig
from palimpsest.application.testing import ScriptedSummariser
from palimpsest.domain.errors import StoreBusyError
from palimpsest.domain.model import ExtractionJob
from reliability_stores import is_postgres, location, split, with_connection_options
from typer.testing import CliRunner

HOLDER = Path(__file__).with_name("lock_holder.py")
BUSY = 0.5
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
MESSAGES = {
    "msg-1": "I moved to Lyon last spring.",
    "msg-2": "Lyon has great food.",
    "msg-3": "Find me a sourdough bakery near the river.",
}


def seed(spec: str) -> str:
    """A thread with three messages and no stored summary (so reading one summarises), a memory
    superseded by another (one invalid record, one lifecycle link) and one failed extraction job."""
    path = spec
    with build_client(
        path=location(spec),
        embedder=HashingEmbedder(),
        memory_extraction_config=NO_EXTRACTION,
    ) as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"id": mid, "role": "user", "content": text} for mid, text in MESSAGES.items()])
        memory.add_memory("The user lives in Paris.", memory_type="fact", user_id="u1", memory_id="m-old")
        memory.add_memory(
            "The user lives in Lyon now.",
            memory_type="fact",
            user_id="u1",
            memory_id="m-new",
            memory_id_to_link="m-old",
            link_type="supersedes",
            link_id="l-1",
        )
        now = datetime.now(UTC)
        with memory.store.unit_of_work() as uow:
            uow.jobs.add(ExtractionJob(id="job-1", thread_id="t1", first_seq=1, last_seq=3, created_at=now))
            uow.jobs.fail("job-1", reason="the model was down", at=now)
            uow.commit()
    return path


@contextmanager
def write_lock_held(path: Path | str) -> Iterator[None]:
    """Another process holds the store's write lock(s) (with a pending change) inside the block."""
    child = subprocess.Popen(
        [sys.executable, str(HOLDER), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HOLDER.parent,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "HELD"
        yield
    finally:
        out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0 and "RELEASED" in out, err


def quick_client(path: Path | str, summariser: Any = None) -> AgentMemory:
    if is_postgres(str(path)):
        from palimpsest.adapters.postgres.store import PostgresStore

        # Reads must never wait (a lock_timeout on every statement would catch one that did);
        # writes wait the store's own bound, this test's short busy timeout.
        url, store_id = split(with_connection_options(str(path), f"-c lock_timeout={int(BUSY * 1000)}"))
        return build_client(
            store=PostgresStore(url, memory_store_id=store_id, busy_timeout=BUSY),
            embedder=HashingEmbedder(),
            summariser=summariser,
            memory_extraction_config=NO_EXTRACTION,
            close_store=True,
        )
    return build_client(
        store=EmbeddedStore(path, busy_timeout=BUSY),
        embedder=HashingEmbedder(),
        summariser=summariser,
        memory_extraction_config=NO_EXTRACTION,
        close_store=True,
    )


def assert_writes_are_blocked(memory: AgentMemory) -> None:
    with pytest.raises(StoreBusyError):
        memory.add_memory("written under the lock", memory_type="fact", user_id="u1")


def test_a_client_opens_and_every_read_succeeds_while_another_process_holds_the_write_lock(
    store_spec: str,
) -> None:
    path = seed(store_spec)
    with write_lock_held(path), quick_client(path, ScriptedSummariser()) as memory:
        thread = memory.get_thread("t1")
        assert [m.id for m in thread.get_messages()] == list(MESSAGES)
        assert [m.id for m in thread.get_messages(start=1, end=None)] == ["msg-2", "msg-3"]
        assert thread.get_message("msg-2").content == MESSAGES["msg-2"]
        assert [t.id for t in memory.list_threads("u1")] == ["t1"]
        assert [r.id for r in memory.list_memories(user_id="u1")] == ["m-old", "m-new"]
        assert [j.id for j in memory.failed_extractions()] == ["job-1"]
        assert [j.id for j in memory.failed_extractions("t1")] == ["job-1"]
        # Invalid hits make the search read links and successors (current before history).
        hits = memory.search("Where does the user live?", user_id="u1", include_invalid_results=True)
        assert [h.id for h in hits if h.record_type == "fact"][:2] == ["m-new", "m-old"]
        assert "m-new" in [h.id for h in thread.search("Lyon", record_types=["fact"])]
        summary = thread.get_summary()
        assert "sourdough bakery" in summary.content
        card = thread.get_context_card()
        assert "sourdough bakery" in card.content and "Lyon now" in card.content
        assert_writes_are_blocked(memory)


def test_a_stale_summary_is_served_unsaved_while_the_store_is_busy_and_saved_once_it_is_free(
    tmp_path: Path,
) -> None:
    path = seed(str(tmp_path / "busy.db"))
    summariser = ScriptedSummariser()
    with quick_client(path, summariser) as memory:
        thread = memory.get_thread("t1")
        with write_lock_held(path):
            under_lock = thread.get_summary().content
            assert "sourdough bakery" in under_lock
            assert_writes_are_blocked(memory)
        with memory.store.unit_of_work() as uow:
            assert uow.summaries.latest("t1") is None  # the busy store kept nothing half-written
        assert thread.get_summary().content == under_lock
        with memory.store.unit_of_work() as uow:
            stored = uow.summaries.latest("t1")
        assert stored is not None and stored.text == under_lock and stored.covered_through_seq == 3
        assert len(summariser.calls) == 2  # summarised once under the lock, once to be stored


class QuickStore(EmbeddedStore):
    """The command line's embedded store, with this test's short busy timeout."""

    def __init__(self, path: Any, **options: Any) -> None:
        options.setdefault("busy_timeout", BUSY)
        super().__init__(path, **options)


def test_the_command_line_reads_while_another_process_holds_the_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed(str(tmp_path / "busy.db"))
    for name in ("PALIMPSEST_STORE", "PALIMPSEST_EMBEDDER", "ORACLE_DSN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(embedded, "EmbeddedStore", QuickStore)
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, ["--store", str(path), *args])
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.output

    with write_lock_held(path):
        assert "t1" in run("threads")
        assert "find me a sourdough bakery" in run("messages", "t1").lower()
        listed = run("memories", "--user", "u1")
        assert "m-old" in listed and "m-new" in listed
        assert "m-new" in run("search", "Where does the user live?", "--user", "u1")
        assert "sourdough bakery" in run("card", "t1")
        assert '-->|"supersedes"|' in run("graph")
        assert "exported 1 thread, 3 messages, 2 memory records, 1 link" in run("export", "-")
        assert "1 thread(s), 2 memory record(s), 1 link(s)" in run("doctor")
        with QuickStore(path) as store, pytest.raises(StoreBusyError), store.unit_of_work():
            pass  # the lock was held throughout
