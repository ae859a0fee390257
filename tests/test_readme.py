"""The README's snippets run as written and print what the prose after them says.

The quickstart and the Oracle snippet run here; the model snippet runs against the local fake
OpenAI server (``tests/openai/test_openai_readme.py``) and the LangGraph one with a scripted chat
model (``tests/langgraph_integration/test_lg_readme.py``). The shell snippets are checked against
what they name: the Makefile targets, the demo's files, the test markers, the benchmark scripts.
"""

from __future__ import annotations

import re
import socket
import tomllib
import xml.etree.ElementTree as ET

import pytest
from readme_snippets import README, SNIPPETS, prose_after, python_blocks, shell_blocks, snippet

ROOT = README.parent
THIN = "The user's preferred pizza style is thin crust."
SOURDOUGH = "The user now prefers sourdough pizza."


def test_every_python_snippet_of_the_readme_is_run_by_a_test() -> None:
    blocks = python_blocks()
    assert blocks, "the README has no Python example"
    for block in blocks:
        owners = [name for name, marker in SNIPPETS.items() if marker in block]
        assert len(owners) == 1, f"a README snippet no test runs (or two claim it):\n{block}"
    assert len(blocks) == len(SNIPPETS)


def _text(element: ET.Element | None, path: str) -> str | None:
    return None if element is None else element.findtext(path)


def test_the_quickstart_prints_the_current_preference_with_its_history_then_a_card_holding_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exec(compile(snippet("quickstart"), str(README), "exec"), {"__name__": "readme_quickstart"})  # noqa: S102
    search_text, card_text = capsys.readouterr().out.split("<context_card>", 1)

    # "the current preference with the thin-crust one linked below it as history (<status>invalid</status>)"
    result = ET.fromstring(search_text)
    assert (result.tag, _text(result, "status"), _text(result, "content")) == ("preference", "valid", SOURDOUGH)
    [link] = result.findall("linked_records/linked_record")
    assert _text(link, "relation_type") == "supersedes"
    assert (_text(link, "preference/status"), _text(link, "preference/content")) == ("invalid", THIN)
    assert "<status>invalid</status>" in prose_after("quickstart")

    # "the card holds the thread's summary, topics, relevant memories (both preferences, the old
    # one invalid) and the newest message"
    card = ET.fromstring("<context_card>" + card_text)
    assert [child.tag for child in card] == ["topics", "summary", "relevant_information", "recent_messages"]
    assert len(card.findall("topics/topic")) > 0
    assert "sourdough pizza" in (card.findtext("summary") or "")
    relevant = card.find("relevant_information")
    assert relevant is not None
    preferences = {(p.findtext("content"), p.findtext("status")) for p in relevant.findall("preference")}
    assert preferences == {(SOURDOUGH, "valid"), (THIN, "invalid")}
    [newest] = card.findall("recent_messages/message")
    assert (newest.findtext("role"), newest.findtext("content")) == (
        "assistant",
        "Sure: two options near you, both vegetarian-friendly.",
    )
    assert "vegetarian-friendly" not in ET.tostring(relevant, encoding="unicode"), "the tail is not searched"


def _listening(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def test_the_oracle_snippet_without_a_database_fails_at_once_with_a_storage_error() -> None:
    """What the README says it does where no database answers (the `oracle` tests run the store
    against a real one)."""
    pytest.importorskip("oracledb", reason="the Oracle snippet needs the 'oracle' extra")
    from palimpsest.domain.errors import AgentMemoryError, StorageError

    code = snippet("oracle")
    [(host, port)] = re.findall(r"@([\d.]+):(\d+)/", code)
    if _listening(host, int(port)):
        pytest.skip(f"a database answers at {host}:{port}; the oracle tests cover that case")
    with pytest.raises(StorageError) as raised:
        exec(compile(code, str(README), "exec"), {"__name__": "readme_oracle"})  # noqa: S102
    assert isinstance(raised.value, AgentMemoryError) and "DPY-" in str(raised.value)
    assert "fails at once with a `StorageError`" in " ".join(README.read_text(encoding="utf-8").split())


# -- the shell snippets ------------------------------------------------------------------------


def _recipe(target: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]


def test_make_demo_runs_the_demo_whose_pictures_the_readme_names() -> None:
    """`make demo` installs and runs `palimpsest demo` (its run is tested in tests/cli_graph_demo)."""
    from palimpsest.adapters.cli.demo import GRAPH_FILES

    assert "make demo" in shell_blocks()[0]
    assert "palimpsest demo" in _recipe("demo")
    readme = README.read_text(encoding="utf-8")
    named = re.findall(r"`(memory_graph\.html)`, `(\.svg)` and\s+`(\.mmd)`", readme)
    assert named and {"memory_graph" + n if n.startswith(".") else n for n in named[0]} == set(GRAPH_FILES)
    assert "palimpsest demo --folder DIR" in readme


def test_ci_runs_the_readme_test_command() -> None:
    """The README's test command is what CI runs, and the Makefile's test target runs the suite."""
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "```bash\nmake test\n```" in readme
    assert "run make test " in ci
    test_recipe = _recipe("test")
    assert '-m pytest -m "not slow"' in test_recipe and "lint-imports" in test_recipe


def test_the_oracle_commands_name_a_compose_service_and_a_registered_marker() -> None:
    [block] = [b for b in shell_blocks() if "docker compose" in b]
    assert "docker compose up -d --wait oracle" in block and "python -m pytest -m oracle" in block
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    assert re.search(r"^  oracle:\n", compose, re.MULTILINE) and "healthcheck:" in compose  # --wait needs one
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    assert any(m.startswith("oracle:") for m in pytest_options["ini_options"]["markers"])
    for name in ("ORACLE_DSN", "ORACLE_USER", "ORACLE_PASSWORD"):
        assert name in block and name in (ROOT / "tests" / "oracle_database.py").read_text(encoding="utf-8")


def test_the_benchmark_commands_name_scripts_and_extras_that_exist() -> None:
    """The benchmarks take minutes, so the default run only checks what they name (their smoke
    tests run them small)."""
    commands = "\n".join(b for b in shell_blocks() if "benchmarks/" in b)
    scripts = re.findall(r"benchmarks/(\w+\.py)", commands)
    assert len(scripts) == 6
    for script in scripts:
        assert (ROOT / "benchmarks" / script).is_file(), script
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in re.findall(r"pip install -e '\.\[(\w+)\]'", README.read_text(encoding="utf-8")):
        assert extra in extras, extra


def test_the_moving_up_commands_are_the_ones_the_moving_up_test_runs() -> None:
    """The README's two commands are the export and import that ``tests/postgres/test_moving_up.py``
    runs from an embedded file into PostgreSQL (and checks the same searches on)."""
    [block] = [b for b in shell_blocks() if " export " in b and " import " in b]
    assert "palimpsest --store memory.db export memory.jsonl" in block
    assert re.search(r"palimpsest --store 'postgresql://[^']+' import --reembed memory\.jsonl", block)
    test = (ROOT / "tests" / "postgres" / "test_moving_up.py").read_text(encoding="utf-8")
    assert '"--store", store, "export"' in test and '"import", "--reembed"' in test
