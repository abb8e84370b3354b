"""How legacy_job_rows.json was made: job rows written by tfdesk's engine before stored specs
were typed (commit b8d8b85), by that code, not by hand. Not a test; run it as

    git archive b8d8b85 | tar -x -C /tmp/old
    .venv-runner/bin/python /tmp/old/tests/model_zoo.py /tmp/models dense
    PYTHONPATH=/tmp/old .venv/bin/python tests/runners/data/make_legacy_job_rows.py \
        /tmp/work /tmp/models .venv-runner/bin/python > rows.json

(the engine has no free slot, so every job stays queued and nothing runs)."""
import json, sqlite3, sys
from pathlib import Path
import numpy as np
from runners.engine import Engine, EngineConfig
from runners.inputs import Grant

work = Path(sys.argv[1]); models = Path(sys.argv[2]); runner = sys.argv[3]
env = {"name": "runner", "kind": "local", "python": runner, "tf_version": "2.15.1",
       "keras_version": "2.15.0", "horovod_version": "0.28.1", "default": True, "tags": []}
eng = Engine(EngineConfig(state_path=work / "home" / "state.sqlite", jobs_dir=work / "home" / "jobs",
                          runner_python=Path(runner), local_workers=0, follow=False,
                          environments=lambda: [env]))
data = work / "data"; data.mkdir(exist_ok=True); (data / "x.txt").write_text("1\n")
script = work / "train.py"
script.write_text("import tensorflow as tf\nm = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
                  "m.compile('sgd', 'mse')\nm.fit(tf.zeros((4, 2)), tf.zeros((4, 1)), epochs=1)\n")
np.savez(work / "samples.npz", features=np.zeros((2, 16), "float32"))
np.savez(work / "labelled.npz", features=np.zeros((8, 16), "float32"), label=np.zeros(8, "int64"))
anywhere = Grant(anywhere=True)
eng.submit("train", {"script_path": str(script), "workers": 1, "epochs": 2, "args": ["--lr", "0.1"],
                     "inputs": [str(data)], "labels": {"pipeline_run": "r-1", "step": "train",
                     "project": "p", "register": "mnist"}}, owner="ann", grant=anywhere)
eng.submit("train", {"script_path": str(script), "workers": 1, "convert": "none", "timeout": 60, "cpu": "2",
                     "memory": "1Gi", "gpus_per_worker": 0}, owner="bob")
eng.submit("convert-model", {"model": str(models / "dense"), "target": "onnx", "input": str(work / "samples.npz")},
           owner="ann")
eng.submit("infer", {"model": str(models / "dense"), "batch": "1,4"}, owner="ann")
eng.submit("evaluate", {"model": str(models / "dense"), "data": str(work / "labelled.npz"),
                        "metrics": "accuracy", "label": "label"}, owner="ann")
conn = sqlite3.connect(work / "home" / "state.sqlite"); conn.row_factory = sqlite3.Row
rows = [{k: r[k] for k in ("id", "kind", "spec", "backend")} for r in conn.execute("SELECT * FROM jobs ORDER BY seq")]
print(json.dumps(rows, indent=1))
