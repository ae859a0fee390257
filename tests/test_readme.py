"""The README's usage example runs as written (so the README keeps telling the truth)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_usage_example_runs_and_shows_the_superseded_history(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    exec(compile(blocks[0], str(README), "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "<relation_type>supersedes</relation_type>" in printed
    assert "thin crust" in printed and "<status>invalid</status>" in printed
    assert printed.count("<context_card>") == 1 and "<recent_messages>" in printed


def test_ci_runs_the_readme_test_command() -> None:
    """The README's test command is what CI runs, and the Makefile's test target runs the suite."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    assert "```bash\nmake test\n```" in readme
    assert "run make test " in ci
    test_recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert '-m pytest -m "not slow"' in test_recipe and "lint-imports" in test_recipe
