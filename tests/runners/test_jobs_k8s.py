"""The Kubernetes backend through the real `kubernetes` client against a local API stand-in
over real HTTP (tests/k8s_stub.py); every manifest checked against the Kubernetes schemas."""
from __future__ import annotations

import copy
import time

import kubernetes_validate
import pytest

from tests.jobs_helpers import make_engine, write
from tests.k8s_stub import KubeStub
import runners.training  # noqa: F401  (registers "train")
from runners.kinds import get_kind
from runners.kubernetes.schema import ManifestError, validate
from runners.models import JobError
from runners.stored import build

pytestmark = pytest.mark.timeout(120)
HVD = """
import horovod.tensorflow.keras as hvd
hvd.init()
print("training")
"""
SINGLE = "print('one worker')\n"
SETTINGS = {"namespace": "ml", "service_account": "tfdesk-runner", "pvc": "datasets",
            "node_selector": {"pool": "gpu"}, "image_pull_secrets": ["regcred"],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "images": {"2.15": "registry.example/horovod:0.28.1-tf2.15"}}


@pytest.fixture
def stub():
    with KubeStub() as s:
        yield s


@pytest.fixture
def engine(tmp_path, stub):
    eng = make_engine(tmp_path / "home", kubernetes={"api_url": stub.url, "retries": 2,
                                                     "watch_timeout": 1})
    yield eng
    eng.close()


def _plan(tmp_path, source, **spec):
    kind = get_kind("train")
    from runners.engine import RunnerEnv
    stored = build("train", kind.prepare({"script_source": source, **spec}, tmp_path,
                                         RunnerEnv(tmp_path / "py")))
    return kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path, SETTINGS)


def _kubernetes_validate(m):
    if m["kind"] == "MPIJob":  # the core schemas do not know CRDs: check each pod template
        for role, rs in m["spec"]["mpiReplicaSpecs"].items():
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                          "metadata": {"name": role.lower()}, "template": rs["template"]},
                                         "1.30", strict=True)
    else:
        kubernetes_validate.validate(m, "1.30", strict=True)


def test_mpijob_manifest_is_valid_and_complete(tmp_path):
    plan = _plan(tmp_path, HVD, workers=3, gpus_per_worker=2, timeout=600, epochs=5)
    cm, mpijob = plan.manifests
    for m in plan.manifests:
        validate(m)
        _kubernetes_validate(m)
    assert mpijob["apiVersion"] == "kubeflow.org/v2beta1" and mpijob["kind"] == "MPIJob"
    spec = mpijob["spec"]
    assert spec["slotsPerWorker"] == 2 and spec["runPolicy"]["activeDeadlineSeconds"] == 600
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3
    pod = worker["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["serviceAccountName"] == "tfdesk-runner" and pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert pod["containers"][0]["image"] == "registry.example/horovod:0.28.1-tf2.15"
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}} in pod["volumes"]
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"][:3] == ["horovodrun", "-np", "6"]
    for obj in (cm, mpijob, worker["template"]):
        assert obj["metadata"]["labels"]["tfdesk.io/job-id"] == "j-0a1b2c3d"
    assert cm["data"]["script.py"].strip().startswith("import horovod")


def test_single_worker_is_a_batch_job(tmp_path):
    plan = _plan(tmp_path, SINGLE, workers=1, timeout=60)
    main = plan.main
    assert (main["apiVersion"], main["kind"]) == ("batch/v1", "Job")
    for m in plan.manifests:
        validate(m)
        _kubernetes_validate(m)
    assert main["spec"]["activeDeadlineSeconds"] == 60 and main["spec"]["backoffLimit"] == 0


def test_schema_catches_mistakes(tmp_path):
    mpijob = copy.deepcopy(_plan(tmp_path, HVD, workers=2).main)
    mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = "two"
    with pytest.raises(ManifestError, match="replicas"):
        validate(mpijob)
    mpijob = copy.deepcopy(_plan(tmp_path, HVD, workers=2).main)
    mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(ManifestError, match="imagee"):
        validate(mpijob)


def test_life_cycle_create_watch_logs_succeed(engine, stub, tmp_path):
    script = write(tmp_path / "t.py", HVD)
    events = []
    engine.subscribe(events.append)
    job = engine.submit("train", {"script_path": str(script), "workers": 2}, backend="kubernetes")
    assert job.state == "running"
    name = job.handle["name"]
    mpijob = stub.get("mpijobs", name)
    assert mpijob["metadata"]["labels"]["tfdesk.io/job-id"] == job.id
    assert stub.get("configmaps", name + "-script")
    stub.set_condition("mpijobs", name, "Created")
    stub.set_condition("mpijobs", name, "Running", log="Epoch 1/2\n2/2 - 1s - loss: 0.9\n")
    _wait_for(lambda: any(e.type == "metric" for e in events))  # live metrics while it runs
    stub.finish("mpijobs", name, "Succeeded",
                log="Epoch 1/2\n2/2 - 1s - loss: 0.9\nEpoch 2/2\n2/2 - 1s - loss: 0.4\n")
    job = engine.wait(job.id, timeout=20)
    assert job.state == "succeeded", job.reason
    assert [m["loss"] for m in engine.metrics(job.id)] == [0.9, 0.4]
    assert "Epoch 2/2" in engine.read_log(job.id)
    messages = [e.message for e in engine.events(job.id)]
    assert "cluster: Running" in messages and "cluster: Succeeded" in messages


def _wait_for(predicate, timeout=15):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)


def test_failed_condition_carries_the_message(engine, stub, tmp_path):
    script = write(tmp_path / "t.py", SINGLE)
    job = engine.submit("train", {"script_path": str(script)}, backend="kubernetes")
    stub.finish("jobs", job.handle["name"], "Failed", message="BackoffLimitExceeded: pod failed",
                log="Traceback...\nOSError: disk full\n")
    job = engine.wait(job.id, timeout=20)
    assert job.state == "failed" and "BackoffLimitExceeded" in job.reason


def test_cancel_deletes_in_the_foreground(engine, stub, tmp_path):
    script = write(tmp_path / "t.py", HVD)
    job = engine.submit("train", {"script_path": str(script), "workers": 2}, backend="kubernetes")
    job = engine.cancel(job.id)
    assert job.state == "cancelled"
    assert stub.get("mpijobs", job.handle["name"]) is None
    assert all(body.get("propagationPolicy") == "Foreground" for _, _, body in stub.deletes)
    engine.delete(job.id)


@pytest.mark.parametrize("status, plural, expected", [
    (403, "mpijobs", "403 Forbidden"),
    (409, "mpijobs", "409 conflict"),
    (422, "configmaps", "rejected the manifest"),
])
def test_api_errors_fail_the_job_with_a_clear_reason(engine, stub, tmp_path, status, plural, expected):
    stub.fail("POST", plural, status, "injected refusal")
    script = write(tmp_path / "t.py", HVD)
    job = engine.submit("train", {"script_path": str(script), "workers": 2}, backend="kubernetes")
    job = engine.get(job.id)
    assert job.state == "failed" and expected in job.reason and "injected refusal" in job.reason
    assert not any(k[0] == "configmaps" for k in stub.objects)  # nothing half-made left behind


def test_missing_crd(engine, stub, tmp_path):
    stub.crd_installed = False
    job = engine.submit("train", {"script_path": str(write(tmp_path / "t.py", HVD)), "workers": 2},
                        backend="kubernetes")
    assert "install the mpi-operator" in engine.get(job.id).reason


def test_server_errors_are_retried(engine, stub, tmp_path):
    stub.fail("POST", "mpijobs", 503, "etcd busy", times=2)
    job = engine.submit("train", {"script_path": str(write(tmp_path / "t.py", HVD)), "workers": 2},
                        backend="kubernetes")
    assert engine.get(job.id).state == "running"


def test_unreachable_cluster(tmp_path):
    eng = make_engine(tmp_path / "home", kubernetes={"api_url": "http://127.0.0.1:9", "retries": 1})
    try:
        job = eng.submit("train", {"script_path": str(write(tmp_path / "t.py", SINGLE))},
                         backend="kubernetes")
        job = eng.get(job.id)
        assert job.state == "failed" and "cannot reach the Kubernetes API at http://127.0.0.1:9" in job.reason
        assert (tmp_path / "home" / "jobs" / job.id / "script.py").exists()  # nothing lost
    finally:
        eng.close()


def test_not_configured(tmp_path):
    eng = make_engine(tmp_path / "home")
    try:
        with pytest.raises(JobError, match="Kubernetes is not configured"):
            eng.submit("train", {"script_path": str(write(tmp_path / "t.py", SINGLE))}, backend="kubernetes")
        assert eng.list() == []
    finally:
        eng.close()


def test_restart_reattaches_cluster_jobs(tmp_path, stub):
    settings = {"api_url": stub.url, "retries": 1, "watch_timeout": 1}
    first = make_engine(tmp_path / "home", kubernetes=settings)
    job = first.submit("train", {"script_path": str(write(tmp_path / "t.py", HVD)), "workers": 2},
                       backend="kubernetes")
    first.close()  # tfdesk stops; the MPIJob keeps running on the cluster
    stub.set_condition("mpijobs", job.handle["name"], "Running", log="Epoch 1/1\n1/1 - 0s - loss: 0.3\n")
    second = make_engine(tmp_path / "home", kubernetes=settings)
    try:
        assert second.get(job.id).state == "running"
        stub.finish("mpijobs", job.handle["name"], "Succeeded", log="Epoch 1/1\n1/1 - 0s - loss: 0.3\n")
        assert second.wait(job.id, 20).state == "succeeded"
        assert second.metrics(job.id) == [{"epoch": 1, "loss": 0.3}]
    finally:
        second.close()


def test_dry_run_prints_manifests(tmp_path, stub, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[kubernetes]\napi_url = "{stub.url}"\nnamespace = "ml"\n')
    monkeypatch.setenv("TFDESK_HOME", str(home))
    ctx = Context(config=load_config())
    script = write(tmp_path / "t.py", HVD)
    _, reply = run_line(ctx, f"train {script} --workers 2 --backend kubernetes --dry-run")
    assert reply.ok, reply.text
    assert "kind: MPIJob" in reply.text and "namespace: ml" in reply.text and "&id" not in reply.text
    assert stub.objects == {}  # nothing was created
    ctx.services.close()


def test_a_cluster_job_tfdesk_cannot_read_has_its_objects_deleted(engine, stub, tmp_path):
    """Its row is damaged while it runs: the next engine ends it lost and deletes its cluster
    objects through the handle (outside the spec), naming them and the fault."""
    script = write(tmp_path / "t.py", HVD)
    job = engine.submit("train", {"script_path": str(script), "workers": 2}, backend="kubernetes")
    name = job.handle["name"]
    engine.close()
    engine.store._db().execute("UPDATE jobs SET spec = '{}' , kind = 'nosuch' WHERE id = ?",
                               (job.id,))
    fresh = make_engine(tmp_path / "home", kubernetes={"api_url": stub.url, "retries": 2,
                                                       "watch_timeout": 1})
    try:
        ended = fresh.get(job.id, strict=False)
        assert ended.state == "lost", ended.reason
        assert f"job {job.id}: no stored spec for job kind 'nosuch'" in ended.reason
        assert f"MPIJob/{name}" in ended.reason and "were deleted" in ended.reason
        assert stub.get("mpijobs", name) is None and stub.get("configmaps", name + "-script") is None
    finally:
        fresh.close()
