"""``open_memory`` is typed (D36): its keywords and its ``AgentMemory`` are visible to mypy,
IDEs and ``inspect``, where it used to be ``(*args: Any, **kwargs: Any) -> Any``; importing
``palimpsest.adapters`` still loads no composition root until it is used."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing

import palimpsest.adapters as adapters
from palimpsest.application import AgentMemory


def test_open_memory_has_its_real_signature_and_return_type() -> None:
    signature = inspect.signature(adapters.open_memory)
    kinds = {p.kind for p in signature.parameters.values()}
    assert inspect.Parameter.VAR_POSITIONAL not in kinds
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    assert next(iter(signature.parameters)) == "location"
    for name in ("store", "embedder", "clock", "memory_retention_config", "search_strategy", "extraction_runs_in"):
        assert signature.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert typing.get_type_hints(adapters.open_memory)["return"] is AgentMemory


def test_every_client_option_of_agent_memory_can_be_given_to_open_memory() -> None:
    client = set(inspect.signature(AgentMemory).parameters) - {"on_close"}  # on_close is the root's own
    assert client <= set(inspect.signature(adapters.open_memory).parameters)


def test_an_unknown_keyword_is_refused_by_name() -> None:
    try:
        adapters.open_memory(colour="blue")  # type: ignore[call-arg]
    except TypeError as exc:
        assert "colour" in str(exc)
    else:
        raise AssertionError("open_memory accepted an unknown keyword")


def test_importing_the_adapters_package_does_not_load_the_composition_root() -> None:
    code = (
        "import sys, palimpsest.adapters\n"
        "print('palimpsest.adapters.bootstrap' in sys.modules)\n"
        "from palimpsest.adapters import open_memory\n"
        "print('palimpsest.adapters.bootstrap' in sys.modules, open_memory.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.split() == ["False", "True", "palimpsest.adapters.bootstrap"]
