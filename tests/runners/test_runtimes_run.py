"""Real runs on this CPU in the two runtimes make runner-env builds: a Keras 3 GradientTape
loop converted to tf.distribute trains with two workers on the TF 2.21 runtime, which tfdesk
picks by itself, and both workers end with the same weights."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERAS2 = REPO / ".venv-runner" / "bin" / "python"
KERAS3 = REPO / ".venv-runner-tf221" / "bin" / "python"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(not (KERAS2.exists() and KERAS3.exists()),
                                 reason="the runner environments (make runner-env) are not built")]


def test_keras3_loop_trains_in_sync_on_the_tf221_runtime(tmp_path, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{KERAS2}"\nkeras3_python = "{KERAS3}"\n')
    monkeypatch.setenv("TFDESK_HOME", str(home))
    ctx = Context(config=load_config())
    script = tmp_path / "keras3_loop.py"
    shutil.copy(REPO / "tests" / "scripts" / "keras3_loop.py", script)
    try:
        _, r = run_line(ctx, f"train {script} --workers 2 --to tf-distribute --wait")
        assert r.ok, r.text
        assert "environment: picked runner-tf221 (TF 2.21" in r.text
        log = ctx.services.engine.read_log(r.data["id"])
        digests = dict(re.findall(r"^\[(\d)\] WEIGHTS (\w+)$", log, re.M))
        assert set(digests) == {"0", "1"} and digests["0"] == digests["1"], log[-2000:]
        assert "MultiWorkerMirroredStrategy" in (Path(r.data["workdir"]) / "script.py").read_text()
    finally:
        ctx.services.close()


def test_a_keras3_model_converts_in_the_keras3_runtime(tmp_path, monkeypatch):
    import subprocess
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    model = tmp_path / "k3.keras"
    subprocess.run([str(KERAS3), "-c", (
        "import keras\n"
        "x = keras.Input((16,), name='features')\n"
        "y = keras.layers.Dense(3, activation='softmax', name='probs')(keras.layers.Dense(8)(x))\n"
        f"keras.Model(x, y).save({str(model)!r})\n")], check=True, capture_output=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{KERAS2}"\nkeras3_python = "{KERAS3}"\n')
    monkeypatch.setenv("TFDESK_HOME", str(home))
    ctx = Context(config=load_config())
    try:
        _, r = run_line(ctx, f"convert-model {model} --batch 1,8")
        assert r.ok, r.text
        assert "environment: picked runner-tf221" in r.text and "saved with Keras 3" in r.text
        assert r.data["validation"]["passed"]
    finally:
        ctx.services.close()


def test_tensorrt_profile_from_the_users_shape_and_the_gpu_environment(tmp_path, monkeypatch):
    """A model with a dynamic sequence length: refused until its range is given, then answered
    (no GPU here) with manifests that build the engine in the GPU environment's image."""
    import json
    import subprocess

    import yaml
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    model = tmp_path / "seq.keras"
    subprocess.run([str(KERAS3), "-c", (
        "import keras\n"
        "x = keras.Input((None,), name='tokens', dtype='int32')\n"
        "h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(100, 8)(x))\n"
        f"keras.Model(x, keras.layers.Dense(2)(h)).save({str(model)!r})\n")],
        check=True, capture_output=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{KERAS2}"\nkeras3_python = "{KERAS3}"\n')
    monkeypatch.setenv("TFDESK_HOME", str(home))
    ctx = Context(config=load_config())
    try:
        _, r = run_line(ctx, f"convert-model {model} --to tensorrt --batch 1,8")
        assert not r.ok and "needs a size range for every dynamic dimension" in r.text
        name = r.text.split("--shape ")[1].split("=")[0]  # the input name the model serves
        assert run_line(ctx, "environments add trt-gpu --image registry.example/trt:24.08 "
                             "--tf 2.16.1 --tag tensorrt")[1].ok
        _, r = run_line(ctx, f"convert-model {model} --to tensorrt --batch 1,8 "
                             f"--shape {name}=1x4:8x128:32x512")
        assert r.ok and r.data["status"] == "needs_gpu", r.text
        assert "GPU environment trt-gpu (image registry.example/trt:24.08" in r.text
        job = list(yaml.safe_load_all((Path(r.data["workdir"]) / "trt-build.yaml").read_text()))[1]
        container = job["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "registry.example/trt:24.08"
        shapes = json.loads(container["command"][container["command"].index("--shapes") + 1])
        assert shapes[name] == {"min": [1, 4], "opt": [8, 128], "max": [32, 512]}
    finally:
        ctx.services.close()


def test_the_indexed_job_pods_command_trains_in_sync(tmp_path):
    """The Kubernetes worker pods' own command (as rendered in the Indexed Job), run here as two
    processes with the completion indexes Kubernetes would give them, on the TF 2.21 runtime."""
    import json
    import os
    import socket
    import subprocess
    from runners.kinds import RunnerEnv, get_kind
    source = (REPO / "tests" / "scripts" / "keras3_loop.py").read_text()
    kind = get_kind("train")
    from runners.stored import build
    stored = build("train", kind.prepare({"script_source": source, "workers": 2,
                                          "convert": "tf-distribute"},
                                         tmp_path, RunnerEnv(KERAS3)))
    job = kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path, {"namespace": "ml"}).main
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][0] == "python" and container["command"][3] == "/tfdesk/script/script.py"
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    base = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    base["TFDESK_WORKERS"] = json.dumps([f"localhost:{p}" for p in ports])  # not cluster DNS here
    procs = [subprocess.Popen([str(KERAS3), *container["command"][1:3], str(tmp_path / "script.py")],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                   "TF_CPP_MIN_LOG_LEVEL": "2", **base,
                                   "JOB_COMPLETION_INDEX": str(i)})
             for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    digests = [re.search(r"^WEIGHTS (\w+)$", out, re.M).group(1) for out in outs]
    assert digests[0] == digests[1]
