"""The LangGraph integration README's examples run as written, in order, with a scripted model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="the LangGraph integration needs the optional extra 'langgraph'"
)

from lg_doubles import scripted

README = Path(__file__).resolve().parents[2] / "adapters" / "langgraph" / "README.md"


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example opens "memory.db" in the working folder
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 3
    namespace: dict[str, Any] = {"__name__": "langgraph_readme", "model": scripted(["Hi Bob!"])}
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
        memory = namespace["memory"]
        assert [m.content for m in memory.get_thread("1").get_messages()] == ["hi, my name is Bob", "Hi Bob!"]
        assert [h.key for h in namespace["hits"]] == ["food"]
        assert {t.name for t in namespace["tools"]} == {"search_memory", "save_memory"}
    finally:
        if "memory" in namespace:
            namespace["memory"].close()
    assert (tmp_path / "memory.db").exists()
