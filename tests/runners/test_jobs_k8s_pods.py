"""Every pod tfdesk makes, of every kind and layout, is one an admin accepts: no API token,
the restricted security context, requests and limits from configuration and flags; the MPIJob
is set up as mpi-operator v2 runs it (its own non-root example); a dry run without an output
volume says saved models will be lost; all still valid against the vendored schemas."""
from __future__ import annotations

import kubernetes_validate
import pytest
from hypothesis import given, settings, strategies as st

import runners.model_jobs  # noqa: F401  (registers the model kinds)
import runners.training  # noqa: F401  (registers "train")
from converters.model import tensorrt
from core import pods
from tests.jobs_helpers import make_engine, write
from runners.engine import RunnerEnv
from runners.kinds import get_kind
from runners.kubernetes.backend import place_on_volume
from runners.kubernetes.schema import validate
from runners.models import JobError
from runners.stored import build

HVD = "import horovod.tensorflow.keras as hvd\nhvd.init()\n"
MWMS = "import tensorflow as tf\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
SINGLE = "print('one worker')\n"
LAYOUTS = [(HVD, 2, {}), (SINGLE, 1, {}), (MWMS, 2, {}), (MWMS, 3, {"tf_distribute": "jobset"})]


def _plan(tmp_path, source, workers, config, **spec):
    kind = get_kind("train")
    stored = build("train", kind.prepare({"script_source": source, "workers": workers, **spec},
                                         tmp_path, RunnerEnv(tmp_path / "py")))
    return kind.k8s_manifests("j-0a1b2c3d", stored, tmp_path, {"namespace": "ml", **config})


def pod_specs(manifest: dict) -> list[dict]:
    """Every PodSpec inside a manifest, wherever its kind keeps it."""
    kind, spec = manifest["kind"], manifest.get("spec") or {}
    if kind == "MPIJob":
        return [r["template"]["spec"] for r in spec["mpiReplicaSpecs"].values()]
    if kind == "Job":
        return [spec["template"]["spec"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in spec["replicatedJobs"]]
    return []


def assert_hardened(pod: dict, uid: int = 1000) -> None:
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == uid != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in pod["containers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["runAsNonRoot"] is True and sc["seccompProfile"]["type"] == "RuntimeDefault"
        assert {"cpu", "memory"} <= set(c["resources"]["requests"])
        assert {"cpu", "memory"} <= set(c["resources"]["limits"])


def _schemas(m: dict) -> None:
    validate(m)
    if m["kind"] in ("MPIJob", "JobSet"):  # the core schemas do not know CRDs: each pod
        for i, pod in enumerate(pod_specs(m)):
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                          "metadata": {"name": f"p{i}"},
                                          "template": {"spec": pod}}, "1.30", strict=True)
    else:
        kubernetes_validate.validate(m, "1.30", strict=True)


@pytest.mark.parametrize("source,workers,config", LAYOUTS)
def test_every_training_pod_is_hardened_and_valid(tmp_path, source, workers, config):
    plan = _plan(tmp_path, source, workers, config, gpus_per_worker=1)
    found = [p for m in plan.manifests for p in pod_specs(m)]
    assert found
    for m in plan.manifests:
        _schemas(m)
    for pod in found:
        assert_hardened(pod)


def test_inference_and_tensorrt_pods_are_hardened(tmp_path):
    job = {"id": "j1", "rel_dir": "j1", "onnx": "m.onnx", "engine": "m.plan"}
    for m in tensorrt.manifests(job, {"namespace": "ml"}):
        _schemas(m)
        for pod in pod_specs(m):
            assert_hardened(pod)
            res = pod["containers"][0]["resources"]
            assert str(res["limits"]["nvidia.com/gpu"]) == "1" and res["limits"]["memory"] == "16Gi"
    model = tmp_path / "data" / "m.onnx"
    model.parent.mkdir()
    model.write_bytes(b"onnx")
    spec = build("infer", {"model": str(model), "source": {"kind": "onnx", "path": str(model)},
                           "gpus": 1})
    plan = get_kind("infer").k8s_manifests("j2", spec, tmp_path, {
        "pvc": "data", "pvc_local_path": str(tmp_path / "data"), "run_as_user": 4242})
    for m in plan.manifests:
        _schemas(m)
    for pod in pod_specs(plan.main):
        assert_hardened(pod, uid=4242)
    # The model is placed in the job's folder on the shared volume when the job starts.
    assert plan.volume_files == {str(model): str(tmp_path / "data" / "j2" / "source" / "m.onnx")}
    place_on_volume(plan.volume_files)
    assert (tmp_path / "data" / "j2" / "source" / "m.onnx").read_bytes() == b"onnx"


quantities = st.one_of(st.integers(1, 64).map(str), st.integers(1, 64000).map(lambda n: f"{n}m"))
memories = st.integers(1, 512).map(lambda n: f"{n}Gi")


@settings(max_examples=25, deadline=None)
@given(req_cpu=quantities, lim_cpu=quantities, mem=memories, flag_cpu=st.none() | quantities,
       flag_mem=st.none() | memories, gpus=st.integers(0, 4))
def test_requests_and_limits_come_from_configuration_then_flags(req_cpu, lim_cpu, mem, flag_cpu,
                                                                 flag_mem, gpus):
    config = {"requests": {"cpu": req_cpu, "memory": "1Gi"}, "limits": {"cpu": lim_cpu,
                                                                       "memory": mem}}
    spec = {"cpu": flag_cpu, "memory": flag_mem}
    ok = pods.quantity(flag_cpu or req_cpu, "") <= pods.quantity(flag_cpu or lim_cpu, "") and \
        pods.quantity(flag_mem or "1Gi", "") <= pods.quantity(flag_mem or mem, "")
    if not ok:  # a cluster would refuse it: said now, by name
        with pytest.raises(pods.PodError, match="request .* is above its limit"):
            pods.resources(config, spec, gpus)
        return
    res = pods.resources(config, spec, gpus)
    assert res["requests"]["cpu"] == (flag_cpu or req_cpu)
    assert res["limits"]["cpu"] == (flag_cpu or lim_cpu)
    assert res["limits"]["memory"] == (flag_mem or mem)
    assert res["limits"].get("nvidia.com/gpu") == (str(gpus) if gpus else None)


def test_flags_reach_the_pods_and_bad_ones_are_refused(tmp_path):
    plan = _plan(tmp_path, SINGLE, 1, {}, cpu="6", memory="12Gi")
    res = pod_specs(plan.main)[0]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "6", "memory": "12Gi"} == res["limits"]
    with pytest.raises(JobError, match="--memory = 'lots' is not a Kubernetes quantity"):
        _plan(tmp_path, SINGLE, 1, {}, memory="lots")
    with pytest.raises(JobError, match="run_as_user = 0 would run members' code as root"):
        _plan(tmp_path, SINGLE, 1, {"run_as_user": 0})


def test_the_mpijob_is_set_up_as_mpi_operator_v2_runs_it(tmp_path):
    mpijob = _plan(tmp_path, HVD, 3, {}, gpus_per_worker=2).main
    spec = mpijob["spec"]
    # As the operator's own non-root example (examples/v2beta1/pi/pi.yaml): its keys mounted
    # in the MPI user's home, workers running sshd, the launcher once the workers are Ready.
    assert spec["sshAuthMountPath"] == "/home/mpiuser/.ssh"
    assert spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    worker = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == 2222
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"][:8] == ["horovodrun", "-np", "6", "--hostfile",
                                       "/etc/mpi/hostfile", "--ssh-port", "2222", "python"]
    assert {"name": "HOME", "value": "/home/mpiuser"} in launcher["env"]


def test_a_dry_run_without_an_output_volume_warns(tmp_path):
    script = write(tmp_path / "t.py", SINGLE)
    for config, warned in (({}, True), ({"pvc": "results"}, False)):
        engine = make_engine(tmp_path / f"home{warned}", start=False, kubernetes=config)
        try:
            plan = engine.dry_run("train", {"script_path": str(script)}, "kubernetes")
        finally:
            engine.close()
        said = "saved models included, are lost" in plan["text"]
        assert said == warned and bool(plan["warnings"]) == warned


@pytest.mark.parametrize("given_gpus,configured,expected", [
    (None, None, "1"), (None, 3, "3"), (2, 3, "2"), (0, 3, None)])
def test_an_inference_pod_takes_its_gpus_from_the_flag_then_configuration(
        tmp_path, given_gpus, configured, expected):
    """``infer --gpus N`` wins; without it ``[kubernetes] infer_gpus`` (default 1) decides."""
    model = tmp_path / "data" / "m.onnx"
    model.parent.mkdir()
    model.write_bytes(b"onnx")
    spec = build("infer", {"model": str(model), "source": {"kind": "onnx", "path": str(model)},
                           "gpus": given_gpus})
    settings = {"pvc": "data", "pvc_local_path": str(tmp_path / "data")}
    if configured is not None:
        settings["infer_gpus"] = configured
    plan = get_kind("infer").k8s_manifests("j3", spec, tmp_path, settings)
    limits = pod_specs(plan.main)[0]["containers"][0]["resources"]["limits"]
    assert limits.get("nvidia.com/gpu") == expected
