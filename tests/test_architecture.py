"""Architecture tests: the hexagonal dependency rule, a pure domain, honest ``__all__`` lists, quiet imports."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("palimpsest.domain", "palimpsest.application", "palimpsest.adapters")


def _run_python(code: str, *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # -I: isolated mode, so neither the cwd nor PYTHON* variables decide what gets imported.
    return subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(code)],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _lint_imports_executable() -> str:
    beside_python = Path(sys.executable).with_name("lint-imports")
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports (import-linter) is not installed; install the project with '.[dev]'.")
    return found


def _modules_of(package_name: str) -> list[ModuleType]:
    """The package and every module below it. A module whose optional third-party dependency is
    missing (e.g. an adapter for a driver that is an extra) is left out, not reported."""
    package = importlib.import_module(package_name)
    modules = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
        try:
            modules.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.startswith("palimpsest"):
                raise
    return modules


def test_the_layers_respect_the_dependency_rule() -> None:
    result = subprocess.run(
        [_lint_imports_executable(), "--no-cache", "--no-logo"],
        check=False,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        "import-linter reports broken (or unreadable) contracts from pyproject.toml: the layers must only "
        "import downwards (adapters -> application -> domain) and the domain must import no third-party "
        f"package.\n--- lint-imports output ---\n{result.stdout}\n{result.stderr}"
    )


def test_importing_the_domain_loads_no_third_party_module(tmp_path: Path) -> None:
    result = _run_python(
        """
        import json, sys
        before = set(sys.modules)
        import palimpsest.domain
        print(json.dumps(sorted(set(sys.modules) - before)))
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    allowed_roots = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    third_party = [m for m in loaded if m.split(".")[0] not in allowed_roots and m.split(".")[0] != "palimpsest"]
    outer_layers = [m for m in loaded if m.startswith("palimpsest.") and not m.startswith("palimpsest.domain")]
    assert not third_party, f"importing palimpsest.domain loaded third-party modules: {third_party}"
    assert not outer_layers, f"importing palimpsest.domain loaded outer layers: {outer_layers}"


@pytest.mark.parametrize("layer", LAYERS)
def test_every_name_in_an_all_list_exists(layer: str) -> None:
    missing = [
        f"{module.__name__}.{name}"
        for module in _modules_of(layer)
        for name in getattr(module, "__all__", ())
        if not hasattr(module, name)
    ]
    assert not missing, f"__all__ names attributes that do not exist: {missing}"


def test_every_public_class_and_function_of_the_domain_is_exported_by_the_domain_package() -> None:
    domain = importlib.import_module("palimpsest.domain")
    exported_ids = {id(getattr(domain, name)) for name in domain.__all__ if hasattr(domain, name)}
    not_exported = []
    for module in _modules_of("palimpsest.domain")[1:]:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            public = not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__
            # Identity, not name: ``metadata_filter.matches`` is exported as ``metadata_matches``.
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and public and id(obj) not in exported_ids:
                not_exported.append(f"{module.__name__}.{name}")
    assert not not_exported, (
        "these classes/functions are public in their module's __all__ but not exported by "
        f"palimpsest.domain (export them, or drop them from the module's __all__): {not_exported}"
    )


def test_importing_the_embedded_adapter_touches_nothing(tmp_path: Path) -> None:
    embedded = pytest.importorskip("palimpsest.adapters.embedded")
    if not hasattr(embedded, "EmbeddedStore"):
        pytest.skip("the embedded adapter is not written yet")
    cwd, home, tmp = tmp_path / "cwd", tmp_path / "home", tmp_path / "tmp"
    for folder in (cwd, home, tmp):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmp)}
    result = _run_python(
        """
        import threading
        import palimpsest.domain, palimpsest.application, palimpsest.adapters
        import palimpsest.adapters.inmemory, palimpsest.adapters.embedded
        print(threading.active_count())
        """,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    created = {str(p.relative_to(tmp_path)) for folder in (cwd, home, tmp) for p in folder.rglob("*")}
    assert not created, f"importing the adapters created files: {sorted(created)}"
    assert result.stdout.strip() == "1", "importing the adapters started threads"


def _application_imports() -> dict[str, set[str]]:
    """For each module of the application layer, the sibling modules it imports: at the top,
    inside functions, or for type checking only (a cycle held apart by a lazy import is still
    a cycle of responsibilities)."""
    import ast

    folder = PROJECT_ROOT / "application"
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                targets.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["palimpsest", "application"] and len(parts) > 2:
                    targets.add(parts[2])
        graph[name] = (targets & names) - {name}
    return graph


def test_the_application_layer_has_no_import_cycle() -> None:
    graph = _application_imports()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)) is not None:
            pytest.fail(f"import cycle in application/: {' -> '.join(cycle)}")
    assert {"client", "thread", "extraction", "records", "wiring"} <= set(graph)  # the walk saw them


def test_the_driving_adapters_are_held_to_the_store_packages_entry_points() -> None:
    """The forbidden contract that keeps the command line and LangGraph off store internals is
    configured (and so run by the test above) for both drivers and every store package."""
    import tomllib

    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    forbidden = [
        c for c in contracts if c["type"] == "forbidden" and "palimpsest.adapters.cli" in c["source_modules"]
    ]
    internals = {m for c in forbidden for m in c["forbidden_modules"]}
    stores = {f"palimpsest.adapters.{name}.**" for name in ("embedded", "inmemory", "oracle")}
    assert stores <= internals
    assert {"palimpsest.application.client", "palimpsest.application.thread"} <= internals
    assert all("palimpsest.adapters.langgraph" in c["source_modules"] for c in forbidden)
    assert all("palimpsest.adapters.mcp" in c["source_modules"] for c in forbidden)
