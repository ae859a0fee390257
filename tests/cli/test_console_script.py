"""The installed ``palimpsest`` console script runs, in a process of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Seeded


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


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "ORACLE_", "OPENAI_"))
    }
    return subprocess.run(
        [_script(), *args], capture_output=True, text=True, timeout=120, check=False, env=environment
    )


def test_the_console_script_lists_a_store_and_reports_errors_in_one_line(seeded: Seeded) -> None:
    listed = _run("--store", seeded.store, "memories", "--json", "--user", "u1")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == ["m-thin", "m-sour", "f-lyon"]

    failed = _run("--store", seeded.store, "messages", "nope")
    assert failed.returncode == 1
    assert failed.stderr == "error: No thread found with id 'nope'.\n"
    assert failed.stdout == ""
