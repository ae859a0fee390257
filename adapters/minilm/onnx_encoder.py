"""MiniLM adapter: the same BERT forward pass as :mod:`.bert`, as an ONNX graph run by onnxruntime.

The graph is built in memory from the loaded weights (:class:`.bert.BertWeights`): nothing is
downloaded, converted offline or written to disk. It has the operations of :func:`.bert.encode`
(word + position + token-type embeddings, layer norms, self-attention, the exact erf GELU) and
the masked mean pooling of :func:`.bert.mean_pool_normalise`; the L2 normalisation stays in
numpy. Each layer runs on onnxruntime's own fused operators (``Attention``,
``SkipLayerNormalization``, ``BiasGelu``: exact, not approximations), which its graph optimizer
does not find in this graph by itself. Texts of one batch are padded to the longest of them; the attention mask keeps the
padding out of every softmax and of the mean, so a text's vector does not depend on its batch
(to float32 rounding).

The model is serialized here (:func:`serialize`, the few ONNX protobuf messages the graph needs)
rather than with the ``onnx`` package, whose import takes about 1.4 s (``ml_dtypes``): a first
query would pay it. The weights are not copied into it: the model names them as external data,
which the session is handed in memory. Only ``onnxruntime`` is needed at run time, imported
when the session is made (:func:`available` tells whether it can be); the tests check the
bytes against the ``onnx`` package's own builder.
"""

from __future__ import annotations

import importlib.util
import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .bert import BertWeights

__all__ = ["Graph", "Node", "OnnxEncoder", "available", "build_graph", "quantized_model", "serialize"]

Array = npt.NDArray[np.float32]

OPSET = 17  # LayerNormalization is in the default domain from opset 17
IR_VERSION = 8  # the IR version of opset 17: readable by every onnxruntime that runs opset 17
# Added to the attention scores of padding keys: exp() of it is 0 in float32, next to scores of
# magnitude below 100, so padding gets exactly no weight (every text has at least [CLS]).
_MASKED_SCORE = -1e4
# Weight tensors of this many elements or more are handed to the session as external data.
_EXTERNAL_ELEMENTS = 256
_FLOAT, _INT32, _INT64 = 1, 6, 7  # TensorProto.DataType
CONTRIB = "com.microsoft"  # the domain of onnxruntime's own operators (version 1)
_ATTRIBUTE_FLOAT, _ATTRIBUTE_INT, _ATTRIBUTE_INTS = 1, 2, 7  # AttributeProto.AttributeType


def available() -> bool:
    """Whether ``onnxruntime`` is installed (without importing it)."""
    try:
        return importlib.util.find_spec("onnxruntime") is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True, slots=True)
class Node:
    op: str
    inputs: tuple[str, ...]
    output: str  # also the node's name
    attributes: Mapping[str, float | int | tuple[int, ...]] = field(default_factory=dict)
    domain: str = ""  # "" for ONNX's own operators, CONTRIB for onnxruntime's


@dataclass(frozen=True, slots=True)
class Graph:
    """An ONNX graph: nodes in order, constants (serialized in the model) and weights (external
    data), the inputs (name, element type, dimensions: a name is a symbolic one) and outputs."""

    nodes: tuple[Node, ...]
    constants: Mapping[str, npt.NDArray[Any]]
    weights: Mapping[str, Array]
    inputs: tuple[tuple[str, int, tuple[str | int, ...]], ...]
    outputs: tuple[tuple[str, int, tuple[str | int, ...]], ...]
    name: str = "all-MiniLM-L6-v2"


class _Builder:
    """Collects a graph's nodes, constants (serialized in the model) and weights (external data)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.constants: dict[str, npt.NDArray[Any]] = {}
        self.external: dict[str, Array] = {}

    def const(self, name: str, value: npt.ArrayLike, dtype: Any = np.float32) -> str:
        array = np.asarray(value, dtype=dtype)
        if array.size < _EXTERNAL_ELEMENTS:
            self.constants[name] = array
        else:  # the transposed weights are copied; the others are used as they are
            self.external[name] = np.ascontiguousarray(array)
        return name

    def node(
        self, op: str, inputs: Sequence[str], output: str, domain: str = "", **attributes: float | tuple[int, ...]
    ) -> str:
        self.nodes.append(Node(op, tuple(inputs), output, attributes, domain))
        return output

    def linear(self, x: str, weight: Array, bias: Array, name: str) -> str:
        return self.node("Add", [self.matmul(x, weight, name), self.const(f"{name}.b", bias)], f"{name}.out")

    def matmul(self, x: str, weight: Array, name: str) -> str:
        # PyTorch's (out, in) layout transposed to MatMul's (in, out).
        return self.node("MatMul", [x, self.const(f"{name}.w", weight.T)], f"{name}.mm")

    def layer_norm(self, x: str, gamma: Array, beta: Array, eps: float, name: str) -> str:
        inputs = [x, self.const(f"{name}.g", gamma), self.const(f"{name}.b", beta)]
        return self.node("LayerNormalization", inputs, name, axis=-1, epsilon=eps)

    def skip_layer_norm(self, x: str, skip: str, bias: Array, gamma: Array, beta: Array, eps: float, name: str) -> str:
        """LayerNorm(x + skip + bias): a dense layer's bias, the residual and the norm in one node."""
        inputs = [x, skip, self.const(f"{name}.g", gamma), self.const(f"{name}.b", beta), self.const(f"{name}.bias", bias)]
        return self.node("SkipLayerNormalization", inputs, name, CONTRIB, epsilon=eps)


def build_graph(weights: BertWeights, *, fused: bool = True) -> Graph:
    """The encoder and the masked mean pooling as a :class:`Graph`.

    Inputs ``input_ids`` (int64, batch × length) and ``attention_mask`` (float32, 1 for a token,
    0 for padding); output ``pooled`` (float32, batch × hidden): each text's mean token vector,
    not normalised. ``fused`` (the default): each layer's attention, its two bias-residual-norm
    steps and its bias and GELU are onnxruntime's own operators (:data:`CONTRIB`: ``Attention``,
    ``SkipLayerNormalization``, ``BiasGelu``, whose GELU is the exact erf one), 7 nodes a layer
    instead of 28, the same vectors to float32 rounding; else ONNX's operators alone (the graph
    the int8 quantizer rewrites).
    """
    config = weights.config
    eps = float(config.layer_norm_eps)
    g = _Builder()
    # Embeddings: the first `length` rows of the position table, token type 0 for every token.
    length = g.node("Shape", ["input_ids"], "length", start=1, end=2)
    positions = g.node(
        "Slice", [g.const("position", weights.position), g.const("zero", [0], np.int64), length], "positions"
    )
    words = g.node("Gather", [g.const("word", weights.word), "input_ids"], "words")
    x = g.node("Add", [words, positions], "emb.sum")
    x = g.node("Add", [x, g.const("token_type0", weights.token_type[0])], "emb.typed")
    x = g.layer_norm(x, weights.emb_ln_g, weights.emb_ln_b, eps, "emb.ln")
    x = _fused_layers(g, weights, x) if fused else _layers(g, weights, x)

    # Masked mean over the tokens: sum(h · mask) / sum(mask).
    mask3 = g.node("Unsqueeze", ["attention_mask", g.const("pool.axes", [2], np.int64)], "pool.mask")
    masked = g.node("Mul", [x, mask3], "pool.masked")
    summed = g.node("ReduceSum", [masked, g.const("pool.axis", [1], np.int64)], "pool.sum", keepdims=0)
    counts = g.node("ReduceSum", ["attention_mask", "pool.axis"], "pool.count", keepdims=1)
    g.node("Div", [summed, counts], "pooled")
    return Graph(
        nodes=tuple(g.nodes),
        constants=g.constants,
        weights=g.external,
        inputs=(
            ("input_ids", _INT64, ("batch", "length")),
            ("attention_mask", _FLOAT, ("batch", "length")),
        ),
        outputs=(("pooled", _FLOAT, ("batch", config.hidden_size)),),
    )


def _fused_layers(g: _Builder, weights: BertWeights, x: str) -> str:
    """The encoder layers on onnxruntime's fused operators (see :func:`build_graph`)."""
    eps = float(weights.config.layer_norm_eps)
    # Attention's raw mask: 1 for a token, 0 for padding, whose keys get its mask_filter_value
    # added to their scores (-10,000, as _MASKED_SCORE: exactly no weight).
    mask = g.node("Cast", ["attention_mask"], "mask.int32", to=_INT32)
    for i, layer in enumerate(weights.layers):
        p = f"l{i}"
        # The query weights come scaled by 1/√head_dim (BertWeights): scale 1 keeps the scores so.
        qkv = [x, g.const(f"{p}.qkv.w", layer.qkv_w.T), g.const(f"{p}.qkv.b", layer.qkv_b), mask]
        heads = weights.config.num_attention_heads
        context = g.node("Attention", qkv, f"{p}.context", CONTRIB, num_heads=heads, scale=1.0)
        attended = g.matmul(context, layer.out_w, f"{p}.attn")
        attended = g.skip_layer_norm(attended, x, layer.out_b, layer.ln1_g, layer.ln1_b, eps, f"{p}.ln1")
        inner = g.matmul(attended, layer.up_w, f"{p}.up")
        activated = g.node("BiasGelu", [inner, g.const(f"{p}.up.b", layer.up_b)], f"{p}.gelu", CONTRIB)
        down = g.matmul(activated, layer.down_w, f"{p}.down")
        x = g.skip_layer_norm(down, attended, layer.down_b, layer.ln2_g, layer.ln2_b, eps, f"{p}.ln2")
    return x


def _layers(g: _Builder, weights: BertWeights, x: str) -> str:
    """The encoder layers on ONNX's operators alone."""
    config = weights.config
    hidden = config.hidden_size
    heads = config.num_attention_heads
    eps = float(config.layer_norm_eps)
    # (batch, 1, 1, keys): 0 for a token, _MASKED_SCORE for padding.
    one = g.const("one", 1.0)
    inverted = g.node("Sub", [one, "attention_mask"], "mask.inverted")
    bias = g.node("Mul", [inverted, g.const("masked", _MASKED_SCORE)], "mask.scaled")
    bias = g.node("Unsqueeze", [bias, g.const("mask.axes", [1, 2], np.int64)], "mask.bias")
    split_shape = g.const("heads.shape", [0, 0, 3, heads, hidden // heads], np.int64)
    merged_shape = g.const("hidden.shape", [0, 0, hidden], np.int64)
    sqrt_half = g.const("sqrt_half", np.sqrt(0.5))
    half = g.const("half", 0.5)
    picks = [g.const(f"pick{i}", i, np.int64) for i in range(3)]
    for i, layer in enumerate(weights.layers):
        p = f"l{i}"
        # The query weights come scaled by 1/√head_dim (BertWeights): the scores come out scaled.
        qkv = g.linear(x, layer.qkv_w, layer.qkv_b, f"{p}.qkv")
        qkv = g.node("Reshape", [qkv, split_shape], f"{p}.qkv.split")
        qkv = g.node("Transpose", [qkv], f"{p}.qkv.heads", perm=(2, 0, 3, 1, 4))  # (3, b, h, s, d)
        q, k, v = (g.node("Gather", [qkv, picks[j]], f"{p}.{n}", axis=0) for j, n in enumerate("qkv"))
        kt = g.node("Transpose", [k], f"{p}.kt", perm=(0, 1, 3, 2))
        scores = g.node("MatMul", [q, kt], f"{p}.scores")
        scores = g.node("Add", [scores, bias], f"{p}.scores.masked")
        probs = g.node("Softmax", [scores], f"{p}.probs", axis=-1)
        context = g.node("MatMul", [probs, v], f"{p}.context")  # (b, h, s, d)
        context = g.node("Transpose", [context], f"{p}.context.t", perm=(0, 2, 1, 3))
        context = g.node("Reshape", [context, merged_shape], f"{p}.context.merged")
        attended = g.linear(context, layer.out_w, layer.out_b, f"{p}.attn")
        attended = g.node("Add", [attended, x], f"{p}.attn.res")
        attended = g.layer_norm(attended, layer.ln1_g, layer.ln1_b, eps, f"{p}.ln1")
        inner = g.linear(attended, layer.up_w, layer.up_b, f"{p}.up")
        # The exact GELU, x·½(1 + erf(x/√2)), as BERT (and bert.gelu) computes it.
        erf = g.node("Erf", [g.node("Mul", [inner, sqrt_half], f"{p}.gelu.scaled")], f"{p}.gelu.erf")
        phi = g.node("Mul", [g.node("Add", [erf, one], f"{p}.gelu.sum"), half], f"{p}.gelu.phi")
        activated = g.node("Mul", [inner, phi], f"{p}.gelu")
        down = g.linear(activated, layer.down_w, layer.down_b, f"{p}.down")
        down = g.node("Add", [down, attended], f"{p}.down.res")
        x = g.layer_norm(down, layer.ln2_g, layer.ln2_b, eps, f"{p}.ln2")
    return x


# --- The protobuf wire format of the ONNX messages used (onnx.proto's field numbers) ------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # a negative int64 is written as its 64-bit two's complement
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode("utf-8"))


def _float(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def _attribute(name: str, value: float | tuple[int, ...]) -> bytes:
    # AttributeProto: name 1, f 2, i 3, ints 8, type 20.
    if isinstance(value, tuple):
        return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTRIBUTE_INTS)
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _ATTRIBUTE_INT)
    return _str(1, name) + _float(2, value) + _int(20, _ATTRIBUTE_FLOAT)


def _node(node: Node) -> bytes:
    # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5.
    return (
        b"".join(_str(1, name) for name in node.inputs)
        + _str(2, node.output)
        + _str(3, node.output)
        + _str(4, node.op)
        + b"".join(_bytes(5, _attribute(k, v)) for k, v in sorted(node.attributes.items()))  # as onnx.helper
        + (_str(7, node.domain) if node.domain else b"")
    )


def _data_type(array: npt.NDArray[Any]) -> int:
    if array.dtype == np.float32:
        return _FLOAT
    if array.dtype == np.int64:
        return _INT64
    raise TypeError(f"no ONNX element type for {array.dtype}")


def _tensor(name: str, array: npt.NDArray[Any], *, external: bool) -> bytes:
    # TensorProto: dims 1, data_type 2, name 8, raw_data 9, external_data 13, data_location 14;
    # an external tensor's location, offset and length (StringStringEntryProto: key 1, value 2).
    head = b"".join(_int(1, d) for d in array.shape) + _int(2, _data_type(array)) + _str(8, name)
    if not external:
        return head + _bytes(9, np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())
    entries = (("location", "in-memory"), ("offset", "0"), ("length", str(array.nbytes)))
    return head + b"".join(_bytes(13, _str(1, k) + _str(2, v)) for k, v in entries) + _int(14, 1)


def _value_info(name: str, element: int, dims: tuple[str | int, ...]) -> bytes:
    # ValueInfoProto: name 1, type 2; TypeProto: tensor_type 1; TypeProto.Tensor: elem_type 1,
    # shape 2; TensorShapeProto: dim 1; Dimension: dim_value 1, dim_param 2.
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims)
    return _str(1, name) + _bytes(2, _bytes(1, _int(1, element) + _bytes(2, shape)))


def serialize(graph: Graph) -> bytes:
    """The ``ModelProto`` bytes of ``graph`` (opset 17, IR version 8), its weights as external data."""
    # GraphProto: node 1, name 2, initializer 5, input 11, output 12.
    body = (
        b"".join(_bytes(1, _node(n)) for n in graph.nodes)
        + _str(2, graph.name)
        + b"".join(_bytes(5, _tensor(k, v, external=False)) for k, v in graph.constants.items())
        + b"".join(_bytes(5, _tensor(k, v, external=True)) for k, v in graph.weights.items())
        + b"".join(_bytes(11, _value_info(*spec)) for spec in graph.inputs)
        + b"".join(_bytes(12, _value_info(*spec)) for spec in graph.outputs)
    )
    # ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (OperatorSetIdProto:
    # domain 1, version 2; the default domain is the empty string).
    opsets = _bytes(8, _str(1, "") + _int(2, OPSET))
    if any(n.domain == CONTRIB for n in graph.nodes):
        opsets += _bytes(8, _str(1, CONTRIB) + _int(2, 1))
    return _int(1, IR_VERSION) + _str(2, "palimpsest") + _bytes(7, body) + opsets


def quantized_model(graph: Graph) -> bytes:
    """``graph`` with the weights of its dense layers quantized to int8 (onnxruntime's dynamic
    quantization, one scale per output channel; the activations are quantized at run time), as
    a self-contained serialized model. Needs the ``onnx`` package (the quantizer works on its
    messages); the quantizer writes a file, in a temporary folder removed at once."""
    import tempfile

    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load_model_from_string(serialize(graph))
    kept = [t for t in model.graph.initializer if t.name not in graph.weights]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept + [numpy_helper.from_array(a, n) for n, a in graph.weights.items()])
    dense = [n.output for n in graph.nodes if n.op == "MatMul" and n.inputs[1] in graph.weights]
    # The quantizer advises, on the root logger, a pre-processing step meant for convolutions.
    def advice(record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(advice)
    try:
        with tempfile.TemporaryDirectory(prefix="minilm-int8-") as folder:
            path = Path(folder) / "model.onnx"
            quantize_dynamic(model, path, nodes_to_quantize=dense, per_channel=True, weight_type=QuantType.QInt8)
            return path.read_bytes()
    finally:
        root.removeFilter(advice)


class OnnxEncoder:
    """One onnxruntime session over :func:`build_graph`'s graph; thread-safe (``run`` is).
    ``int8``: the dense layers' weights quantized (:func:`quantized_model`, on the unfused
    graph): other vectors. ``fused=False``: the unfused graph (the same vectors, more nodes)."""

    def __init__(self, weights: BertWeights, *, threads: int, int8: bool = False, fused: bool = True) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no notes on stderr about fused nodes
        graph = build_graph(weights, fused=fused and not int8)
        if int8:
            model = quantized_model(graph)
        else:
            # The session reads the weights from these arrays: they stay referenced as long as it does.
            self._weights = graph.weights
            self._values = [ort.OrtValue.ortvalue_from_numpy(a) for a in graph.weights.values()]
            options.add_external_initializers(list(graph.weights), self._values)
            model = serialize(graph)
        self._session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])

    def pooled(self, ids: Sequence[Sequence[int]]) -> Array:
        """The mean token vector (not normalised) of each text, given its token ids; shape
        (texts, hidden). The texts are padded to the longest: put texts of similar lengths together."""
        longest = max(len(t) for t in ids)
        input_ids = np.zeros((len(ids), longest), dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.float32)
        for row, tokens in enumerate(ids):
            if not tokens:
                raise ValueError("every text needs at least one token.")
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        (pooled,) = self._session.run(["pooled"], {"input_ids": input_ids, "attention_mask": mask})
        result: Array = pooled
        return result
