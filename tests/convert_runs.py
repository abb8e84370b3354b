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


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update(extra or {})
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


def run_horovod(script: Path, workdir: Path, timeout: int = 240,
                env: dict | None = None) -> subprocess.CompletedProcess:
    py = runner_python()
    cmd = [str(py.parent / "horovodrun"), "--gloo", "-np", "2", "-H", "localhost:2",
           str(py), str(SHIM), str(workdir / "_shim_weights"), str(script)]
    return subprocess.run(cmd, cwd=workdir, env=_env(env), capture_output=True, text=True,
                          timeout=timeout)


def run_single(script: Path, workdir: Path, timeout: int = 240,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """One process, no cluster: the single-process reference for the equivalence check."""
    py = runner_python()
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(py), str(SHIM), str(workdir / "_shim_weights"), str(script)],
                          cwd=workdir, env=_env(env), capture_output=True, text=True,
                          timeout=timeout)


def run_horovod_batch(scripts: list[Path], root: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """All scripts one after another in one pair of Horovod workers; weights in root/<stem>/_shim_weights."""
    py = runner_python()
    cmd = [str(py.parent / "horovodrun"), "--gloo", "-np", "2", "-H", "localhost:2",
           str(py), str(SHIM), "--batch", str(root), *map(str, scripts)]
    return subprocess.run(cmd, cwd=root, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def run_tf_distribute(script: Path, workdir: Path, timeout: int = 240,
                      env: dict | None = None) -> list[subprocess.CompletedProcess]:
    py = runner_python()
    ports = _free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    procs = []
    extra = env
    for index in range(2):
        env = _env(extra)
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


def load_step1(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """A probe record (convert_probe.py): arrays by 'grad/<var>', 'before/...', 'after/...'."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "__meta__"}
        meta = json.loads(str(data["__meta__"])) if "__meta__" in data.files else {}
    return arrays, meta


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """Relative distance of a from b (0 when equal)."""
    scale = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / (scale if scale > 0 else 1.0)


# float32: two half-batch sums against one full-batch sum differ by rounding only.
GRAD_TOL, UPDATE_TOL = 1e-4, 1e-3


def compare_step1(reference: Path, workers: list[Path]) -> tuple[str, str]:
    """('equivalent' | 'not equivalent' | 'not comparable', why): each worker's first step
    against the single-process reference step on the union of their batches."""
    if not reference.exists():
        return "not comparable", "the reference run recorded no step"
    ref, ref_meta = load_step1(reference)
    if ref_meta.get("flags"):
        return "not comparable", "; ".join(ref_meta["flags"])
    grads = sorted(k for k in ref if k.startswith("grad/"))
    if not grads:
        return "not comparable", "no optimizer update recorded (legacy optimizer?)"
    for rank, path in enumerate(workers):
        if not path.exists():
            return "not comparable", f"worker {rank} recorded no step"
        got, _ = load_step1(path)
        missing = sorted(set(grads) - set(got))
        if missing:
            return "not equivalent", f"worker {rank} never updated {missing[0][5:]}"
        for g in grads:
            var = g[5:]
            if _rel(got[f"before/{var}"], ref[f"before/{var}"]) > 1e-6:
                return "not comparable", f"initial value of {var} differs from the reference run"
        worst = max(grads, key=lambda g: _rel(got[g], ref[g]))
        if _rel(got[worst], ref[worst]) > GRAD_TOL:
            ratio = float(np.vdot(got[worst], ref[worst]) / max(np.vdot(ref[worst], ref[worst]), 1e-30))
            return "not equivalent", (f"worker {rank}: gradient of {worst[5:]} is off by "
                                      f"{_rel(got[worst], ref[worst]):.2g} (x{ratio:.3g} of the "
                                      "single-process gradient)")
        for g in grads:
            var = g[5:]
            step = got[f"after/{var}"] - got[f"before/{var}"]
            ref_step = ref[f"after/{var}"] - ref[f"before/{var}"]
            if _rel(step, ref_step) > UPDATE_TOL:
                return "not equivalent", (f"worker {rank}: update of {var} is off by "
                                          f"{_rel(step, ref_step):.2g} (learning rate?)")
    return "equivalent", f"{len(grads)} variables, gradients within {GRAD_TOL:g}"


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
