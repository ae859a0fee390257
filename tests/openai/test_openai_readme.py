"""The README's "Using a model" snippet, run as written against the scripted local server.

Only the server address changes (the snippet names a local Ollama); everything else, the
``memory.db`` it opens in the working folder included, runs verbatim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

from fake_openai_server import CHAT, FakeOpenAIServer, json_answer
from readme_snippets import README, snippet

SOURDOUGH = "The user now prefers sourdough pizza."

# The summary refresh and the background extraction may ask in either order: one answer fits both
# schemas (unknown keys are ignored), so each request finds what it needs.
ANSWER = {"summary": "The user prefers sourdough pizza now.", "topics": ["pizza"],
          "memories": [{"text": SOURDOUGH, "record_type": "preference"}]}


def test_the_model_snippet_prints_what_memory_cost_per_operation(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = snippet("model")
    local = 'base_url="http://localhost:11434/v1"'
    assert local in code
    server.chat(json_answer(ANSWER, prompt_tokens=120, completion_tokens=30),
                json_answer(ANSWER, prompt_tokens=120, completion_tokens=30))
    namespace: dict[str, object] = {"__name__": "readme_model"}
    try:
        exec(compile(code.replace(local, f'base_url="{server.base_url}"'), str(README), "exec"), namespace)  # noqa: S102
        memory = namespace["memory"]
        usage = memory.token_usage.by_operation  # type: ignore[attr-defined]
        stored = [(m.record_type.value, m.content) for m in memory.list_memories(user_id="u1")]  # type: ignore[attr-defined]
    finally:
        if "memory" in namespace:
            namespace["memory"].close()  # type: ignore[attr-defined]

    assert capsys.readouterr().out == f"{usage!r}\n"
    assert {name: (c.calls, c.prompt_tokens, c.completion_tokens) for name, c in usage.items()} == {
        "extract_memories": (1, 120, 30),
        "summarise": (1, 120, 30),
    }
    assert stored == [("preference", SOURDOUGH)]
    assert sorted(r["model"] for r in server.requests_to(CHAT)) == ["qwen2.5:7b", "qwen2.5:7b"]
    assert (tmp_path / "memory.db").is_file()
