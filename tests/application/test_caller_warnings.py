"""Warnings name the caller's line, however many library frames the call went through, so that
Python's default filters show a ``DeprecationWarning`` to a script (they show those attributed to
``__main__`` only)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

from palimpsest.adapters import HashingEmbedder, open_memory
from palimpsest.application import AgentMemory


def _caught(action) -> list[warnings.WarningMessage]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return list(caught)


def test_each_warning_names_this_file() -> None:
    memory: AgentMemory = open_memory(":memory:", embedder=HashingEmbedder())
    try:
        thread = memory.create_thread(thread_id="t", user_id="u")
        actions = {
            "create_thread deprecated keyword": lambda: memory.create_thread(user_id="u", extract_memories=False),
            "update_thread deprecated keyword": lambda: memory.update_thread("t", extract_memories=False),
            "store property": lambda: memory.store,
            "small token budget": lambda: memory.search("x", user_id="u", token_budget=10),
        }
        for name, action in actions.items():
            caught = _caught(action)
            assert caught, name
            assert {w.filename for w in caught} == {__file__}, (name, [(w.filename, w.lineno) for w in caught])
        del thread
    finally:
        memory.close()


def test_a_script_sees_the_deprecation_with_default_filters() -> None:
    script = textwrap.dedent(
        """
        from palimpsest.adapters import HashingEmbedder, open_memory
        memory = open_memory(":memory:", embedder=HashingEmbedder())
        memory.create_thread(user_id="u", extract_memories=False)
        memory.close()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert "DeprecationWarning" in done.stderr and "memory_extraction_config" in done.stderr
