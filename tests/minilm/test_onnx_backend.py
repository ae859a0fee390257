"""MiniLM tests: the onnxruntime backend (the ONNX graph written by the adapter) against the numpy
one, the choice between them, and the numpy fallback."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from palimpsest.adapters.minilm import BACKEND_ENV, MiniLMEmbedder, bert, onnx_encoder
from palimpsest.adapters.minilm import embedder as embedder_module
from palimpsest.domain.errors import ConfigurationError

from .test_bert import CONFIG, _random_state, _reference
from .test_minilm_embedder import needs_model

FIXTURE = Path(__file__).with_name("reference_vectors.json")
needs_onnxruntime = pytest.mark.skipif(
    not onnx_encoder.available(), reason="onnxruntime not installed: pip install -e '.[minilm]'"
)
needs_onnx = pytest.mark.skipif(
    importlib.util.find_spec("onnx") is None, reason="the onnx package is not installed: pip install -e '.[dev]'"
)


def _tiny_weights(seed: int = 3) -> tuple[dict[str, np.ndarray], bert.BertWeights]:
    state = _random_state(seed)
    return state, bert.BertWeights.from_state_dict(CONFIG, state)


# --- The graph and its serialization (no model files needed) -------------------------------------


def _helper_model(graph: onnx_encoder.Graph) -> Any:
    """The same graph built with the onnx package's helper API."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node(
            n.op,
            list(n.inputs),
            [n.output],
            name=n.output,
            domain=n.domain or None,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in n.attributes.items()},
        )
        for n in graph.nodes
    ]
    initializers = [numpy_helper.from_array(np.asarray(v), k) for k, v in graph.constants.items()]
    for name, array in graph.weights.items():
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "in-memory"), ("offset", "0"), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        initializers.append(tensor)

    def info(name: str, element: int, dims: tuple[str | int, ...]) -> Any:
        return helper.make_tensor_value_info(name, element, list(dims))

    made = helper.make_graph(
        nodes,
        graph.name,
        [info(*spec) for spec in graph.inputs],
        [info(*spec) for spec in graph.outputs],
        initializer=initializers,
    )
    opsets = [helper.make_opsetid("", onnx_encoder.OPSET)]
    if any(n.domain for n in graph.nodes):
        opsets.append(helper.make_opsetid(onnx_encoder.CONTRIB, 1))
    model = helper.make_model(made, opset_imports=opsets)
    model.ir_version = onnx_encoder.IR_VERSION
    model.producer_name = "palimpsest"
    return model


@needs_onnx
@pytest.mark.parametrize("fused", [True, False])
def test_the_serialized_model_is_what_the_onnx_helpers_build(fused: bool) -> None:
    import onnx

    _, weights = _tiny_weights()
    graph = onnx_encoder.build_graph(weights, fused=fused)
    assert any(n.domain == onnx_encoder.CONTRIB for n in graph.nodes) is fused
    assert graph.weights and graph.constants  # both kinds of initializer are exercised
    ours = onnx.load_model_from_string(onnx_encoder.serialize(graph))
    assert ours == _helper_model(graph)
    # With the weights in place of their external references, the model passes onnx's checker
    # (every input defined before use, the ops and attributes of opset 17, shape inference).
    inline = [onnx.numpy_helper.from_array(array, name) for name, array in graph.weights.items()]
    kept = [t for t in ours.graph.initializer if t.name not in graph.weights]
    del ours.graph.initializer[:]
    ours.graph.initializer.extend(kept + inline)
    onnx.checker.check_model(ours, full_check=True)


def test_the_default_graph_runs_the_layers_on_onnxruntime_s_fused_operators() -> None:
    _, weights = _tiny_weights()
    fused = onnx_encoder.build_graph(weights)
    contrib = [n.op for n in fused.nodes if n.domain == onnx_encoder.CONTRIB]
    layers = CONFIG.num_hidden_layers
    assert sorted(set(contrib)) == ["Attention", "BiasGelu", "SkipLayerNormalization"]
    assert (contrib.count("Attention"), contrib.count("BiasGelu"), contrib.count("SkipLayerNormalization")) == (
        layers,
        layers,
        2 * layers,
    )
    assert not {"Erf", "Softmax", "Transpose"} & {n.op for n in fused.nodes}  # nothing left unfused
    plain = onnx_encoder.build_graph(weights, fused=False)  # ONNX's operators only (the int8 mode's)
    assert all(n.domain == "" for n in plain.nodes) and len(plain.nodes) > 2 * len(fused.nodes)


@needs_onnxruntime
@pytest.mark.parametrize("fused", [True, False])
def test_the_session_computes_bert_on_padded_batches(fused: bool) -> None:
    state, weights = _tiny_weights()
    encoder = onnx_encoder.OnnxEncoder(weights, threads=1, fused=fused)
    texts = [[1, 7, 9, 4, 2], [1, 3, 3, 8, 2, 10, 11, 12, 13], [1, 5, 2], [1]]
    expected = np.array([_reference(state, t).mean(axis=0) for t in texts])
    batched = encoder.pooled(texts)  # padded to 9 tokens
    assert batched.shape == (4, CONFIG.hidden_size) and batched.dtype == np.float32
    assert np.abs(batched - expected).max() <= 1e-5
    for i, text in enumerate(texts):  # alone: no padding at all
        assert np.abs(encoder.pooled([text])[0] - batched[i]).max() <= 1e-6
    # The numpy path on the same weights.
    lengths = [len(t) for t in texts]
    packed = bert.encode(weights, np.array([i for t in texts for i in t], dtype=np.int64), lengths)
    assert np.abs(bert.normalise(batched.copy()) - bert.mean_pool_normalise(packed, lengths)).max() <= 1e-6


@needs_onnxruntime
def test_an_empty_token_list_is_refused() -> None:
    _, weights = _tiny_weights()
    with pytest.raises(ValueError):
        onnx_encoder.OnnxEncoder(weights, threads=1).pooled([[1, 2], []])


def test_the_protobuf_varint_writes_negative_int64_as_ten_bytes() -> None:
    assert onnx_encoder._varint(1) == b"\x01"
    assert onnx_encoder._varint(300) == b"\xac\x02"
    assert onnx_encoder._varint(-1) == b"\xff" * 9 + b"\x01"


# --- Choosing the backend ------------------------------------------------------------------------


def test_the_backend_is_onnxruntime_when_installed_else_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    monkeypatch.setattr(embedder_module, "onnx_available", lambda: True)
    assert MiniLMEmbedder().backend == "onnxruntime"
    monkeypatch.setattr(embedder_module, "onnx_available", lambda: False)
    assert MiniLMEmbedder().backend == "numpy"
    assert MiniLMEmbedder(backend="numpy").backend == "numpy"
    assert MiniLMEmbedder(backend="onnxruntime").backend == "onnxruntime"  # checked when it loads


def test_the_environment_variable_chooses_for_embedders_built_without_a_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedder_module, "onnx_available", lambda: True)
    monkeypatch.setenv(BACKEND_ENV, "numpy")
    assert MiniLMEmbedder().backend == "numpy"
    assert MiniLMEmbedder(backend="onnxruntime").backend == "onnxruntime"  # an argument wins
    monkeypatch.setenv(BACKEND_ENV, " ONNXRuntime ")
    assert MiniLMEmbedder().backend == "onnxruntime"
    monkeypatch.setenv(BACKEND_ENV, "torch")
    with pytest.raises(ConfigurationError, match=BACKEND_ENV):
        MiniLMEmbedder()


@pytest.mark.parametrize("backend", ["torch", "", 1, "ONNX"])
def test_a_bad_backend_is_refused(backend: object) -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(backend=backend)  # type: ignore[arg-type]


def test_the_model_id_does_not_depend_on_the_backend() -> None:
    ids = {MiniLMEmbedder(backend=b).model_id for b in ("numpy", "onnxruntime")}
    assert ids == {"sentence-transformers/all-MiniLM-L6-v2@numpy"}


def _onnxruntime_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError


@needs_model
def test_a_required_onnxruntime_that_does_not_import_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _onnxruntime_missing(monkeypatch)
    with pytest.raises(ConfigurationError, match=r"palimpsest-memory\[minilm\]"):
        MiniLMEmbedder(backend="onnxruntime").embed(["hello"])


@needs_model
def test_auto_falls_back_to_numpy_when_onnxruntime_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    monkeypatch.setattr(embedder_module, "onnx_available", lambda: True)
    _onnxruntime_missing(monkeypatch)
    embedder = MiniLMEmbedder()
    vector = embedder.embed_array(["hello there"])
    assert embedder.backend == "numpy"
    expected = MiniLMEmbedder(backend="numpy").embed_array(["hello there"])
    assert np.array_equal(vector, expected)


def test_importing_the_adapter_imports_no_runtime() -> None:
    code = (
        "import sys, palimpsest.adapters.minilm as m; m.MiniLMEmbedder();"
        "print(sorted(n for n in ('onnx', 'onnxruntime', 'ml_dtypes') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


@needs_model
@needs_onnxruntime
def test_the_onnxruntime_path_never_imports_the_onnx_package() -> None:
    code = (
        "import sys; from palimpsest.adapters.minilm import MiniLMEmbedder;"
        "MiniLMEmbedder(backend='onnxruntime').embed(['hello']);"
        "print(sorted(n for n in ('onnx', 'ml_dtypes', 'onnxruntime') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip() == "['onnxruntime']"


# --- Parity with the numpy path on the real model ------------------------------------------------


def _texts() -> list[str]:
    sentences: list[str] = json.loads(FIXTURE.read_text(encoding="utf-8"))["sentences"]
    return [
        *sentences,
        "",
        "hi",
        "Ünïcödé, 日本語のテキスト, emoji 🎉🚀 and a zero-width\u200bjoiner",
        "When did Caroline go to the LGBTQ support group?",
        " ".join(f"word{i} and more" for i in range(400)),  # past 512 tokens
    ]


@pytest.fixture(scope="module")
def both() -> tuple[MiniLMEmbedder, MiniLMEmbedder]:
    return MiniLMEmbedder(backend="numpy").load(), MiniLMEmbedder(backend="onnxruntime").load()


@needs_model
@needs_onnxruntime
def test_both_backends_give_the_same_vectors_batched_and_one_by_one(
    both: tuple[MiniLMEmbedder, MiniLMEmbedder],
) -> None:
    numpy_path, onnx_path = both
    texts = _texts()
    expected = numpy_path.embed_array(texts)
    batched = onnx_path.embed_array(texts)
    assert batched.shape == expected.shape == (len(texts), 384)
    assert np.abs(batched - expected).max() <= 1e-6
    for i, text in enumerate(texts):
        assert np.abs(onnx_path.embed_array([text])[0] - expected[i]).max() <= 1e-6, text[:40]
    # A text's vector does not depend on what it is padded with in its batch.
    assert np.abs(onnx_path.embed_array(texts[::-1])[::-1] - batched).max() <= 1e-6


@needs_model
@needs_onnxruntime
def test_the_fused_graph_gives_the_vectors_of_the_unfused_one_and_of_numpy(
    both: tuple[MiniLMEmbedder, MiniLMEmbedder],
) -> None:
    numpy_path, onnx_path = both
    assert numpy_path.model_id == onnx_path.model_id == "sentence-transformers/all-MiniLM-L6-v2@numpy"
    loaded = numpy_path._load()
    assert loaded.weights is not None
    texts = _texts()[:-1]  # the reference sentences and the short, empty and non-ASCII texts
    ids = [e.ids for e in loaded.tokenizer.encode_batch(texts, add_special_tokens=True)]
    fused = onnx_encoder.OnnxEncoder(loaded.weights, threads=1)
    plain = onnx_encoder.OnnxEncoder(loaded.weights, threads=1, fused=False)
    expected = numpy_path.embed_array(texts)
    for i, tokens in enumerate(ids):
        one_fused = bert.normalise(fused.pooled([tokens]))[0]
        assert np.abs(one_fused - bert.normalise(plain.pooled([tokens]))[0]).max() <= 1e-6, texts[i][:40]
        assert np.abs(one_fused - expected[i]).max() <= 1e-6, texts[i][:40]
    # Padded together: the mask keeps each text's vector its own.
    assert np.abs(bert.normalise(fused.pooled(ids)) - expected).max() <= 1e-6


@needs_model
@needs_onnxruntime
@pytest.mark.parametrize("max_seq_length", [512, 8])
def test_both_backends_truncate_alike(max_seq_length: int) -> None:
    texts = _texts()[-6:]
    numpy_path = MiniLMEmbedder(backend="numpy", max_seq_length=max_seq_length)
    onnx_path = MiniLMEmbedder(backend="onnxruntime", max_seq_length=max_seq_length, batch_size=2)
    assert numpy_path.model_id == onnx_path.model_id
    assert np.abs(onnx_path.embed_array(texts) - numpy_path.embed_array(texts)).max() <= 1e-6


@needs_model
@needs_onnxruntime
def test_onnxruntime_batches_hold_at_most_sixteen_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder(backend="onnxruntime", batch_size=32).load()
    sizes: list[int] = []
    real = MiniLMEmbedder._encode

    def counting(loaded: Any, ids: list[list[int]]) -> Any:
        sizes.append(len(ids))
        return real(loaded, ids)

    monkeypatch.setattr(MiniLMEmbedder, "_encode", staticmethod(counting))
    embedder.embed_array([f"text number {i}" for i in range(40)])
    assert sizes == [16, 16, 8]
    sizes.clear()
    MiniLMEmbedder(backend="numpy", batch_size=32).embed_array([f"text number {i}" for i in range(40)])
    assert sizes == [32, 8]


def test_a_padded_batch_holds_texts_of_near_lengths_only() -> None:
    # Longest first; a text joins while the batch's padded tokens stay within 2 % + 2 per text.
    assert embedder_module.padded_batches([95, 94, 93, 60, 59, 20, 20, 20, 19, 3], 16) == [
        [0, 1, 2],
        [3, 4],
        [5, 6, 7, 8],
        [9],
    ]
    assert embedder_module.padded_batches([5] * 40, 16) == [list(range(16)), list(range(16, 32)), list(range(32, 40))]
    assert embedder_module.padded_batches([], 16) == []


@needs_model
@needs_onnxruntime
def test_onnxruntime_pads_little_on_texts_of_mixed_lengths(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder(backend="onnxruntime").load()
    texts = [" ".join(["word"] * n) + "." for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 3, 5, 8, 1)]
    expected = np.vstack([embedder.embed_array([t]) for t in texts])
    batches: list[list[int]] = []
    real = MiniLMEmbedder._encode

    def recording(loaded: Any, ids: list[list[int]]) -> Any:
        batches.append([len(tokens) for tokens in ids])
        return real(loaded, ids)

    monkeypatch.setattr(MiniLMEmbedder, "_encode", staticmethod(recording))
    vectors = embedder.embed_array(texts)
    assert np.abs(vectors - expected).max() <= 1e-6
    assert sorted(n for batch in batches for n in batch) == sorted(n + 3 for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 3, 5, 8, 1))
    for batch in batches:  # padded to its longest text
        assert max(batch) * len(batch) <= sum(batch) * 1.02 + 2 * len(batch), batches
    assert len(batches) < len(texts)  # texts of one length share a call


# --- The opt-in int8 mode ------------------------------------------------------------------------


def test_the_int8_mode_has_its_own_model_id() -> None:
    assert MiniLMEmbedder(backend="onnxruntime-int8").model_id == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
    assert (
        MiniLMEmbedder(backend="onnxruntime-int8", max_seq_length=64).model_id
        == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-max64"
    )


@needs_model
def test_the_int8_mode_without_the_onnx_package_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ConfigurationError, match="onnx"):
        MiniLMEmbedder(backend="onnxruntime-int8").embed(["hello"])


@needs_model
@needs_onnxruntime
@needs_onnx
def test_the_int8_vectors_are_close_and_do_not_depend_on_the_batch(
    both: tuple[MiniLMEmbedder, MiniLMEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    exact = both[0]
    int8 = MiniLMEmbedder(backend="onnxruntime-int8")
    texts = _texts()
    with caplog.at_level("WARNING"):
        batched = int8.embed_array(texts)
    assert not caplog.records  # the quantizer's advice about pre-processing is not passed on
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    cosines = (batched * exact.embed_array(texts)).sum(axis=1)
    assert cosines.min() > 0.95 and cosines.max() < 1.0 - 1e-4  # close, yet other vectors
    assert np.array_equal(np.vstack([int8.embed_array([t]) for t in texts]), batched)
