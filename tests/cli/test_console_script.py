"""The installed ``palimpsest`` console script runs, in a process of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Invoke, Seeded


def _script() -> str:
    beside_python = Path(sys.executable).with_name("palimpsest")
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("palimpsest")
    if found is None:
        pytest.fail(
            "the palimpsest console script is not installed; install the project with pip install -e ."
        )
    return found


def _environment() -> dict[str, str]:
    """This process's environment without any store, database or model settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "ORACLE_", "OPENAI_"))}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_script(), *args], capture_output=True, text=True, timeout=120, check=False, env=_environment()
    )


def test_the_console_script_lists_a_store_and_reports_errors_in_one_line(seeded: Seeded) -> None:
    listed = _run("--store", seeded.store, "memories", "--json", "--user", "u1")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == ["m-thin", "m-sour", "f-lyon"]

    failed = _run("--store", seeded.store, "messages", "nope")
    assert failed.returncode == 1
    assert failed.stderr == "error: No thread found with id 'nope'.\n"
    assert failed.stdout == ""


def test_the_console_script_notes_a_graph_limit_once(seeded: Seeded) -> None:
    """The note is printed once: the library's warning of the same thing is not repeated."""
    drawn = _run("--store", seeded.store, "graph", "--limit", "1")
    assert drawn.returncode == 0, drawn.stderr
    [note] = drawn.stderr.splitlines()
    assert note.startswith("note: the graph shows the newest 1 of ")
    assert note.endswith("--limit 0 draws every record.")

def test_a_reader_that_stops_early_ends_the_command_quietly(invoke: Invoke, tmp_path: Path) -> None:
    """``palimpsest export - | head``: a closed pipe is no error worth a message."""
    source, store = tmp_path / "many.jsonl", tmp_path / "many.db"
    lines = (
        json.dumps(
            {
                "kind": "memory",
                "id": f"m-{i}",
                "memory_type": "memory",
                "content": "pizza " * 400,
                "created_at": "2025-01-01T00:00:00+00:00",
                "updated_at": "2025-01-01T00:00:00+00:00",
            }
        )
        for i in range(200)
    )
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert invoke("--store", str(store), "--embedder", "none", "import", str(source)).exit_code == 0
    process = subprocess.Popen(
        [_script(), "--store", str(store), "export", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_environment(),
    )
    assert process.stdout is not None and process.stderr is not None
    with process.stdout, process.stderr:
        assert process.stdout.read(8) == b'{"kind":'
        process.stdout.close()
        errors = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert errors == ""
