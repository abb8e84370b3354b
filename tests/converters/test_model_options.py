"""Options, validation maths, TensorRT's interface and the "needs a GPU runner" answer, and the
commands' fast failures. No TensorFlow here."""
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from converters.model import benchmark, samples, tensorrt, tftrt, validate
from converters.model.errors import BadInput, BadOption, NeedsGPU
from runners.kubernetes.schema import validate as validate_manifest
from tests.converters.test_model_intake import write_saved_model, zip_with

SIG_INPUTS = [{"name": "image", "dtype": "float32", "shape": [None, 4, 4, 1]},
              {"name": "ids", "dtype": "int32", "shape": [None, None]}]


# -- tolerances and comparison ---------------------------------------------------------------
def test_tolerance_defaults_loosen_with_precision():
    fp32, fp16, int8 = (validate.tolerance(p) for p in ("fp32", "fp16", "int8"))
    assert fp32.atol < fp16.atol < int8.atol and fp32.rtol < fp16.rtol


@pytest.mark.parametrize("text,expected", [("1e-3", (1e-3, 1e-3)), ("rtol=0.5", (1e-4, 0.5)),
                                           ("atol=0.2, rtol=0.01", (0.2, 0.01))])
def test_tolerance_option(text, expected):
    t = validate.tolerance("fp32", text)
    assert (t.atol, t.rtol) == expected


@pytest.mark.parametrize("text", ["abc", "btol=1", "atol=-1", "atol=nan"])
def test_bad_tolerance_is_explained(text):
    with pytest.raises(BadOption, match="--tolerance"):
        validate.tolerance("fp32", text)


def test_compare_reports_per_output_errors():
    ref = {"a": np.array([1.0, 2.0, 3.0]), "b": np.array([1, 2, 3])}
    good = validate.compare(ref, {"a": ref["a"] + 1e-6, "b": ref["b"].copy()},
                            validate.tolerance("fp32"))
    assert good["passed"] and good["outputs"]["a"]["max_abs_error"] == pytest.approx(1e-6)
    bad = validate.compare(ref, {"a": ref["a"] + [0, 0, 0.1], "b": np.array([1, 2, 4])},
                           validate.tolerance("fp32"))
    assert not bad["passed"]
    assert bad["outputs"]["a"]["mismatched"] == 1 and bad["outputs"]["b"]["mismatched"] == 1
    assert bad["outputs"]["a"]["max_rel_error"] == pytest.approx(0.1 / 3)
    # the same difference passes under INT8's looser tolerance
    assert validate.compare({"a": ref["a"]}, {"a": ref["a"] + 0.1},
                            validate.tolerance("int8"))["passed"]
    missing = validate.compare(ref, {"a": ref["a"]}, validate.tolerance("fp32"))
    assert not missing["passed"] and missing["missing_outputs"] == ["b"]


# -- inputs ----------------------------------------------------------------------------------
def test_generated_inputs_follow_the_signature():
    feeds = samples.generate(SIG_INPUTS, batch=3, dim_default=5)
    assert feeds["image"].shape == (3, 4, 4, 1) and feeds["image"].dtype == np.float32
    assert feeds["ids"].shape == (3, 5) and feeds["ids"].dtype == np.int32
    assert feeds["ids"].min() >= 0


def test_user_samples_checked_against_signature(tmp_path):
    np.savez(tmp_path / "ok.npz", image=np.zeros((2, 4, 4, 1)), ids=np.zeros((2, 7), "int64"))
    got = samples.load(tmp_path / "ok.npz", SIG_INPUTS)
    assert got["image"].dtype == np.float32 and got["ids"].dtype == np.int32
    np.savez(tmp_path / "shape.npz", image=np.zeros((2, 5, 4, 1)), ids=np.zeros((2, 7)))
    with pytest.raises(BadInput, match=r"shape \[2, 5, 4, 1\].*expects \['\?', 4, 4, 1\]"):
        samples.load(tmp_path / "shape.npz", SIG_INPUTS)
    np.savez(tmp_path / "missing.npz", image=np.zeros((2, 4, 4, 1)))
    with pytest.raises(BadInput, match=r"lacks inputs \['ids'\]"):
        samples.load(tmp_path / "missing.npz", SIG_INPUTS)
    (tmp_path / "junk.npz").write_text("not numpy")
    with pytest.raises(BadInput, match="not a readable"):
        samples.load(tmp_path / "junk.npz", SIG_INPUTS)


def test_batch_option():
    assert benchmark.parse_batches("32,1,8,8") == [1, 8, 32]
    assert benchmark.parse_batches(None) == [1, 8, 32]
    for bad in ("a,b", "0", "1,99999"):
        with pytest.raises(BadOption, match="--batch"):
            benchmark.parse_batches(bad)


def test_benchmark_measures_percentiles():
    r = benchmark.measure(lambda feeds: sum(range(1000)), {}, batch=4, warmup=1, iterations=20)
    assert r["iterations"] == 20 and r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"]
    assert r["throughput_per_s"] > 0
    s = benchmark.speedups([{"batch": 1, "p50_ms": 2.0, "throughput_per_s": 500}],
                           [{"batch": 1, "p50_ms": 0.5, "throughput_per_s": 2000}])
    assert s == [{"batch": 1, "p50_speedup": 4.0, "throughput_speedup": 4.0}]


# -- precision and calibration ---------------------------------------------------------------
def test_precision_and_calibration_rules():
    tensorrt.check_precision("tensorrt", "int8", "calib.npz")
    tensorrt.check_precision("onnx", "fp16", None)
    with pytest.raises(BadOption, match="only used with --precision int8"):
        tensorrt.check_precision("tensorrt", "fp16", "calib.npz")
    with pytest.raises(BadOption, match="unknown target"):
        tensorrt.check_precision("coreml", "fp32", None)


# -- TensorRT: builder selection, the GPU-node manifests, engine stamps ------------------------
JOB = {"id": "j-12ab34cd", "rel_dir": "j-12ab34cd/out", "onnx": "model.onnx",
       "engine": "model.fp16.plan", "precision": "fp16",
       "shapes": tensorrt.profile_shapes([{"name": "x", "shape": [None, 16]}], [1, 8, 32], 16)}


def test_profile_shapes_span_the_batches():
    assert JOB["shapes"] == {"x": {"min": [1, 16], "opt": [8, 16], "max": [32, 16]}}


def test_no_gpu_answers_needs_gpu_with_valid_manifests():
    with pytest.raises(NeedsGPU) as e:
        tensorrt.select_builder(JOB, {"namespace": "ml", "artifacts_pvc": "models",
                                      "gpu_node_selector": {"gpu": "a100"}},
                                gpu=lambda: None, has_module=lambda m: False,
                                which=lambda exe: None)
    assert "no GPU" in e.value.message and "ONNX model is ready" in e.value.message
    cm, job = e.value.manifests
    for m in (cm, job):
        validate_manifest(m)  # the vendored strict batch/v1 and core/v1 schemas
        assert m["metadata"]["labels"]["tfdesk.io/job-id"] == "j-12ab34cd"
        assert m["metadata"]["namespace"] == "ml"
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"].startswith("nvcr.io/nvidia/tensorrt:")
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert c["command"][:2] == ["python3", "/opt/tfdesk/trt_build.py"]
    assert "/artifacts/j-12ab34cd/out/model.onnx" in c["command"]
    assert c["command"][c["command"].index("--precision") + 1] == "fp16"
    assert json.loads(c["command"][c["command"].index("--shapes") + 1]) == JOB["shapes"]
    assert pod["nodeSelector"] == {"gpu": "a100"}
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "models"
    assert "def build(" in cm["data"]["trt_build.py"]  # the build script travels with the Job
    # the YAML the user gets round-trips
    assert list(yaml.safe_load_all(yaml.safe_dump_all(e.value.manifests))) == e.value.manifests


def test_gpu_without_tensorrt_says_so():
    with pytest.raises(NeedsGPU, match=r"has a GPU \(NVIDIA H100\) but no TensorRT"):
        tensorrt.select_builder(JOB, {}, gpu=lambda: "NVIDIA H100",
                                has_module=lambda m: False, which=lambda exe: None)


def test_builder_chosen_when_gpu_and_tensorrt_are_there():
    b = tensorrt.select_builder(JOB, {}, gpu=lambda: "NVIDIA H100", has_module=lambda m: True)
    assert isinstance(b, tensorrt.PythonTensorRTBuilder)
    b = tensorrt.select_builder(JOB, {}, gpu=lambda: "NVIDIA H100", has_module=lambda m: False,
                                which=lambda exe: "/usr/bin/trtexec")
    assert isinstance(b, tensorrt.TrtexecBuilder)
    cmd = b.command(Path("m.onnx"), Path("m.plan"), tensorrt.BuildOptions("fp16", JOB["shapes"]))
    assert "--fp16" in cmd and "--minShapes=x:1x16" in cmd and "--maxShapes=x:32x16" in cmd
    # trtexec alone cannot calibrate INT8 from data: that needs the Python API
    with pytest.raises(NeedsGPU):
        tensorrt.select_builder({**JOB, "precision": "int8"}, {}, gpu=lambda: "NVIDIA H100",
                                has_module=lambda m: False, which=lambda exe: "/usr/bin/trtexec")


@pytest.mark.skipif(bool(__import__("shutil").which("nvidia-smi")), reason="a GPU machine")
def test_this_machine_really_has_no_tensorrt():
    # The real probes (no injection): CI machines have neither a GPU nor TensorRT.
    with pytest.raises(NeedsGPU):
        tensorrt.select_builder(JOB, {})


STAMP = {"gpu_name": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0",
         "driver_version": "535.104.05", "cuda_version": "12.2", "tensorrt_version": "10.3.0"}


def test_engine_stamp_compatibility():
    assert tensorrt.incompatibilities(STAMP, dict(STAMP)) == []
    other = {**STAMP, "gpu_name": "NVIDIA T4", "compute_capability": "7.5",
             "tensorrt_version": "8.6.1", "cuda_version": "11.8"}
    why = tensorrt.incompatibilities(STAMP, other)
    assert len(why) == 3 and any("TensorRT 10.3.0" in w for w in why)
    assert any("A100" in w for w in why) and any("CUDA 12.2" in w for w in why)
    assert "lacks" in tensorrt.incompatibilities({"tensorrt_version": "10.3.0"}, STAMP)[0]


def test_stamp_written_next_to_engine(tmp_path):
    onnx, plan = tmp_path / "m.onnx", tmp_path / "m.plan"
    onnx.write_bytes(b"onnx"), plan.write_bytes(b"plan")
    stamp = tensorrt.stamp_engine(onnx, plan, tensorrt.BuildOptions("int8"), "10.3.0",
                                  "trtexec", {k: v for k, v in STAMP.items()
                                              if k != "tensorrt_version"})
    on_disk = json.loads((tmp_path / "m.plan.json").read_text())
    assert on_disk == stamp and stamp["precision"] == "int8" and len(stamp["onnx_sha256"]) == 64
    assert tensorrt.incompatibilities(stamp, STAMP) == []


def test_tftrt_availability():
    assert "removed in 2.18" in tftrt.unavailable_reason("2.18.0", True, True)
    assert "without TensorRT" in tftrt.unavailable_reason("2.15.1", False, True)
    assert "GPU" in tftrt.unavailable_reason("2.17.0", True, False)
    assert tftrt.unavailable_reason("2.17.1", True, True) is None


# -- the commands' fast failures (the runner env is only asked for its versions) --------------
@pytest.fixture
def ctx(tmp_path):
    return Context(load_config({"TFDESK_HOME": str(tmp_path / "home")}))


def jobs_created(ctx):
    jobs = ctx.config.home / "jobs"
    return [p for p in jobs.iterdir() if not p.name.startswith(".")] if jobs.is_dir() else []


def test_hostile_archive_refused_before_a_job_exists(ctx, tmp_path):
    arch = zip_with(tmp_path / "m.zip", [("saved_model.pb", b"x"), ("../../evil", b"x")])
    _, reply = run_line(ctx, ["convert-model", str(arch)])
    assert not reply.ok and "outside the archive" in reply.text
    assert jobs_created(ctx) == []


def test_producer_too_new_refused(ctx, tmp_path):
    folder = write_saved_model(tmp_path / "m", version="2.99.0")
    _, reply = run_line(ctx, ["convert-model", str(folder)])
    assert not reply.ok and "TensorFlow 2.99.0, newer than the runner's" in reply.text


def test_option_errors_are_specific(ctx, tmp_path):
    folder = write_saved_model(tmp_path / "m")
    # Named files pass the file gate first (in dispatch), so a missing one is named as such...
    _, reply = run_line(ctx, ["convert-model", str(folder), "--calibration", "c.npz"])
    assert not reply.ok and "no such file" in reply.text and "c.npz" in reply.text
    # ...and an existing one is then checked against the options it goes with.
    calib = tmp_path / "c.npz"
    calib.write_bytes(b"\0" * 16)
    _, reply = run_line(ctx, ["convert-model", str(folder), "--calibration", str(calib)])
    assert not reply.ok and "only used with --precision int8" in reply.text
    _, reply = run_line(ctx, ["convert-model", str(folder), "--batch", "0"])
    assert not reply.ok and "--batch" in reply.text
    _, reply = run_line(ctx, ["convert-model", str(tmp_path / "nope")])
    assert not reply.ok and "no such file" in reply.text and "nor a catalog model" in reply.text
    _, reply = run_line(ctx, ["convert-model", str(folder), "--to", "coreml"])
    assert reply.status == 2
    assert jobs_created(ctx) == []


def test_infer_on_kubernetes_is_a_gpu_batch_job(tmp_path):
    volume = tmp_path / "volume"
    folder = write_saved_model(volume / "models" / "m")
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(
        '[kubernetes]\napi_url = "http://127.0.0.1:9"\nnamespace = "ml"\npvc = "shared"\n'
        f'pvc_mount = "/data"\npvc_local_path = "{volume}"\n')
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, ["infer", str(folder), "--backend", "kubernetes", "--gpus", "2",
                              "--dry-run"])
    assert reply.ok, reply.text
    cm, job = reply.data["manifests"]  # already validated against the schemas by dry_run
    validate_manifest(cm), validate_manifest(job)
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert c["command"][-2:] == ["converters.model.worker", "/tfdesk/code/spec.json"]
    spec = json.loads(cm["data"]["spec.json"])
    # The model the job was given (the file gate's private copy, in its folder) is placed in
    # the job's own folder on the shared volume, where the pod reads it.
    assert spec["workdir"] == "/data/dry-run" and spec["mode"] == "infer"
    assert spec["source"]["path"] == "/data/dry-run/source/m"
    assert "converters__model__worker.py" in cm["data"]
    # a model from anywhere else is placed there the same way (the job's input, copied)
    elsewhere = write_saved_model(tmp_path / "elsewhere")
    _, reply = run_line(ctx, ["infer", str(elsewhere), "--backend", "kubernetes", "--dry-run"])
    assert reply.ok, reply.text
    spec = json.loads(reply.data["manifests"][0]["data"]["spec.json"])
    assert spec["source"]["path"] == "/data/dry-run/source/elsewhere"
    assert not (volume / "dry-run").exists()  # a dry run places nothing
    # without the shared volume configured, the reason is said
    (home / "tfdesk.toml").write_text('[kubernetes]\napi_url = "http://127.0.0.1:9"\n')
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, ["infer", str(elsewhere), "--backend", "kubernetes", "--dry-run"])
    assert not reply.ok and "shared volume" in reply.text, reply.text
