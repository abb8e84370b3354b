"""Test support for the catalog: a small job engine implementing catalog.executor.StepExecutor
with real (trivial) job kinds. Each job is a real subprocess in its own working directory."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from catalog.executor import StepOutcome
from runners.specs import as_mapping

# Each kind is a short Python program. It reads spec.json (the typed spec as a mapping, its
# labels on top), writes outputs.json, and exits 1 with a message on stderr when the spec says
# to fail: a convert-script target "fail:WHY", a train argument "--fail=WHY".
KIND_PROGRAMS = {
    "convert-script": """
import json, pathlib, sys
spec = json.load(open("spec.json"))
if spec["target"].startswith("fail:"): sys.exit("convert failed: " + spec["target"][5:])
src = pathlib.Path(spec["script"]).read_text()
out = pathlib.Path("converted.py"); out.write_text("# horovod\\n" + src)
json.dump({"outputs": {"script": str(out.resolve())}}, open("outputs.json", "w"))
""",
    "train": """
import json, pathlib, sys
spec = json.load(open("spec.json"))
fail = [a[7:] for a in spec["args"] if a.startswith("--fail=")]
if fail: sys.exit("training crashed: " + fail[0])
assert pathlib.Path(spec["script_path"]).read_text().startswith("# horovod")
m = pathlib.Path("saved_model"); m.mkdir(); (m / "saved_model.pb").write_bytes(b"pb")
(m / "trained_on.txt").write_text(str(spec["args"][:1]) + " epochs=" + str(spec.get("epochs")))
json.dump({"outputs": {"model": str(m.resolve()), "epochs": spec.get("epochs")},
           "artifacts": [{"name": "saved_model", "path": str(m.resolve())}],
           "results": {"tf_version": "2.15.1"}}, open("outputs.json", "w"))
""",
    "convert-model": """
import json, pathlib, sys
spec = json.load(open("spec.json"))
if spec.get("fail"): sys.exit("conversion failed: " + str(spec["fail"]))
assert (pathlib.Path(spec["model"]) / "saved_model.pb").exists()
o = pathlib.Path("model.onnx"); o.write_bytes(b"onnx")
json.dump({"outputs": {"model": str(o.resolve())},
           "artifacts": [{"name": "onnx", "path": str(o.resolve())}],
           "results": {"validation": {"passed": True, "max_abs_error": 1e-6}}},
          open("outputs.json", "w"))
""",
    "infer": """
import json, pathlib, sys
spec = json.load(open("spec.json"))
if spec.get("fail"): sys.exit("benchmark failed: " + str(spec["fail"]))
assert pathlib.Path(spec["model"]).exists()
json.dump({"outputs": {"p50_ms": 1.5}, "results": {"benchmark": {"p50_ms": 1.5}}},
          open("outputs.json", "w"))
""",
}


class ProcessEngine:
    """Runs each step as a subprocess; records every submission for assertions."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.jobs: dict[str, dict] = {}

    def submit(self, kind, spec, owner, reply_to, readable=()):
        if kind not in KIND_PROGRAMS:
            raise ValueError(f"unknown job kind {kind}")
        job_id = f"job-{len(self.jobs) + 1}"
        workdir = self.root / job_id
        workdir.mkdir(parents=True)
        spec = as_mapping(kind, spec)
        spec = {**spec, **spec.pop("labels")}  # pipeline_run, step, project on top
        (workdir / "spec.json").write_text(json.dumps(spec))
        proc = subprocess.Popen([sys.executable, "-c", KIND_PROGRAMS[kind]], cwd=workdir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.jobs[job_id] = {"kind": kind, "spec": spec, "owner": owner, "proc": proc,
                             "workdir": workdir}
        return job_id

    def wait(self, job_id, timeout=None):
        job = self.jobs[job_id]
        _out, err = job["proc"].communicate(timeout=timeout)
        if job["proc"].returncode != 0:
            return StepOutcome(state="failed", error=err.strip().splitlines()[-1])
        data = json.loads((job["workdir"] / "outputs.json").read_text())
        return StepOutcome(state="succeeded", outputs=data.get("outputs", {}),
                           artifacts=data.get("artifacts", []), results=data.get("results", {}),
                           tf_version=data.get("results", {}).get("tf_version", ""))
