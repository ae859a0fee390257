"""The driving adapters reach a store only through the application (ARCHITECTURE.md D36).

The command line, the LangGraph adapter, the MCP server and the servers' package (``adapters/server*``) use the
client's methods and its ``admin`` (:class:`~palimpsest.application.StoreAdmin`), on the
client's clock: they never read ``.store`` off anything but their own object, never build a
``RecordService`` or a clock of their own. import-linter forbids the modules behind ``admin``
(a contract in pyproject.toml); this test reads the code for what an import rule cannot see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"
FORBIDDEN_NAMES = frozenset({"RecordService", "SystemClock", "ManualClock"})
"""Names a driver must not import: the service behind ``admin``, and clocks of its own."""


def _driver_files() -> list[Path]:
    folders = [ADAPTERS / "cli", ADAPTERS / "langgraph", ADAPTERS / "mcp", *sorted(ADAPTERS.glob("server*"))]
    return sorted(path for folder in folders if folder.is_dir() for path in folder.rglob("*.py"))


def side_doors(source: str) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each way ``source`` goes around the application to a store."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id == "self"):
                yield node.lineno, f"{ast.unparse(node)} (use the client's admin)"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "store"
        ):
            yield node.lineno, f"{ast.unparse(node)} (use the client's admin)"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in FORBIDDEN_NAMES:
                    yield node.lineno, f"imports {alias.name} from {node.module}"
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            yield node.lineno, f"uses {node.id}"


def test_the_drivers_exist_where_this_test_looks() -> None:
    names = {path.relative_to(ADAPTERS).as_posix() for path in _driver_files()}
    assert {"cli/app.py", "cli/doctor.py", "langgraph/store.py", "mcp/server.py"} <= names


@pytest.mark.parametrize("path", _driver_files(), ids=lambda p: p.relative_to(ADAPTERS).as_posix())
def test_no_driver_reaches_the_store_around_the_application(path: Path) -> None:
    found = [f"{path.name}:{line}: {what}" for line, what in side_doors(path.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "memory.store.dimension",
        "self._memory.store",
        "with session.store.reading() as uow: pass",
        "getattr(memory, 'store')",
        "from palimpsest.application import RecordService",
        "from palimpsest.application.record_service import RecordService as R",
        "from palimpsest.adapters.clock import SystemClock",
    ],
)
def test_the_rule_sees_each_side_door(source: str) -> None:
    assert list(side_doors(source)), source


def test_the_rule_lets_a_driver_read_its_own_store_field() -> None:
    """``CliSettings.store`` is the location option, read by its own methods."""
    assert list(side_doors("def names(self):\n    return self.store is not None\n")) == []
