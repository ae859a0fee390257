"""--embedder auto follows the model the store records; the others are explicit choices."""

from __future__ import annotations

from pathlib import Path

import palimpsest.adapters.openai as openai_adapters
import pytest
from palimpsest.adapters.cli.context import EmbedderChoice, resolve_embedder
from palimpsest.adapters.embedded import EmbeddedStore
from palimpsest.domain.errors import ConfigurationError

from .conftest import Invoke, Seeded
from .helpers import one_line_error


def test_auto_follows_the_hashing_model_and_its_dimension() -> None:
    embedder, note = resolve_embedder(EmbedderChoice.AUTO, "hashing-v1-32")
    assert embedder is not None and embedder.model_id == "hashing-v1-32" and note is None
    explicit, _ = resolve_embedder(EmbedderChoice.HASHING, None)
    assert explicit is not None and explicit.model_id == "hashing-v1-64"
    assert resolve_embedder(EmbedderChoice.NONE, "hashing-v1-32") == (None, None)


def test_auto_uses_an_openai_compatible_model_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_adapters, "ALLOW_MODEL_REQUESTS", False)  # nothing may be sent
    embedder, note = resolve_embedder(EmbedderChoice.AUTO, "text-embedding-3-small@1536")
    assert embedder is None and note is not None and "OPENAI_API_KEY" in note
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    embedder, note = resolve_embedder(EmbedderChoice.AUTO, "text-embedding-3-small@1536")
    assert embedder is not None and note is None
    assert embedder.model_id == "text-embedding-3-small@1536"  # the dimension comes from the store
    monkeypatch.setenv("OPENAI_EMBEDDING_MODEL", "nomic-embed-text")
    other, _ = resolve_embedder(EmbedderChoice.OPENAI, None)
    assert other is not None and getattr(other, "model", None) == "nomic-embed-text"


def test_the_openai_choice_needs_a_key() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        resolve_embedder(EmbedderChoice.OPENAI, None)


def test_a_store_made_by_an_unavailable_model_is_searched_by_keywords_with_a_note(
    invoke: Invoke, seeded: Seeded, tmp_path: Path
) -> None:
    dump, copy = tmp_path / "dump.jsonl", tmp_path / "copy.db"
    assert invoke("--store", seeded.store, "export", str(dump)).exit_code == 0
    assert invoke("--store", str(copy), "--embedder", "none", "import", str(dump)).exit_code == 0
    with EmbeddedStore(copy) as store, store.unit_of_work() as uow:
        uow.settings.set("embedding_model", "text-embedding-3-small@1536")
        uow.commit()
    result = invoke("--store", str(copy), "search", "sourdough", "--user", "u1", "--xml")
    assert result.exit_code == 0, result.output
    assert "<record_id>m-sour</record_id>" in result.stdout
    assert result.stderr.startswith("note: the store's vectors were made by 'text-embedding-3-small@1536'")
    refused = invoke("--store", str(copy), "reembed")
    assert refused.exit_code == 1
    assert "reembed needs an embedder" in one_line_error(refused.stderr)


@pytest.mark.parametrize(
    ("stored", "backend", "model_id"),
    [
        ("sentence-transformers/all-MiniLM-L6-v2@numpy", None, "sentence-transformers/all-MiniLM-L6-v2@numpy"),
        (
            "sentence-transformers/all-MiniLM-L6-v2@numpy-max128",
            None,
            "sentence-transformers/all-MiniLM-L6-v2@numpy-max128",
        ),
        (
            "sentence-transformers/all-MiniLM-L6-v2@onnx-int8",
            "onnxruntime-int8",
            "sentence-transformers/all-MiniLM-L6-v2@onnx-int8",
        ),
        (
            "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-max64",
            "onnxruntime-int8",
            "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-max64",
        ),
    ],
)
def test_auto_follows_the_minilm_variant_the_store_records(
    monkeypatch: pytest.MonkeyPatch, stored: str, backend: str | None, model_id: str
) -> None:
    from palimpsest.adapters import embedder_choice

    monkeypatch.setattr(embedder_choice, "minilm_status", lambda: (True, "installed"))
    monkeypatch.delenv("PALIMPSEST_MINILM_BACKEND", raising=False)
    embedder, note = resolve_embedder(EmbedderChoice.AUTO, stored)
    assert embedder is not None and note is None
    assert embedder.model_id == model_id  # nothing is loaded: the id is known from the options
    if backend is not None:
        assert getattr(embedder, "backend", None) == backend
