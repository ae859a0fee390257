"""Fixtures of the command-line tests: a clean environment, a runner, and seeded embedded stores.

Stores are built with ``open_memory(path, embedder=HashingEmbedder())`` and a manual clock that
starts in the past, so the command line (which reads the real clock) sees fixed times and one
record that has already expired. The command line finds the hashing embedder by itself: its
``--embedder auto`` follows the model id the store records.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.adapters.cli import app
from palimpsest.adapters.inmemory import ManualClock
from palimpsest.application import MemoryExtractionConfig, MemoryRetentionConfig
from typer.testing import CliRunner, Result

START = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
NO_EXTRACTION = MemoryExtractionConfig(extract_memories=False)
HOSTILE = "[bold red]not markup[/bold red] \x1b[31mESC\x1b[0m"
"""Untrusted text: rich markup and a terminal escape sequence, both to be shown, never obeyed."""

_ENVIRONMENT = (
    "PALIMPSEST_STORE",
    "PALIMPSEST_EMBEDDER",
    "PALIMPSEST_EXTRACTOR",
    "PALIMPSEST_MEMORY_STORE_ID",
    "ORACLE_DSN",
    "ORACLE_USER",
    "ORACLE_PASSWORD",
    "PGUSER",
    "PGPASSWORD",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_EMBEDDING_MODEL",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No store, database or model from the developer's environment; wide, colourless output."""
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")


Invoke = Callable[..., Result]


@pytest.fixture
def invoke() -> Invoke:
    """``invoke(*args, input=None)``: run the app; an exception the app did not handle fails the test."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        result = runner.invoke(app, list(args), input=input)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return run


@dataclass(frozen=True)
class Seeded:
    """A seeded store file and the ids in it."""

    path: Path
    thin: str = "m-thin"
    sourdough: str = "m-sour"
    lyon: str = "f-lyon"
    guideline: str = "g-polite"
    hostile: str = "m-hostile"
    expired: str = "m-expired"
    thread: str = "t-1"
    other_thread: str = "t-2"
    supersedes_link: str = "l-supersedes"
    supports_link: str = "l-supports"

    @property
    def store(self) -> str:
        return str(self.path)


def seed(path: Path) -> Seeded:
    """Two users, two threads with messages and a summary, four types of records, an expired
    record, a lifecycle link (so one record is invalid), a custom link and a retention policy."""
    seeded = Seeded(path)
    clock = ManualClock(START, tick=timedelta(milliseconds=1))
    with open_memory(
        path,
        embedder=HashingEmbedder(),
        clock=clock,
        memory_extraction_config=NO_EXTRACTION,
        memory_retention_config=MemoryRetentionConfig(default_ttl_days=None, max_ttl_days=3650),
    ) as memory:
        thread = memory.create_thread(
            thread_id=seeded.thread, user_id="u1", agent_id="a1", metadata={"topic": "food"}
        )
        thread.add_messages(
            [
                {"role": "user", "content": "I live in Lyon and I love pizza."},
                {"role": "assistant", "content": "Noted: Lyon, and pizza."},
                {"role": "user", "content": "Find me a sourdough pizza place for Friday."},
            ]
        )
        thread.get_summary()  # stores a summary revision
        other = memory.create_thread(thread_id=seeded.other_thread, user_id="u2")
        other.add_messages([{"role": "user", "content": HOSTILE}])
        add = memory.add_memory
        add(
            "The user's preferred pizza is thin crust.",
            memory_type="preference",
            user_id="u1",
            memory_id=seeded.thin,
            autonomous_linking=False,
        )
        add(
            "The user now prefers sourdough pizza.",
            memory_type="preference",
            user_id="u1",
            memory_id=seeded.sourdough,
            autonomous_linking=False,
            metadata={"source": "chat", "tags": ["pizza"]},
        )
        add(
            "The user lives in Lyon.",
            memory_type="fact",
            user_id="u1",
            agent_id="a1",
            thread_id=seeded.thread,
            memory_id=seeded.lyon,
            autonomous_linking=False,
            timestamp="2025-05-30T12:00:00+00:00",
        )
        add(
            "Always answer politely.",
            memory_type="guideline",
            user_id="u2",
            agent_id="a1",
            memory_id=seeded.guideline,
            autonomous_linking=False,
        )
        add(HOSTILE, user_id="u2", memory_id=seeded.hostile, autonomous_linking=False)
        add(
            "A pizza voucher that ran out.",
            user_id="u1",
            memory_id=seeded.expired,
            ttl_days=1,
            autonomous_linking=False,
        )
        memory.link_records(
            seeded.sourdough,
            "preference",
            seeded.thin,
            "preference",
            "supersedes",
            relation_id=seeded.supersedes_link,
        )
        memory.link_records(
            seeded.lyon,
            "fact",
            seeded.sourdough,
            "preference",
            "supports",
            relation_id=seeded.supports_link,
            metadata={"why": "Lyon has sourdough"},
        )
    return seeded


@pytest.fixture(scope="session")
def _seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seed(tmp_path_factory.mktemp("template") / "memory.db").path


@pytest.fixture
def seeded(_seeded_template: Path, tmp_path: Path) -> Seeded:
    """A private copy of the seeded store (seeding once per session keeps the tests fast)."""
    target = tmp_path / "memory.db"
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{_seeded_template}{suffix}")
        if source.exists():
            shutil.copyfile(source, Path(f"{target}{suffix}"))
    return Seeded(target)
