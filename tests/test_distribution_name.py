"""One distribution name everywhere: the build's, the command line's, and every install hint's."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from palimpsest.adapters.cli import app
from palimpsest.adapters.cli.context import DISTRIBUTION
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
HINT = re.compile(r"pip install (?:--\S+ )*'?([A-Za-z0-9][A-Za-z0-9._-]*)\[")
"""``pip install 'NAME[extra]'``: a hint that names a distribution (not ``'.[extra]'``)."""


def _sources() -> list[Path]:
    files = [ROOT / name for name in ("README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "pyproject.toml")]
    for folder in ("adapters", "application", "domain", "examples"):
        files += sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.md"))
    return [f for f in files if f.is_file()]


def test_the_build_produces_the_distribution_the_code_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert DISTRIBUTION != "palimpsest", "that name belongs to an unrelated project on PyPI"


def test_every_install_hint_names_that_distribution() -> None:
    hints = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources()
        for name in HINT.findall(path.read_text(encoding="utf-8"))
    }
    assert hints, "the hints were not found: the pattern is out of date"
    assert {hint for hint in hints if not hint.endswith(f": {DISTRIBUTION}")} == set()


def test_the_version_option_reads_the_installed_distribution() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"palimpsest {metadata.version(DISTRIBUTION)}\n"
