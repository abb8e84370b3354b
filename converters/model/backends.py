"""Run a model on numpy inputs: TensorFlow SavedModel signature or ONNX Runtime. Runner side."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.model.errors import ConversionFailed


class TFBackend:
    name = "tensorflow"

    def __init__(self, saved_model: Path, signature: str = "serving_default"):
        import tensorflow as tf
        self.tf = tf
        try:
            self.model = tf.saved_model.load(str(saved_model), tags=["serve"])
        except Exception as exc:  # TF raises many types; all mean "cannot load"
            raise ConversionFailed(f"TensorFlow could not load the SavedModel: "
                                   f"{type(exc).__name__}: {str(exc)[:500]}") from None
        if signature not in self.model.signatures:
            raise ConversionFailed(f"the SavedModel has no signature {signature!r}; it has "
                                   f"{sorted(self.model.signatures)}")
        self.fn = self.model.signatures[signature]

    def __call__(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = self.fn(**{k: self.tf.constant(v) for k, v in feeds.items()})
        return {k: v.numpy() for k, v in out.items()}


class ORTBackend:
    name = "onnxruntime"

    def __init__(self, model: Path, threads: int | None = None):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if threads:
            so.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ConversionFailed(f"ONNX Runtime could not load {Path(model).name}: "
                                   f"{str(exc)[:500]}") from None
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]

    def __call__(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.outputs, self.session.run(self.outputs, {
            k: v for k, v in feeds.items() if k in self.inputs})))

    def input_specs(self) -> list[dict]:
        """Signature-like specs for an ONNX model given directly (``tfdesk infer model.onnx``)."""
        types = {"tensor(float)": "float32", "tensor(double)": "float64",
                 "tensor(int32)": "int32", "tensor(int64)": "int64", "tensor(bool)": "bool",
                 "tensor(float16)": "float16", "tensor(string)": "string",
                 "tensor(uint8)": "uint8", "tensor(int8)": "int8"}
        return [{"name": i.name, "dtype": types.get(i.type, i.type),
                 "shape": [d if isinstance(d, int) else None for d in i.shape]}
                for i in self.inputs.values()]
