"""Test helper: the README's ``python`` snippets, each found by a line only it contains.

Every snippet is run by one test (the quickstart in ``tests/test_readme.py``, the model snippet
against the local fake OpenAI server in ``tests/openai``, the LangGraph snippets in
``tests/langgraph_integration``); ``tests/test_readme.py`` checks that every ``python`` block of
the README is one of these, so a new snippet cannot go untested.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"

SNIPPETS = {
    "quickstart": "with open_memory() as memory:",
    "model": "chat = OpenAIChatModel(client,",
    "oracle": 'memory = open_memory("oracle://',
    "langgraph": "middleware = ShortTermMemoryMiddleware(memory,",
    "checkpointer": "saver = PalimpsestSaver(memory,",
}
"""Snippet name → a line fragment that identifies its block."""


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def snippet(name: str) -> str:
    """The one README ``python`` block that contains ``SNIPPETS[name]``."""
    [block] = [b for b in python_blocks() if SNIPPETS[name] in b]
    return block


def shell_blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def prose_after(name: str) -> str:
    """The README text between the snippet's closing fence and the next heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(snippet(name))
    after = text[start:].split("```\n", 1)[1]
    return after.split("\n#", 1)[0]
