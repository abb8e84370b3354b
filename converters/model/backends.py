"""Run a model on numpy inputs: TensorFlow SavedModel signature or ONNX Runtime. Runner side.

Both runtimes get the same thread budget (one compute thread per physical core: a second
hyper-thread on the same core only contends for its vector units), so a benchmark compares
the runtimes, not their defaults.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from converters.model.errors import ConversionFailed


def physical_cores() -> int:
    """Physical cores this process may use (affinity and cgroup-pinned CPUs respected)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import psutil
        physical = psutil.cpu_count(logical=False) or usable
        logical = psutil.cpu_count(logical=True) or usable
    except ImportError:
        physical = logical = usable
    # Usable logical CPUs, scaled down by the hyper-threads per core.
    return max(1, min(physical, round(usable * physical / max(logical, 1))))


def configure_tensorflow(threads: int) -> dict:
    """Must run before TensorFlow executes anything (its thread pools are created once)."""
    import tensorflow as tf
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass  # already initialised in this process: report what it runs with
    return {"intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads()}


def session_options(threads: int | None = None):
    """ONNX Runtime settings for CPU inference: every graph optimisation (fusions that may be
    specific to this CPU are fine at load time), one intra-op thread per physical core,
    sequential execution (CNNs are chains; parallel branches only add scheduling), and the
    memory-pattern planner (inputs keep their shapes between calls)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.enable_mem_pattern = True
    so.enable_cpu_mem_arena = True
    so.intra_op_num_threads = threads or physical_cores()
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return so


def ort_settings(so) -> dict:
    return {"graph_optimization_level": "ORT_ENABLE_ALL", "execution_mode": "sequential",
            "intra_op_threads": so.intra_op_num_threads,
            "inter_op_threads": so.inter_op_num_threads,
            "memory_pattern": so.enable_mem_pattern}


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
        so = session_options(threads)
        self.settings = ort_settings(so)
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
