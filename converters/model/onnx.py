"""SavedModel -> ONNX with tf2onnx, then ONNX Runtime graph optimisation. Runner side.

``import onnx`` below is the ONNX package (absolute import), not this module.
"""
from __future__ import annotations

from pathlib import Path

from converters.model.errors import ConversionFailed, UnsupportedOps

# 17 is the newest opset every tool in the runner handles well (tf2onnx 1.17 tests up to 18,
# TensorRT 8.6+ parses 17); newer is used only when asked.
DEFAULT_OPSET = 17
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml"}


def choose_opset(requested: int | None) -> int:
    import onnx
    from tf2onnx import constants
    highest = min(max(constants.OPSET_TO_IR_VERSION), onnx.defs.onnx_opset_version())
    opset = requested or min(DEFAULT_OPSET, highest)
    if not 9 <= opset <= highest:
        raise ConversionFailed(f"opset {opset} is not available here; choose 9..{highest}")
    return opset


def nonstandard_nodes(model) -> dict[str, int]:
    """Ops ONNX Runtime cannot run: tf2onnx leaves unconvertible TF ops in place."""
    import onnx
    counts: dict[str, int] = {}
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for node in g.node:
            if node.domain not in STANDARD_DOMAINS or not onnx.defs.has(node.op_type, node.domain):
                counts[node.op_type] = counts.get(node.op_type, 0) + 1
            for attr in node.attribute:
                graphs.extend([attr.g] if attr.HasField("g") else list(attr.graphs))
    return counts


# Function-call ops. tf2onnx has no handler for them: it relies on TensorFlow's grappler to
# inline every call while freezing. Grappler leaves a call alone when it is marked for XLA
# (Keras wraps grouped convolutions, e.g. ConvNeXt's depthwise blocks, in
# tf.function(jit_compile=True)) or "noinline"; those marks only matter to TF's own runtime.
CALL_OPS = {"PartitionedCall", "StatefulPartitionedCall"}
NO_INLINE_ATTRS = ("_XlaMustCompile", "_XlaCompile", "_XlaScope", "_noinline")


def _calls(nodes) -> list:
    return [n for n in nodes if n.op in CALL_OPS]


def inline_function_calls(graph_def, inputs: list[str], outputs: list[str]):
    """Inline the function calls grappler skipped; returns (graph_def, calls inlined)."""
    calls = _calls(graph_def.node)
    if not calls:
        return graph_def, 0
    import tensorflow as tf
    from tf2onnx import tf_loader
    nodes = list(graph_def.node)
    for fn in graph_def.library.function:
        nodes.extend(fn.node_def)
        for key in NO_INLINE_ATTRS:
            if key in fn.attr:
                del fn.attr[key]
    for node in nodes:
        for key in NO_INLINE_ATTRS:
            if key in node.attr:
                del node.attr[key]
    with tf.Graph().as_default():
        graph_def = tf_loader.tf_optimize(inputs, outputs, graph_def)
    return graph_def, len(calls) - len(_calls(graph_def.node))


def ops_without_handler(graph_def, names: set[str]) -> dict[str, list[str]]:
    """For each function-call op tf2onnx left unconverted: the ops inside the called function
    (nested calls followed) that tf2onnx has no conversion for — the real cause."""
    from tf2onnx.handler import tf_op
    library = {f.signature.name: f for f in graph_def.library.function}
    out: dict[str, list[str]] = {}
    for node in _calls(graph_def.node):
        if node.op not in names:
            continue
        todo, seen, missing = [node.attr["f"].func.name], set(), set()
        while todo:
            fn = library.get(todo.pop())
            if fn is None or fn.signature.name in seen:
                continue
            seen.add(fn.signature.name)
            for inner in fn.node_def:
                if inner.op in CALL_OPS:
                    todo.append(inner.attr["f"].func.name)
                elif tf_op.find_effective_op(inner.op) is None:
                    missing.add(inner.op)
        out[node.attr["f"].func.name] = sorted(missing)
    return out


def unsupported_message(bad: dict[str, int], inside: dict[str, list[str]]) -> tuple[str, list[str]]:
    """The error text and the op list: tf2onnx's own unconverted ops, and for function calls
    it could not look through, the ops inside them that have no ONNX conversion."""
    real = {k: v for k, v in bad.items() if k not in CALL_OPS}
    inner = sorted({op for ops in inside.values() for op in ops})
    parts = []
    if real:
        parts.append("ONNX has no equivalent for these TensorFlow ops: "
                     + ", ".join(f"{k} (x{v})" for k, v in sorted(real.items())))
    if inner:
        parts.append("tf2onnx cannot convert these ops inside called functions "
                     f"({', '.join(sorted(inside)[:3])}{' ...' if len(inside) > 3 else ''}): "
                     + ", ".join(inner))
    elif bad.keys() & CALL_OPS:
        parts.append("tf2onnx left function calls it could not inline ("
                     + ", ".join(f"{k} x{v}" for k, v in bad.items() if k in CALL_OPS)
                     + "); every op inside them has a conversion, so re-export the model "
                     "without jit_compile/XLA-marked functions")
    ops = sorted(set(real) | set(inner)) or sorted(bad)
    if any(k.startswith(("String", "Regex", "StaticRegex", "Lookup", "HashTable")) for k in ops):
        hint = (" String processing (e.g. TextVectorization) cannot be expressed in ONNX: "
                "move it out of the model and feed token ids instead.")
    else:
        hint = (" Rewrite that part of the model with ops ONNX has (e.g. tf.math.log(1 + x) "
                "for Log1p), or keep serving it with TensorFlow (tfdesk infer works on the "
                "SavedModel itself).")
    return ". ".join(parts) + "." + hint, ops


def convert(saved_model: Path, out: Path, signature: str = "serving_default",
            opset: int | None = None, progress=lambda message: None) -> dict:
    import logging

    import onnx
    from tf2onnx import convert as tfconvert
    from tf2onnx import tf_loader

    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    opset = choose_opset(opset)
    progress("tf2onnx: loading and freezing the SavedModel")
    try:
        graph_def, inputs, outputs, renames = tf_loader.from_saved_model(
            str(saved_model), None, None, tag=["serve"], signatures=[signature],
            return_tensors_to_rename=True)
    except Exception as exc:  # tf2onnx reports with bare ValueErrors/AssertionErrors
        raise ConversionFailed(f"tf2onnx could not load signature {signature!r}: {exc}") from None
    left = len(_calls(graph_def.node))
    if left:
        progress(f"tf2onnx: inlining {left} function calls TensorFlow left in place")
    graph_def, inlined = inline_function_calls(graph_def, inputs, outputs)
    progress(f"tf2onnx: converting {len(graph_def.node)} TensorFlow nodes to ONNX "
             f"(opset {opset})")
    try:
        model, _ = tfconvert.from_graph_def(graph_def, name=saved_model.name,
                                            input_names=inputs, output_names=outputs,
                                            opset=opset, tensors_to_rename=renames)
    except Exception as exc:
        raise ConversionFailed(f"tf2onnx failed: {type(exc).__name__}: {exc}") from None
    bad = nonstandard_nodes(model)
    if bad:
        message, ops = unsupported_message(bad, ops_without_handler(graph_def, set(bad)))
        raise UnsupportedOps(message, ops=ops)
    progress("tf2onnx: checking the ONNX model")
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    onnx.checker.check_model(str(out))
    return {"path": str(out), "opset": opset, "ir_version": model.ir_version,
            "inputs": [i.name for i in model.graph.input],
            "outputs": [o.name for o in model.graph.output],
            "nodes": len(model.graph.node), "function_calls_inlined": inlined,
            "bytes": out.stat().st_size}


def optimize(model: Path, out: Path) -> dict:
    """Offline ONNX Runtime optimisation. EXTENDED, not ALL: ALL writes layout-specific
    fused ops tied to this CPU, which a different serving machine may not run."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(out)
    ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    return {"path": str(out), "level": "extended", "bytes": out.stat().st_size}


def to_fp16(model: Path, out: Path) -> dict:
    """FP16 weights and compute, FP32 inputs/outputs so callers need not change."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    m = convert_float_to_float16(onnx.load(str(model)), keep_io_types=True)
    onnx.save(m, str(out))
    return {"path": str(out), "precision": "fp16", "bytes": out.stat().st_size}
