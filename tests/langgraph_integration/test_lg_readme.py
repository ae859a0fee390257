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


def test_the_main_readme_snippet_builds_an_agent_that_persists_each_turn_once(memory: Any) -> None:
    """The project README's LangGraph snippet, with the ``memory`` and ``model`` it says it needs:
    the agent has the two memory tools, and each user and assistant turn lands in the run's
    thread, for the snippet's user and agent, exactly once although the message list is reused."""
    from readme_snippets import README as MAIN_README
    from readme_snippets import snippet

    namespace: dict[str, Any] = {"__name__": "readme_langgraph", "memory": memory,
                                 "model": scripted(["Hello Maya.", "Sourdough, then."])}
    exec(compile(snippet("langgraph"), str(MAIN_README), "exec"), namespace)  # noqa: S102
    assert set(namespace["agent"].nodes["tools"].bound.tools_by_name) == {"search_memory", "save_memory"}
    config = {"configurable": {"thread_id": "maya-1"}}
    state = namespace["agent"].invoke({"messages": [{"role": "user", "content": "Hi, I'm Maya."}]}, config)
    state["messages"].append({"role": "user", "content": "Which pizza?"})
    namespace["agent"].invoke({"messages": state["messages"]}, config)
    thread = memory.get_thread("maya-1")
    assert (thread.user_id, thread.agent_id) == ("maya", "assistant")
    assert [(m.role, m.content) for m in thread.get_messages()] == [
        ("user", "Hi, I'm Maya."),
        ("assistant", "Hello Maya."),
        ("user", "Which pizza?"),
        ("assistant", "Sourdough, then."),
    ]
