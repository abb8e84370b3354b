"""End to end in the real runner environment: TensorFlow 2.15 + Horovod (gloo), two workers
on this machine in one job sandbox (one network namespace: gloo connects on its loopback), a
tiny model on synthetic data (seconds)."""
from __future__ import annotations

import pytest

from tests.jobs_helpers import make_engine, runner_python, write

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HOROVOD_SCRIPT = """
import os
import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
tf.random.set_seed(hvd.rank())
x = np.random.RandomState(hvd.rank()).rand(64, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1 * hvd.size()))
model.compile(opt, "binary_crossentropy", metrics=["accuracy"])
callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.CSVLogger("metrics.csv"))
model.fit(x, y, batch_size=16, epochs=int(os.environ.get("TFDESK_EPOCHS", 2)),
          callbacks=callbacks, verbose=2 if hvd.rank() == 0 else 0)
if hvd.rank() == 0:
    model.save("model.keras")
print("rank", hvd.rank(), "of", hvd.size(), "done")
# In the job's sandbox: the job user, and a PID namespace with only the job's processes.
print("sandboxed", os.getuid() != 0 and len([p for p in os.listdir("/proc") if p.isdigit()]) < 40)
"""

MWMS_SCRIPT = """
import json, os
import numpy as np
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
x = np.random.rand(64, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("float32")
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
    model.compile("sgd", "binary_crossentropy")
chief = json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 0
model.fit(x, y, batch_size=16, epochs=int(os.environ.get("TFDESK_EPOCHS", 2)), verbose=2 if chief else 0)
print("workers", strategy.num_replicas_in_sync)
"""


@pytest.fixture
def runner():
    py = runner_python()
    if not py.exists():
        pytest.skip(f"runner environment not built ({py}); run 'make runner-env'")
    return py


def test_horovod_two_workers_end_to_end(tmp_path, runner):
    eng = make_engine(tmp_path / "home", python=runner)
    events = []
    eng.subscribe(events.append)
    try:
        script = write(tmp_path / "hvd_train.py", HOROVOD_SCRIPT)
        job = eng.submit("train", {"script_path": str(script), "workers": 2, "epochs": 2})
        assert job.spec.launcher == "horovod"
        job = eng.wait(job.id, timeout=400)
        log = eng.read_log(job.id)
        assert job.state == "succeeded", f"{job.reason}\n{log[-3000:]}"
        assert "rank 0 of 2 done" in log and "rank 1 of 2 done" in log
        assert log.count("sandboxed True") == 2 and "sandboxed False" not in log
        metrics = eng.metrics(job.id)
        assert [m["epoch"] for m in metrics] == [1, 2]
        assert all("loss" in m and "accuracy" in m for m in metrics)
        kinds = {a["path"]: a["kind"] for a in eng.artifacts(job.id)}
        assert kinds.get("model.keras") == "model" and kinds.get("metrics.csv") == "metrics"
        assert [e.data["state"] for e in eng.events(job.id) if e.type == "state"] == [
            "queued", "starting", "running", "succeeded"]
        assert sum(1 for e in events if e.type == "metric") == 2
    finally:
        eng.close()


def test_tf_distribute_two_workers(tmp_path, runner):
    eng = make_engine(tmp_path / "home", python=runner)
    try:
        script = write(tmp_path / "mwms.py", MWMS_SCRIPT)
        job = eng.submit("train", {"script_path": str(script), "workers": 2, "epochs": 2})
        assert job.spec.launcher == "tf-distribute"
        job = eng.wait(job.id, timeout=400)
        log = eng.read_log(job.id)
        assert job.state == "succeeded", f"{job.reason}\n{log[-3000:]}"
        assert "[0] workers 2" in log and "[1] workers 2" in log
        assert [m["epoch"] for m in eng.metrics(job.id)] == [1, 2]
    finally:
        eng.close()
