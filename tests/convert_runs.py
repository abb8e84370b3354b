"""Run a converted script for real with two workers (Horovod over Gloo, or two processes with
TF_CONFIG) in the runner environment, through convert_shim.py, and collect each worker's weights."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHIM = Path(__file__).resolve().parent / "convert_shim.py"


def runner_python() -> Path:
    return Path(os.environ.get("TFDESK_RUNNER_PYTHON") or REPO / ".venv-runner" / "bin" / "python")


def runner_ready() -> bool:
    py = runner_python()
    return py.exists() and (py.parent / "horovodrun").exists()


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{runner_python().parent}{os.pathsep}{env.get('PATH', '')}"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.pop("PYTHONPATH", None)
    return env


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_horovod(script: Path, workdir: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    py = runner_python()
    cmd = [str(py.parent / "horovodrun"), "--gloo", "-np", "2", "-H", "localhost:2",
           str(py), str(SHIM), str(workdir / "_shim_weights"), str(script)]
    return subprocess.run(cmd, cwd=workdir, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def run_horovod_batch(scripts: list[Path], root: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """All scripts one after another in one pair of Horovod workers; weights in root/<stem>/_shim_weights."""
    py = runner_python()
    cmd = [str(py.parent / "horovodrun"), "--gloo", "-np", "2", "-H", "localhost:2",
           str(py), str(SHIM), "--batch", str(root), *map(str, scripts)]
    return subprocess.run(cmd, cwd=root, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def run_tf_distribute(script: Path, workdir: Path, timeout: int = 240) -> list[subprocess.CompletedProcess]:
    py = runner_python()
    ports = _free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    procs = []
    for index in range(2):
        env = _env()
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        wd = workdir / f"worker{index}"
        wd.mkdir(parents=True, exist_ok=True)
        procs.append(subprocess.Popen(
            [str(py), str(SHIM), str(workdir / "_shim_weights"), str(script)], cwd=wd, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    results = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            p.returncode = -9
        results.append(subprocess.CompletedProcess(p.args, p.returncode, out, ""))
    return results


def load_weights(weights_dir: Path) -> list[dict[str, np.ndarray]]:
    out = []
    for rank in (0, 1):
        with np.load(weights_dir / f"rank{rank}.npz") as data:
            out.append({k: data[k] for k in data.files})
    return out


if __name__ == "__main__":  # manual check: python tests/convert_runs.py SCRIPT horovod|tf-distribute
    import tempfile

    sys.path.insert(0, str(REPO))
    from converters.script import convert

    src = Path(sys.argv[1])
    target = sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        conv = tmp / src.name
        conv.write_text(convert(src.read_text(), target, src.name).code)
        if target == "horovod":
            r = run_horovod(conv, tmp)
            print(r.returncode, r.stdout[-3000:], r.stderr[-3000:])
        else:
            for r in run_tf_distribute(conv, tmp):
                print(r.returncode, r.stdout[-3000:])
        w = load_weights(tmp / "_shim_weights")
        print({k: bool(np.array_equal(w[0][k], w[1].get(k))) for k in w[0]}, len(w[0]))
