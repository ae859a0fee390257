"""``palimpsest worker`` in this process (CliRunner): the options and errors it checks before it
serves. Serving itself runs in real processes: tests/reliability/test_worker_processes.py."""

from __future__ import annotations

from pathlib import Path

from palimpsest.adapters import HashingEmbedder, open_memory

from .conftest import Invoke
from .helpers import one_line_error


def test_a_missing_store_file_is_one_error_line(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("worker", "--store", str(tmp_path / "missing.db"), "--drain")
    assert result.exit_code == 1
    assert "no store file at" in one_line_error(result.stderr)
    assert not (tmp_path / "missing.db").exists()


def test_drain_runs_the_backlog_with_the_heuristic_extractor_and_reports_each_job(
    invoke: Invoke, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    with open_memory(path, embedder=HashingEmbedder(), extraction_runs_in="workers") as memory:
        thread = memory.create_thread(thread_id="t1", user_id="u1")
        thread.add_messages([{"role": "user", "content": "I live in Oslo and I love sourdough bread."}])
        thread.add_messages([{"role": "user", "content": "I work as a nurse at the city hospital."}])
    result = invoke("worker", "--store", str(path), "--drain", "--poll", "0.05")
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("job ")]
    assert [line.split(" messages ")[1].split(":")[0] for line in lines] == ["1-1", "2-2"]  # in order
    assert all(": done in " in line for line in lines)
    assert "2 job(s) done, 0 failed" in result.stderr
    with open_memory(path, embedder=HashingEmbedder(), profile="inspect") as memory:
        assert memory.pending_extractions() == []
        assert memory.list_memories(user_id="u1") != []
