"""Adapters layer: which embedder a client on an existing store gets (the "inspect" profile).

A store records the id of the model its vectors were made with. :func:`resolve_embedder`
turns a choice (``auto`` follows the store; ``minilm``, ``hashing``, ``openai``, ``none``)
and that recorded id into an embedder that can run here, or none with a note saying why
search is keyword-only. The composition root uses it for ``open_memory(profile="inspect")``
(the command line's client); the command line's ``--embedder`` option names the choice.
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass
from typing import Any, Final

from palimpsest.application import Embedder
from palimpsest.application.store_settings import EMBEDDING_MODEL_SETTING
from palimpsest.domain.errors import ConfigurationError
from palimpsest.domain.ports import MemoryStore

__all__ = [
    "DEFAULT_OPENAI_EMBEDDING_MODEL",
    "ChosenEmbedder",
    "EmbedderChoice",
    "embedder_for_store",
    "minilm_status",
    "resolve_embedder",
    "stored_model_id",
]

DEFAULT_OPENAI_EMBEDDING_MODEL: Final = "text-embedding-3-small"
_HASHING_ID: Final = re.compile(r"hashing-v1-(\d+)")
_MINILM_PREFIX: Final = "sentence-transformers/all-MiniLM-L6-v2"
# MiniLM's ids: "@numpy" (the numpy and onnxruntime backends: the same vectors) or "@onnx-int8"
# (the opt-in int8 weights), then "-maxN" when it truncates at N tokens instead of 256.
_MINILM_ID: Final = re.compile(r"^sentence-transformers/all-MiniLM-L6-v2@(numpy|onnx-int8)(?:-max(\d+))?$")


class EmbedderChoice(str, enum.Enum):
    """Which embedder a client on an existing store gets (the command line's ``--embedder``)."""

    AUTO = "auto"
    MINILM = "minilm"
    HASHING = "hashing"
    OPENAI = "openai"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class ChosenEmbedder:
    """The embedder chosen for a store (``None``: keyword search only) and a note for the user."""

    embedder: Embedder | None
    note: str | None = None


def minilm_status() -> tuple[bool, str]:
    """Whether the offline MiniLM embedder can run here, and where its weights are (or why not)."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        return (
            False,
            f"the {exc.name or 'tokenizers/safetensors'} package is missing (pip install 'palimpsest-memory[minilm]')",
        )
    from palimpsest.adapters.minilm import find_model_folder

    try:
        folder = find_model_folder(None)
    except ConfigurationError as exc:
        return False, str(exc)
    return True, str(folder)


def _minilm(stored: str | None = None) -> Embedder:
    """MiniLM; with the store's ``...@onnx-int8`` id, on int8 weights; with its ``-maxN``,
    truncating at the same ``N`` tokens."""
    available, detail = minilm_status()
    if not available:
        raise ConfigurationError(f"the MiniLM embedder is not available: {detail}")
    from palimpsest.adapters.minilm import MiniLMEmbedder

    options: dict[str, Any] = {}
    match = _MINILM_ID.search(stored or "")
    if match and match.group(1) == "onnx-int8":
        options["backend"] = "onnxruntime-int8"
    if match and match.group(2):
        options["max_seq_length"] = int(match.group(2))
    embedder: Embedder = MiniLMEmbedder(**options)
    return embedder


def _hashing(stored: str | None) -> Embedder:
    from palimpsest.adapters.hashing import HashingEmbedder

    match = _HASHING_ID.fullmatch(stored or "")
    return HashingEmbedder(int(match.group(1)) if match else 64)


def _openai(stored: str | None) -> Embedder:
    try:
        from palimpsest.adapters.openai import OpenAIEmbedder, client_from_env
    except ImportError as exc:
        raise ConfigurationError(
            f"the OpenAI embedder needs the openai package ({exc}); pip install 'palimpsest-memory[openai]'."
        ) from None
    model = os.environ.get("OPENAI_EMBEDDING_MODEL") or None
    dimension: int | None = None
    if (
        stored
        and "@" in stored
        and not stored.startswith(_MINILM_PREFIX)
        and not _HASHING_ID.fullmatch(stored)
    ):
        stored_model, _, stored_dimension = stored.rpartition("@")
        if model is None or model == stored_model:
            model = stored_model
            dimension = int(stored_dimension) if stored_dimension.isdigit() else None
    client = client_from_env()
    embedder: Embedder = OpenAIEmbedder(client, model or DEFAULT_OPENAI_EMBEDDING_MODEL, dimension=dimension)
    return embedder


def resolve_embedder(choice: EmbedderChoice, stored: str | None) -> tuple[Embedder | None, str | None]:
    """The embedder for ``choice`` given the store's recorded model id, and a note for the user.

    ``auto`` follows the store: the model its vectors were made with when that model can run
    here (MiniLM with its weights installed, the hashing test embedder, an OpenAI-compatible
    model with ``OPENAI_API_KEY`` set), else none (keyword search only, with a note). A store
    with no recorded model gets MiniLM when installed, else none.
    """
    if choice is EmbedderChoice.NONE:
        return None, None
    if choice is EmbedderChoice.MINILM:
        return _minilm(stored), None
    if choice is EmbedderChoice.HASHING:
        return _hashing(stored), None
    if choice is EmbedderChoice.OPENAI:
        return _openai(stored), None
    if stored is None:
        available, _ = minilm_status()
        return (_minilm(), None) if available else (None, None)
    if _HASHING_ID.fullmatch(stored):
        return _hashing(stored), None
    if stored.startswith(_MINILM_PREFIX):
        available, detail = minilm_status()
        if available:
            return _minilm(stored), None
        return (
            None,
            f"the store's vectors were made by MiniLM, which is not available here ({detail}); search is keyword-only.",
        )
    if os.environ.get("OPENAI_API_KEY"):
        return _openai(stored), None
    return None, (
        f"the store's vectors were made by {stored!r}; set OPENAI_API_KEY (and OPENAI_BASE_URL) to use it, "
        "or pass --embedder. Search is keyword-only."
    )


def stored_model_id(store: MemoryStore) -> str | None:
    """The embedding model id the store records for its vectors, if any."""
    with store.reading() as uow:
        value = uow.settings.get(EMBEDDING_MODEL_SETTING)
    return value if isinstance(value, str) else None


def embedder_for_store(choice: EmbedderChoice | str, store: MemoryStore) -> ChosenEmbedder:
    """:func:`resolve_embedder` for ``choice`` against the model ``store`` records."""
    try:
        chosen = EmbedderChoice(choice)
    except ValueError:
        names = ", ".join(repr(c.value) for c in EmbedderChoice)
        raise ConfigurationError(f"the embedder choice must be one of {names}, got {choice!r}.") from None
    embedder, note = resolve_embedder(chosen, stored_model_id(store))
    return ChosenEmbedder(embedder, note)
