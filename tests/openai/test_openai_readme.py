"""The README's "Using a model" snippet, run as written against the scripted local server, and
against a server that is down.

Only the server address changes (the snippet names a local Ollama); everything else, the
``memory.db`` it opens in the working folder included, runs verbatim. With the server down, the
retries' waits are also shortened (the same schedules' shape: ``ExtractionRetryPolicy`` and the
chat model's ``backoff_base``/``backoff_cap``), so the test does not wait the default 30 s.
"""

from __future__ import annotations

import socket
import subprocess
import sys
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


def test_the_model_snippet_with_its_server_down_says_so_in_a_few_lines_without_tracebacks(tmp_path: Path) -> None:
    """A model server that is down (a loopback port nobody listens on): each failed extraction
    attempt is one WARNING line, the job that fails for good one ERROR line naming the thread,
    the attempts, the reason and ``retry_failed_extractions()``; no traceback. The snippet's own
    loop prints the reason."""
    code = snippet("model")
    local = 'base_url="http://localhost:11434/v1"'
    model = 'OpenAIChatModel(client, "qwen2.5:7b")'
    opened = 'open_memory("memory.db", '
    assert local in code and model in code and opened in code
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        port = closed.getsockname()[1]
        script = (
            "from palimpsest.application import ExtractionRetryPolicy\n"
            + code.replace(local, f'base_url="http://127.0.0.1:{port}/v1"')
            .replace(model, 'OpenAIChatModel(client, "qwen2.5:7b", backoff_base=0.01, backoff_cap=0.02)')
            .replace(opened, opened + "extraction_retry_policy=ExtractionRetryPolicy("
                     "base_delay_seconds=0.01, max_delay_seconds=0.05), ")
        )
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    retried = [line for line in lines if "will be retried" in line]
    final = [line for line in lines if "failed for good" in line]
    assert len(retried) == 4 and len(final) == 1  # the default schedule: 5 attempts
    assert len(lines) <= 7, done.stderr  # and the summary's refresh, which falls back to a transcript
    assert "after 5 attempts" in final[0] and "APIConnectionError" in final[0]
    assert "retry_failed_extractions()" in final[0] and "thread " in final[0]
    out = done.stdout.splitlines()
    assert out[0].startswith("not extracted: ModelUnavailableError: extract_memories:"), done.stdout
    assert out[1] == "{}"  # nothing was spent
