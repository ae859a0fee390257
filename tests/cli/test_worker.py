"""``palimpsest worker`` in this process (CliRunner): the options and errors it checks before it
serves. Serving itself runs in real processes: tests/reliability/test_worker_processes.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.domain.errors import ModelUnavailableError

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


class _DownEmbedder(HashingEmbedder):
    """The hashing embedder, unavailable: rows are stored without vectors (ARCHITECTURE.md D43)."""

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Sequence[Sequence[float]]:
        raise ModelUnavailableError("embed: the model server stayed unavailable: HTTP 503.")


def test_drain_also_embeds_the_rows_stored_while_the_embedder_was_down(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with open_memory(path, embedder=HashingEmbedder()):
        pass  # the store records the hashing model: the worker's embedder follows it
    with open_memory(path, embedder=_DownEmbedder(), extraction_runs_in="workers") as memory:
        memory.create_thread(thread_id="t1", user_id="u1").add_messages(
            [{"role": "user", "content": "I live in Oslo and I love sourdough bread."}]
        )
        memory.add_memory("Prefers tea to coffee.", user_id="u1")
        assert memory.admin.waiting_vectors().total == 2
    result = invoke("worker", "--store", str(path), "--drain", "--poll", "0.05")
    assert result.exit_code == 0, result.stderr
    with open_memory(path, embedder=HashingEmbedder(), profile="inspect") as memory:
        assert memory.admin.waiting_vectors().total == 0
        hits = memory.search("Prefers tea to coffee", user_id="u1", search_strategy="vector", max_results=5)
        assert "Prefers tea to coffee." in [r.content for r in hits]
