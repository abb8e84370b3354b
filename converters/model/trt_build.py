"""Build a TensorRT engine from an ONNX model and stamp it. Self-contained on purpose.

Needs only the standard library and TensorRT's Python bindings, so the same file runs
inside a tfdesk runner that has a GPU and, shipped in a ConfigMap, inside NVIDIA's TensorRT
container on a Kubernetes GPU node:

    python3 trt_build.py --onnx model.onnx --engine model.plan --precision fp16 \
        --shapes '{"x": {"min": [1, 16], "opt": [8, 16], "max": [32, 16]}}'

INT8 uses explicit quantisation: tfdesk calibrates on CPU with ONNX Runtime and hands over a
QDQ model, so no device-side calibrator is needed here (TensorRT 10 deprecates those).
The stamp (ENGINE.json) records the GPU, compute capability, driver, CUDA and TensorRT
versions, because an engine only runs where those match.
"""
import argparse
import datetime
import hashlib
import json
import subprocess
import sys

PRECISIONS = ("fp32", "fp16", "int8")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gpu_facts():
    """What nvidia-smi says about GPU 0 (name, compute capability, driver, CUDA)."""
    q = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                        "--format=csv,noheader"], capture_output=True, text=True, check=True)
    name, cc, driver = [s.strip() for s in q.stdout.splitlines()[0].split(",")]
    header = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    cuda = header.split("CUDA Version:")[1].split()[0] if "CUDA Version:" in header else ""
    return {"gpu_name": name, "compute_capability": cc, "driver_version": driver,
            "cuda_version": cuda}


def build(onnx_path, engine_path, precision, shapes, workspace_mb=4096):
    import tensorrt as trt
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    flags = 0
    if hasattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH"):  # implicit in TRT 10
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    with open(onnx_path, "rb") as f:
        if not parser.parse(f.read()):
            errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
            raise SystemExit("TensorRT could not parse the ONNX model:\n" + "\n".join(errors))
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, workspace_mb << 20)
    if precision == "fp16":
        if not builder.platform_has_fast_fp16:
            raise SystemExit("this GPU has no fast FP16; build fp32 instead")
        config.set_flag(trt.BuilderFlag.FP16)
    elif precision == "int8":
        config.set_flag(trt.BuilderFlag.INT8)
    profile = builder.create_optimization_profile()
    for i in range(network.num_inputs):
        inp = network.get_input(i)
        if inp.name in shapes:
            s = shapes[inp.name]
            profile.set_shape(inp.name, s["min"], s["opt"], s["max"])
    config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise SystemExit("TensorRT failed to build the engine (see the log above)")
    with open(engine_path, "wb") as f:
        f.write(plan)
    stamp = {"format": "tensorrt-engine", "precision": precision,
             "tensorrt_version": trt.__version__, "builder": "tensorrt-python",
             "onnx_sha256": sha256(onnx_path), "engine_sha256": sha256(engine_path),
             "shapes": shapes,
             "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
             **gpu_facts()}
    with open(str(engine_path) + ".json", "w") as f:
        json.dump(stamp, f, indent=2)
    return stamp


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--onnx", required=True)
    p.add_argument("--engine", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--shapes", default="{}", help="JSON: input -> {min, opt, max}")
    p.add_argument("--workspace-mb", type=int, default=4096)
    a = p.parse_args(argv)
    stamp = build(a.onnx, a.engine, a.precision, json.loads(a.shapes), a.workspace_mb)
    print(json.dumps(stamp))


if __name__ == "__main__":
    sys.exit(main())
