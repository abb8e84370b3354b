"""Runner-side entry point: the whole conversion (or inference benchmark) from one spec.

    .venv-runner/bin/python -m converters.model.worker SPEC.json

Runs in the runner environment (TensorFlow, tf2onnx, ONNX Runtime), never in the bot.
Reads the spec, writes everything into ``spec["workdir"]``: converted models under ``out/``,
``report.json`` (also on failure, with ``error``) and, when TensorRT needs a GPU node,
``trt-build.yaml``. The chart is tfdesk's to draw from the report (report.ensure_chart). Progress goes to stdout as JSON lines ``{"progress": ...}``.
Exit status: 0 done (including "needs a GPU runner"), 3 a user-facing error, 1 a crash.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

from converters.model import benchmark, intake, samples, validate
from converters.model.errors import (BadInput, BadOption, ModelError, NeedsGPU, NotAModel,
                                     UnsupportedOps)

EXIT_USER_ERROR = 3


def progress(message: str, done: int | None = None, total: int | None = None) -> None:
    # One write per line: the ticker thread prints too.
    sys.stdout.write(json.dumps({"progress": message, "done": done, "total": total}) + "\n")
    sys.stdout.flush()


@contextlib.contextmanager
def ticking(message: str, every: float = 20.0):
    """Long steps (tf2onnx on a large model takes minutes) say they are still going."""
    stop, t0 = threading.Event(), time.monotonic()

    def tick():
        while not stop.wait(every):
            progress(f"{message}: still working, {time.monotonic() - t0:.0f} s")

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def export_keras(source: dict, dest: Path) -> Path:
    """Keras file -> SavedModel. ``safe_mode`` refuses pickled lambdas; the bot already
    refused models holding code unless the request allowed it (intake.identify)."""
    import tensorflow as tf
    try:
        model = tf.keras.models.load_model(source["path"], compile=False,
                                           safe_mode=not source.get("allow_code"))
    except Exception as exc:
        raise NotAModel(f"Keras could not load {Path(source['path']).name}: "
                        f"{type(exc).__name__}: {str(exc)[:400]}{custom_class_hint(exc)}") from None
    tf.saved_model.save(model, str(dest))
    return dest


def custom_class_hint(exc: Exception) -> str:
    """A .keras/.h5 file stores only the names of custom layers, not their code, and the runner
    never runs user code; a SavedModel keeps the traced graph, so it converts without it."""
    text = str(exc)
    if not any(k in text for k in ("Cannot deserialize object", "Unknown layer",
                                   "custom_object_scope", "register_keras_serializable")):
        return ""
    return (" — the model uses a custom class whose Python code is not in the file, and "
            "tfdesk does not run your code. Save it as a SavedModel where that code is "
            "importable (tf.saved_model.save(model, 'model_dir'), or model.export('model_dir') "
            "in Keras 3) and convert that folder or a .zip of it.")


# Op-name prefix -> the module whose import registers those ops. A Keras model trained with
# hvd.DistributedOptimizer keeps HorovodAllreduce in its saved training functions, so it will
# not load (nor convert) until Horovod's op library is loaded, though serving never runs them.
OP_LIBRARIES = {"Horovod": "horovod.tensorflow"}


def load_op_libraries(ops: list[str]) -> None:
    import importlib
    for prefix, module in OP_LIBRARIES.items():
        if any(op.startswith(prefix) for op in ops):
            try:
                importlib.import_module(module)
            except ImportError:
                pass  # check_ops_registered names the ops that are still unknown


def check_ops_registered(ops: list[str]) -> None:
    from tensorflow.python.framework import op_def_registry
    load_op_libraries(ops)
    unknown = sorted(op for op in ops if op_def_registry.get(op) is None)
    if unknown:
        raise UnsupportedOps(
            f"the model uses ops this runner's TensorFlow does not know: {', '.join(unknown)}. "
            "These are custom ops (or ops from a newer TensorFlow); load their library into "
            "the runner or export the model without them", ops=unknown)


def inputs_for(spec: dict, sig_inputs: list[dict], batch: int, seed: int) -> dict:
    if spec.get("input"):
        user = samples.load(Path(spec["input"]), sig_inputs)
        n = min(len(a) for a in user.values())
        idx = np.arange(batch) % n          # repeat user samples up to the batch size
        return {k: v[idx] for k, v in user.items()}
    return samples.generate(sig_inputs, batch, seed=seed, dim_default=spec.get("dim_default", 16))


def calibration_batches(spec: dict, sig_inputs: list[dict], warnings: list[str]) -> list[dict]:
    if spec.get("calibration"):
        data = samples.load(Path(spec["calibration"]), sig_inputs)
        return samples.batches(data, 8)
    warnings.append("INT8 calibrated on random data matching the signature: ranges may not "
                    "match real inputs; pass --calibration FILE (NPZ of real samples)")
    return [samples.generate(sig_inputs, 8, seed=100 + i, dim_default=spec.get("dim_default", 16))
            for i in range(8)]


def run_benchmarks(spec: dict, sig_inputs: list[dict], runners: dict) -> dict:
    cfg = spec.get("bench", {})
    result: dict = {k: [] for k in runners}
    # How busy the machine was: absolute times on a shared machine mean little without it.
    result["load_average"] = {"cores": os.cpu_count(), "start": _load()}
    for step, b in enumerate(spec["batches"]):
        feeds = inputs_for(spec, sig_inputs, b, seed=b)
        progress(f"benchmark: {', '.join(runners)} at batch {b}", step, len(spec["batches"]))
        rows = benchmark.measure_interleaved(runners, feeds, b, cfg.get("warmup", 3),
                                             cfg.get("iterations", 50), cfg.get("budget_s", 5.0))
        for key, row in rows.items():
            result[key].append(row)
    result["load_average"]["end"] = _load()
    return result


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def convert(spec: dict, work: Path, report: dict) -> None:
    """Steps: open the original, convert it, validate the pair, benchmark them."""
    saved_model, sig_key, sig, runners, threads = open_original(spec, work, report)
    out = work / "out"
    report["conversion"] = {"target": spec["target"], "precision": spec["precision"]}
    if spec["target"] == "tf-trt":
        converted, label, held_out = convert_tftrt(spec, saved_model, sig_key, sig, out,
                                                   report)
    else:
        converted, label, held_out = convert_onnx(spec, saved_model, sig, out, work, report,
                                                  runners, threads)
    runners["converted"] = converted
    validate_pair(spec, sig, runners, held_out, work, report)
    benchmark_pair(spec, sig, runners, label, report)
    report["artifacts"] = sorted(str(p.relative_to(work)) for p in out.rglob("*") if p.is_file())
    if not report["validation"]["passed"]:
        report["status"] = "validation_failed"


def open_original(spec: dict, work: Path, report: dict):
    """(SavedModel path, signature key, signature, {"original": backend}, threads)."""
    from converters.model.backends import TFBackend, configure_tensorflow, physical_cores
    import tensorflow as tf
    threads = int(spec.get("threads") or physical_cores())
    report["runtime"] = {"threads": threads, "tensorflow": configure_tensorflow(threads)}
    saved_model = source_saved_model(spec, work)
    meta = intake.identify(saved_model, runner_tf=tf.__version__,
                           allow_code=bool(spec["source"].get("allow_code")))
    check_ops_registered(meta.info["ops"])
    sig_key = spec.get("signature", "serving_default")
    if sig_key not in meta.info["signatures"]:
        raise NotAModel(f"no signature {sig_key!r}; the model has "
                        f"{sorted(meta.info['signatures'])}")
    sig = meta.info["signatures"][sig_key]
    report["model"].update(producer_tf=meta.producer, signature=sig, runner_tf=tf.__version__)
    progress("loading the original model in TensorFlow")
    return saved_model, sig_key, sig, {"original": TFBackend(saved_model, sig_key)}, threads


def convert_tftrt(spec: dict, saved_model: Path, sig_key: str, sig: dict, out: Path,
                  report: dict):
    """(converted backend, its label, None: no held-out INT8 check on this path)."""
    from converters.model import tftrt
    from converters.model.backends import TFBackend
    precision = spec["precision"]
    calib = calibration_batches(spec, sig["inputs"], report["warnings"]) \
        if precision == "int8" else [inputs_for(spec, sig["inputs"], 1, seed=1)]
    report["conversion"].update(tftrt.convert(saved_model, out / "tftrt", precision, calib))
    return TFBackend(out / "tftrt", sig_key), f"TF-TRT {precision}", None


def convert_onnx(spec: dict, saved_model: Path, sig: dict, out: Path, work: Path,
                 report: dict, runners: dict, threads: int):
    """(converted backend, its label, INT8 held-out samples or None). With INT8 the float
    ONNX model joins ``runners``: what INT8 adds is then visible."""
    from converters.model import onnx as onnx_conv
    from converters.model import quantize
    from converters.model.backends import ORTBackend
    target, precision = spec["target"], spec["precision"]
    conv, warnings, held_out = report["conversion"], report["warnings"], None
    size = sum(f.stat().st_size for f in saved_model.rglob("*") if f.is_file())
    progress(f"converting to ONNX (tf2onnx): SavedModel of {size / 2**20:.1f} MiB")
    t0 = time.perf_counter()
    with ticking("converting to ONNX (tf2onnx)"):
        conv["onnx"] = onnx_conv.convert(saved_model, out / "model.onnx",
                                         spec.get("signature", "serving_default"),
                                         spec.get("opset"), progress)
    conv["opset"] = conv["onnx"]["opset"]
    conv["onnx"]["seconds"] = round(time.perf_counter() - t0, 2)
    progress("optimising with ONNX Runtime")
    with ticking("optimising with ONNX Runtime"):
        conv["optimized"] = onnx_conv.optimize(out / "model.onnx", out / "model.optimized.onnx")
    converted_path = out / "model.optimized.onnx"
    if precision == "int8":
        calib, held_out, held_source = int8_samples(spec, sig["inputs"], warnings)
        t0 = time.perf_counter()
        with ticking("INT8 quantisation"):
            conv["quantized"] = quantize.quantize_int8(
                out / "model.onnx", out / "model.int8.onnx", calib,
                "tensorrt" if target == "tensorrt" else "cpu", progress)
        conv["quantized"]["seconds"] = round(time.perf_counter() - t0, 2)
        runners["onnx_fp32"] = ORTBackend(converted_path, threads)
        converted_path = out / "model.int8.onnx"
        held_out = (held_out, held_source)
    elif precision == "fp16":
        conv["fp16"] = onnx_conv.to_fp16(out / "model.onnx", out / "model.fp16.onnx")
        converted_path = out / "model.fp16.onnx"
        warnings.append("FP16 on a CPU checks accuracy; its speed here says little "
                        "about its speed on a GPU")
    if target == "tensorrt":
        tensorrt_step(spec, sig, out, converted_path, work, report)
    conv["converted"] = str(converted_path.relative_to(work))
    converted = ORTBackend(converted_path, threads)
    report["runtime"]["onnxruntime"] = converted.settings
    return converted, f"ONNX Runtime {precision}", held_out


def validate_pair(spec: dict, sig: dict, runners: dict, held_out, work: Path,
                  report: dict) -> None:
    """Original vs converted on the same inputs; with INT8, agreement on held-out samples
    (``held_out`` is (samples, where they came from)) decides whether it passed."""
    from converters.model import quantize
    progress("validating: original vs converted on the same inputs")
    tol = validate.Tolerance(**spec["tolerance"])
    val_inputs = inputs_for(spec, sig["inputs"], spec.get("validation_batch", 8), seed=12345)
    val = validate.compare(runners["original"](val_inputs), runners["converted"](val_inputs),
                           tol)
    report["validation"] = val
    val["samples"] = len(next(iter(val_inputs.values())))
    val["inputs"] = "user samples" if spec.get("input") else "generated"
    if held_out is not None:
        progress("INT8: agreement with the float models on held-out samples")
        val["int8"] = quantize.agreement_report(
            held_out[0], runners, float(spec.get("min_agreement", 0.99)), tol,
            work / "out" / "held_out_predictions.npz")
        val["int8"]["inputs"] = held_out[1]
        val["passed"] = val["int8"]["passed"]


def benchmark_pair(spec: dict, sig: dict, runners: dict, label: str, report: dict) -> None:
    bench = run_benchmarks(spec, sig["inputs"], runners)
    bench["original_label"], bench["converted_label"] = "TensorFlow", label
    if "onnx_fp32" in bench:
        bench["onnx_fp32_label"] = "ONNX Runtime fp32"
        bench["onnx_fp32_speedups"] = benchmark.speedups(bench["original"], bench["onnx_fp32"])
    bench["speedups"] = benchmark.speedups(bench["original"], bench["converted"])
    report["benchmark"] = bench


def int8_samples(spec: dict, sig_inputs: list[dict], warnings: list[str]):
    """(calibration batches, held-out samples). Held out: the user's --input samples, else a
    quarter of the calibration file, else generated rows with seeds calibration never used."""
    from converters.model import quantize
    calib = calibration_batches(spec, sig_inputs, warnings)
    if spec.get("input"):
        return calib, samples.load(Path(spec["input"]), sig_inputs), "user samples"
    if spec.get("calibration"):
        calib, held = quantize.split_held_out(calib)
        if held is not None:
            return calib, held, "calibration"
        warnings.append("the calibration file is too small to hold samples out; INT8 "
                        "agreement is measured on generated inputs instead")
    return calib, samples.generate(sig_inputs, int(spec.get("held_out_samples", 64)),
                                   seed=54321, dim_default=spec.get("dim_default", 16)), \
        "generated"


def tensorrt_step(spec: dict, sig: dict, out: Path, converted_path: Path, work: Path,
                  report: dict) -> None:
    from converters.model import tensorrt
    precision, warnings = spec["precision"], report["warnings"]
    conv = report["conversion"]
    engine_onnx = converted_path if precision == "int8" else out / "model.onnx"
    job = {"id": spec["id"], "rel_dir": spec.get("artifact_rel_dir", f"{spec['id']}/out"),
           "onnx": engine_onnx.name, "engine": f"model.{precision}.plan",
           "precision": precision,
           "shapes": tensorrt.profile_shapes(
               sig["inputs"], spec["batches"], user=spec.get("trt_shapes"),
               samples={k: list(v.shape) for k, v in
                        inputs_for(spec, sig["inputs"], 1, seed=0).items()}
               if spec.get("input") else None)}
    try:
        builder = tensorrt.select_builder(job, spec.get("kubernetes", {}))
        progress(f"building TensorRT engine ({builder.name})")
        conv["engine"] = builder.build(engine_onnx, out / job["engine"],
                                       tensorrt.BuildOptions(precision, job["shapes"]))
        warnings.append("the engine is built and stamped; its numerical validation "
                        "and benchmark run where it runs (this report measures the "
                        "ONNX model it was built from)")
    except NeedsGPU as exc:
        import yaml
        (work / "trt-build.yaml").write_text(yaml.safe_dump_all(exc.manifests, sort_keys=False))
        report["status"] = "needs_gpu"
        report["needs_gpu"] = {"reason": exc.detail.get("reason", ""),
                               "message": exc.message,
                               "manifest": "trt-build.yaml"}
        warnings.append("validation and benchmark below are for the ONNX model the "
                        "engine will be built from, on this CPU")


def source_saved_model(spec: dict, work: Path, source: dict | None = None,
                       export_dir: str = "saved_model") -> Path:
    source = source or spec["source"]
    if source["kind"] in ("keras", "h5"):
        progress("loading the Keras model and exporting a SavedModel")
        return export_keras(source, work / export_dir)
    return Path(source["path"])


def open_model(spec: dict, work: Path, source: dict | None = None,
               export_dir: str = "saved_model"):
    """(callable model, signature inputs, signature outputs or None, backend name)."""
    from converters.model.backends import ORTBackend, TFBackend
    source = source or spec["source"]
    if source["kind"] == "onnx":
        model = ORTBackend(Path(source["path"]))
        return model, model.input_specs(), model.outputs, "onnxruntime"
    import tensorflow as tf
    saved_model = source_saved_model(spec, work, source, export_dir)
    meta = intake.identify(saved_model, runner_tf=tf.__version__,
                           allow_code=bool(source.get("allow_code")))
    load_op_libraries(meta.info["ops"])
    sig_key = spec.get("signature", "serving_default")
    if sig_key not in meta.info["signatures"]:
        raise NotAModel(f"no signature {sig_key!r}; the model has "
                        f"{sorted(meta.info['signatures'])}")
    sig = meta.info["signatures"][sig_key]
    return (TFBackend(saved_model, sig_key), sig["inputs"],
            [o["name"] for o in sig.get("outputs", [])] or None, "tensorflow")


def infer(spec: dict, work: Path, report: dict) -> None:
    model, sig_inputs, _, report["backend"] = open_model(spec, work)
    if spec.get("input"):
        user = samples.load(Path(spec["input"]), sig_inputs)
        preds = {}
        for part in samples.batches(user, max(spec["batches"])):
            for k, v in model(part).items():
                preds.setdefault(k, []).append(v)
        np.savez(work / "predictions.npz", **{k: np.concatenate(v) for k, v in preds.items()})
        report["predictions"] = {"path": "predictions.npz",
                                 "rows": int(min(len(a) for a in user.values()))}
    bench = run_benchmarks(spec, sig_inputs, {"original": model})
    bench["original_label"] = report["backend"]
    report["benchmark"] = bench


def _predict(model, feeds: dict, batch: int, output: str | None,
             label: str) -> tuple[str, np.ndarray]:
    preds: list[np.ndarray] = []
    for part in samples.batches(feeds, batch):
        got = model(part)
        if output is None:
            if len(got) != 1:
                raise BadOption(f"the {label} model has outputs {sorted(got)}; choose the one "
                                "to score with --output NAME")
            output = next(iter(got))
        if output not in got:
            raise BadOption(f"the {label} model has no output {output!r}; it has {sorted(got)}")
        preds.append(np.asarray(got[output]))
    return output, np.concatenate(preds)


def evaluate(spec: dict, work: Path, report: dict) -> None:
    """Score the model (and ``against``, side by side on the same rows) on labelled data."""
    from converters.model import labelled, metrics
    progress("loading the model")
    models = [("original", *open_model(spec, work))]
    if spec.get("against"):
        progress("loading the model to compare")
        models.append(("converted", *open_model(spec, work, spec["against"], "saved_model_against")))
    sig_inputs = models[0][2]
    for label, _, inputs, _, _ in models[1:]:
        theirs, ours = {i["name"] for i in inputs}, {i["name"] for i in sig_inputs}
        if not theirs <= ours:
            raise BadInput(f"the {label} model takes inputs {sorted(theirs)} but the original "
                           f"takes {sorted(ours)}; they are not the same model")
    progress("reading the labelled data")
    feeds, labels = labelled.load(Path(spec["data"]), sig_inputs, spec.get("label_key"))
    data_name = Path(spec.get("data_origin") or spec["data"]).name
    what = data_name
    rows = len(labels)
    names = list(spec.get("metrics") or [])
    output = spec.get("output")
    results, preds = [], {}
    for i, (label, model, _, _, backend) in enumerate(models):
        progress(f"predicting: {label} ({backend})", i, len(models))
        output, pred = _predict(model, feeds, int(spec.get("eval_batch", 256)), output, label)
        if len(pred) != rows:
            raise BadInput(f"the {label} model gave {len(pred)} predictions for {rows} rows")
        names = names or metrics.default_metrics(pred)
        preds[label] = pred
        path = Path(spec["against"]["path"] if label == "converted" else spec["source"]["path"])
        results.append({"label": label, "model": path.name, "backend": backend,
                        "metrics": metrics.compute(names, pred, labels, what)})
    ev: dict = {"data": {"file": data_name, "format": labelled.data_format(Path(spec["data"])),
                         "rows": rows},
                "output": output, "task": metrics.task_of(preds["original"]),
                "metrics": [n for n in names if n != "agreement"], "models": results}
    if "converted" in preds:
        tol = validate.Tolerance(**spec["tolerance"])
        ev["agreement"] = metrics.agreement(preds["original"], preds["converted"],
                                            tol.atol, tol.rtol)
        ev["differences"] = {n: results[1]["metrics"][n] - results[0]["metrics"][n]
                             for n in ev["metrics"]}
    elif "agreement" in names:
        report["warnings"].append("agreement needs a second model: pass --against CONVERTED")
    np.savez(work / "predictions.npz", labels=labels, **preds)
    report["evaluation"] = ev


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(argv[0]).read_text())
    # Paths in the spec are relative to the working directory (the job's folder, our cwd).
    work = Path(spec.get("workdir") or Path.cwd()).resolve()
    work.mkdir(parents=True, exist_ok=True)
    spec["source"]["path"] = str(work / spec["source"]["path"])
    if spec.get("against"):
        spec["against"]["path"] = str(work / spec["against"]["path"])
    for key in ("input", "calibration", "data"):
        if spec.get(key):
            spec[key] = str(work / spec[key])
    report: dict = {"id": spec["id"], "mode": spec.get("mode", "convert"), "status": "succeeded",
                    "model": {"name": spec.get("name") or Path(spec["source"]["path"]).name,
                              "kind": spec["source"]["kind"]},
                    "warnings": [], "started": time.time()}
    code = 0
    try:
        {"convert": convert, "infer": infer, "evaluate": evaluate}[report["mode"]](
            spec, work, report)
    except ModelError as exc:
        report.update(status="failed", error=exc.to_dict())
        code = EXIT_USER_ERROR
    except Exception as exc:  # noqa: BLE001 - a crash still leaves a report behind
        report.update(status="failed", error={"code": "crash", "error":
                      f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        code = 1
    report["seconds"] = round(time.time() - report.pop("started"), 2)
    (work / "report.json").write_text(json.dumps(report, indent=2, default=str))
    progress("done", 1, 1)
    return code


if __name__ == "__main__":
    sys.exit(main())
