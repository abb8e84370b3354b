"""tf.distribute multi-worker on Kubernetes without an operator: an Indexed Job plus a headless
Service, checked against the strict Kubernetes 1.30 schemas, and its life cycle through the real
`kubernetes` client against the local API stand-in (tests/k8s_stub.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest

from tests.jobs_helpers import make_engine, write
from tests.k8s_stub import KubeStub
import runners.training  # noqa: F401  (registers "train")
from runners.kinds import get_kind
from runners.kubernetes.schema import validate
from runners.kubernetes.tf_distribute import BOOT
from runners.stored import build

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)
LOOP = """
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
loss_fn = tf.keras.losses.MeanSquaredError()
ds = tf.data.Dataset.from_tensor_slices(([[1.0]] * 8, [[2.0]] * 8)).batch(4)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for x, y in ds:
    train_step(x, y)
"""


@pytest.fixture
def stub():
    with KubeStub() as s:
        yield s


def _plan(tmp_path, workers=3, **spec):
    kind = get_kind("train")
    from runners.kinds import RunnerEnv
    stored = build("train", kind.prepare({"script_source": LOOP, "workers": workers,
                                          "convert": "tf-distribute", **spec},
                                         tmp_path, RunnerEnv(tmp_path / "py")))
    return kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path,
                              {"namespace": "ml", "pvc": "datasets", "image": "tf:2.21"})


def test_indexed_job_and_headless_service_are_valid(tmp_path):
    plan = _plan(tmp_path, timeout=600)
    cm, svc, job = plan.manifests
    for m in plan.manifests:
        validate(m)
        kubernetes_validate.validate(m, "1.30", strict=True)
    assert (svc["kind"], svc["spec"]["clusterIP"]) == ("Service", "None")
    assert svc["spec"]["selector"] == {"app.kubernetes.io/managed-by": "tfdesk",
                                       "tfdesk.io/job-id": "j-0a1b2c3d"}
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 3 and spec["backoffLimit"] == 0
    assert spec["podFailurePolicy"]["rules"][0]["action"] == "FailJob"
    assert spec["activeDeadlineSeconds"] == 600
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == svc["metadata"]["name"] == job["metadata"]["name"]
    assert pod["restartPolicy"] == "Never"
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert json.loads(env["TFDESK_WORKERS"]) == [
        f"tfdesk-j-0a1b2c3d-{i}.tfdesk-j-0a1b2c3d.ml.svc:2222" for i in range(3)]
    assert "TF_CONFIG" not in env  # each pod makes its own from its completion index
    assert plan.log_selector.endswith("batch.kubernetes.io/job-completion-index=0")
    assert "MultiWorkerMirroredStrategy" in cm["data"]["script.py"]


def test_each_pod_builds_its_tf_config_from_its_index(tmp_path):
    """The container's command, run here as the pod would run it."""
    container = _plan(tmp_path, workers=2).main["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["python", "-c", BOOT]
    show = write(tmp_path / "show.py", "import os, sys; print(os.environ['TF_CONFIG'], sys.argv)")
    hosts = ["a-0.a.ml.svc:2222", "a-1.a.ml.svc:2222"]
    out = subprocess.run([sys.executable, "-c", BOOT, str(show), "--lr", "0.1"], text=True,
                         capture_output=True, check=True,
                         env={"JOB_COMPLETION_INDEX": "1", "TFDESK_WORKERS": json.dumps(hosts)})
    config, argv = out.stdout.rsplit(" [", 1)
    assert json.loads(config) == {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": 1}}
    assert argv.strip() == f"'{show}', '--lr', '0.1']"


def test_life_cycle_one_worker_fails_then_cancel_and_delete(tmp_path, stub):
    eng = make_engine(tmp_path / "home", kubernetes={"api_url": stub.url, "retries": 1,
                                                     "watch_timeout": 1})
    try:
        script = write(tmp_path / "t.py", LOOP)
        job = eng.submit("train", {"script_path": str(script), "workers": 3,
                                   "convert": "tf-distribute"}, backend="kubernetes")
        assert job.state == "running"
        name = job.handle["name"]
        assert [k for k, _ in job.handle["objects"]] == ["ConfigMap", "Service", "Job"]
        assert stub.get("services", name)["spec"]["clusterIP"] == "None"
        stub.run_indexed(name, logs={0: "Epoch 1/2\n", 1: "Epoch 1/2\n", 2: "Epoch 1/2\n"})
        _wait(lambda: "cluster: Running" in [e.message for e in eng.events(job.id)])
        stub.pod_failed(name, 1, "step 1\nTraceback (most recent call last):\n"
                                 "ValueError: worker 1 ran out of data\n")
        job = eng.wait(job.id, timeout=20)
        assert job.state == "failed"
        assert job.reason.startswith(f"worker 1 ({name}-1-x0001) failed: ValueError: worker 1 "
                                     f"ran out of data")
        assert "FailJob" in job.reason
        assert "ValueError: worker 1 ran out of data" in eng.read_log(job.id)
        eng.delete(job.id)
        assert stub.get("services", name) is None and stub.get("jobs", name) is None
        assert stub.get("configmaps", name + "-script") is None

        job = eng.submit("train", {"script_path": str(script), "workers": 2,
                                   "convert": "tf-distribute"}, backend="kubernetes")
        job = eng.cancel(job.id)
        assert job.state == "cancelled"
        name = job.handle["name"]
        assert stub.get("services", name) is None and stub.get("jobs", name) is None
        assert all(body.get("propagationPolicy") == "Foreground" for _, _, body in stub.deletes)
    finally:
        eng.close()


def test_dry_run_prints_the_indexed_job_and_service(tmp_path, stub, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[kubernetes]\napi_url = "{stub.url}"\nnamespace = "ml"\n')
    monkeypatch.setenv("TFDESK_HOME", str(home))
    ctx = Context(config=load_config())
    script = write(tmp_path / "t.py", LOOP)
    _, reply = run_line(ctx, f"train {script} --workers 3 --to tf-distribute --backend kubernetes "
                             f"--dry-run")
    assert reply.ok, reply.text
    assert "kind: Service" in reply.text and "clusterIP: None" in reply.text
    assert "completionMode: Indexed" in reply.text and "completions: 3" in reply.text
    assert stub.objects == {}  # nothing was created
    ctx.services.close()


def _wait(predicate, timeout=15):
    import time
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)


JOBSET_CRD = "runners/kubernetes/schemas/jobset-v1alpha2.json"


def test_jobset_is_valid_against_jobsets_own_crd_schema(tmp_path):
    import copy
    from runners.kubernetes.schema import ManifestError
    kind = get_kind("train")
    from runners.kinds import RunnerEnv
    stored = build("train", kind.prepare({"script_source": LOOP, "workers": 2,
                                          "convert": "tf-distribute"},
                                         tmp_path, RunnerEnv(tmp_path / "py")))
    plan = kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path,
                              {"namespace": "ml", "tf_distribute": "jobset"})
    cm, jobset = plan.manifests
    for m in plan.manifests:
        validate(m)
    rj = jobset["spec"]["replicatedJobs"][0]
    kubernetes_validate.validate({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w"},
                                  "spec": rj["template"]["spec"]}, "1.30", strict=True)
    assert jobset["spec"]["network"]["subdomain"] == "tfdesk-j-0a1b2c3d"
    env = {e["name"]: e["value"] for e in rj["template"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert json.loads(env["TFDESK_WORKERS"])[1] == \
        "tfdesk-j-0a1b2c3d-worker-0-1.tfdesk-j-0a1b2c3d.ml.svc:2222"
    bad = copy.deepcopy(jobset)
    bad["spec"]["network"]["enableDNSHostname"] = True  # a typo the API server would drop
    with pytest.raises(ManifestError, match="enableDNSHostname"):
        validate(bad)
    with pytest.raises(Exception, match="tf_distribute must be one of"):
        kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path, {"tf_distribute": "mpi"})


def test_jobset_life_cycle(tmp_path, stub):
    eng = make_engine(tmp_path / "home", kubernetes={"api_url": stub.url, "retries": 1,
                                                     "watch_timeout": 1, "tf_distribute": "jobset"})
    try:
        script = write(tmp_path / "t.py", LOOP)
        job = eng.submit("train", {"script_path": str(script), "workers": 2,
                                   "convert": "tf-distribute"}, backend="kubernetes")
        name = job.handle["name"]
        assert job.state == "running" and stub.get("jobsets", name)
        stub.finish("jobsets", name, "Completed")
        assert eng.wait(job.id, timeout=20).state == "succeeded"
        job = eng.submit("train", {"script_path": str(script), "workers": 2,
                                   "convert": "tf-distribute"}, backend="kubernetes")
        assert eng.cancel(job.id).state == "cancelled"
        assert stub.get("jobsets", job.handle["name"]) is None
    finally:
        eng.close()


def test_pods_run_the_image_of_the_environment_picked(tmp_path):
    keras3 = (REPO / "tests" / "scripts" / "keras3_loop.py").read_text()
    envs = [{"name": "k8s-tf215", "kind": "image", "image": "registry.example/tf:2.15.1",
             "python": "", "tf_version": "2.15.1", "keras_version": "2.15.0",
             "horovod_version": "", "default": True, "tags": []},
            {"name": "k8s-tf221", "kind": "image", "image": "registry.example/tf:2.21.0",
             "python": "", "tf_version": "2.21.0", "keras_version": "3.15.1",
             "horovod_version": "", "default": False, "tags": []}]
    eng = make_engine(tmp_path / "home", environments=lambda: envs, kubernetes={"namespace": "ml"})
    try:
        plan = eng.dry_run("train", {"script_source": keras3, "workers": 2,
                                     "convert": "tf-distribute"}, backend="kubernetes")
        job = plan["manifests"][-1]
        assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/tf:2.21.0"
        assert plan["text"].startswith("# environment: picked k8s-tf221")
        plan = eng.dry_run("train", {"script_source": LOOP, "workers": 2,
                                     "convert": "tf-distribute"}, backend="kubernetes")
        job = plan["manifests"][-1]
        assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/tf:2.15.1"
    finally:
        eng.close()
