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
from palimpsest.domain.errors import ConfigurationError

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


MODEL_LINE = 'model = "openai:gpt-4.1-mini"'


def test_the_main_readme_snippet_runs_as_printed_and_persists_each_turn_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The project README's LangGraph snippet, run as printed but for its model line, replaced by
    a scripted chat model (the snippet names a hosted one): the first ``invoke`` (before, the
    snippet had none, and a run without a thread id failed there) prints the model's answer;
    each user and assistant turn lands in the run's thread, for the snippet's user and agent,
    exactly once although the message list is reused; an agent invoked without a thread id
    is refused, saying what to pass, before anything is stored."""
    from readme_snippets import README as MAIN_README
    from readme_snippets import snippet

    monkeypatch.chdir(tmp_path)  # the snippet opens "memory.db" in the working folder
    code = snippet("langgraph")
    assert code.count(MODEL_LINE) == 1
    code = code.replace(MODEL_LINE, 'model = scripted(["Hello Maya.", "Sourdough, then."])')
    namespace: dict[str, Any] = {"__name__": "readme_langgraph", "scripted": scripted}
    try:
        exec(compile(code, str(MAIN_README), "exec"), namespace)  # noqa: S102
        assert capsys.readouterr().out == "Hello Maya.\n"
        agent, config, memory = namespace["agent"], namespace["config"], namespace["memory"]
        assert set(agent.nodes["tools"].bound.tools_by_name) == {"search_memory", "save_memory"}
        state = namespace["state"]
        state["messages"].append({"role": "user", "content": "Which pizza?"})
        agent.invoke({"messages": state["messages"]}, config)
        thread = memory.get_thread("maya-1")
        assert (thread.user_id, thread.agent_id) == ("maya", "assistant")
        assert [(m.role, m.content) for m in thread.get_messages()] == [
            ("user", "Hi, I'm Maya."),
            ("assistant", "Hello Maya."),
            ("user", "Which pizza?"),
            ("assistant", "Sourdough, then."),
        ]
        threads_before = len(memory.list_threads("maya"))
        with pytest.raises(ConfigurationError, match=re.escape("config={'configurable': {'thread_id': ...}}")):
            agent.invoke({"messages": [{"role": "user", "content": "Hi again."}]})
        assert len(memory.list_threads("maya")) == threads_before
    finally:
        if "memory" in namespace:
            namespace["memory"].close()
    assert (tmp_path / "memory.db").exists()


def test_the_checkpointer_snippet_prints_the_state_the_second_run_started_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The project README's checkpointer snippet, as printed, in an empty working folder; while
    the embedded store keeps no checkpoints, the same code on the in-memory store (its one
    ``open_memory`` line changed), so the rest of it is checked meanwhile."""
    from palimpsest.adapters import open_memory
    from readme_snippets import README as MAIN_README
    from readme_snippets import prose_after, snippet

    monkeypatch.chdir(tmp_path)
    code = snippet("checkpointer")
    with open_memory(str(tmp_path / "probe.db")) as probe:
        embedded_keeps_checkpoints = probe.checkpoints.available
    if not embedded_keeps_checkpoints:
        assert code.count('open_memory("memory.db")') == 1
        code = code.replace('open_memory("memory.db")', "open_memory()")
    exec(compile(code, str(MAIN_README), "exec", dont_inherit=True), {"__name__": "readme_checkpointer"})  # noqa: S102
    printed = capsys.readouterr().out.strip()
    assert printed == "['hello', 'note 1', 'again', 'note 3']"
    assert f"`{printed}`" in prose_after("checkpointer")
    assert (tmp_path / "memory.db").exists() is embedded_keeps_checkpoints
