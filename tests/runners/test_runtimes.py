"""Runtimes as catalog environments: what a job needs (read statically), which environment it
gets and why, refusals before anything starts, and --env / 'environments default' obeyed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.jobs_helpers import make_engine, write
from runners.models import JobError
from runners.needs import script_needs
from runners.runtimes import Needs, choose

K3_LOOP = """
import tensorflow as tf
import keras
model = keras.Sequential([keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.1)
for x, y in [(1, 2)]:
    with tf.GradientTape() as tape:
        loss = model(x)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
"""
K3_FIT = """
import keras
class M(keras.Model):
    def train_step(self, data):
        return super().train_step(data)
model = M()
model.compile(optimizer="sgd", loss="mse")
model.fit([1], [2])
print(keras.ops.sum([1.0]))
"""
TFK_FIT = """
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit([1], [2])
"""
HVD = "import horovod.tensorflow.keras as hvd\nhvd.init()\n"


def _envs(tmp_path: Path):
    py = Path(sys.executable)
    return [
        {"name": "runner", "kind": "local", "python": str(py), "tf_version": "2.15.1",
         "keras_version": "2.15.0", "horovod_version": "0.28.1", "default": True, "tags": []},
        {"name": "runner-tf221", "kind": "local", "python": str(py), "tf_version": "2.21.0",
         "keras_version": "3.15.1", "horovod_version": "", "default": False, "tags": []},
        {"name": "gone", "kind": "local", "python": str(tmp_path / "nope" / "python"),
         "tf_version": "2.30.0", "keras_version": "", "horovod_version": "", "default": False,
         "tags": []},
        {"name": "k8s-tf221", "kind": "image", "image": "tensorflow/tensorflow:2.21.0",
         "python": "", "tf_version": "2.21.0", "keras_version": "3.15.1", "horovod_version": "",
         "default": False, "tags": []},
    ]


def test_needs_are_read_from_the_script():
    loop = script_needs(K3_LOOP, "tf-distribute")
    assert [n.tf for n in loop.items] == [">=2.16"]
    assert "optimizer.apply, line 10" in loop.describe()  # the converter's analysis
    fit = script_needs(TFK_FIT, "tf-distribute")
    assert [n.tf for n in fit.items] == ["<2.16"] and "fit() (line 5)" in fit.describe()
    assert script_needs(TFK_FIT, "python").items == []
    hvd = script_needs(HVD, "horovod")
    assert hvd.horovod and [n.tf for n in hvd.items] == ["<2.16"]
    assert [n.tf for n in script_needs("# requires tensorflow==2.21\n", "python").items] == \
        ["==2.21.*"]


def test_choice_says_why(tmp_path):
    envs = _envs(tmp_path)
    env, why = choose(envs, Needs(), "local")
    assert env["name"] == "runner" and why.startswith("the default environment runner")
    env, why = choose(envs, script_needs(K3_LOOP, "tf-distribute"), "local")
    assert env["name"] == "runner-tf221"  # "gone" is newer but its interpreter is missing
    assert "uses Keras 3 APIs" in why and "the default runner does not fit" in why
    env, why = choose(envs, script_needs(HVD, "horovod"), "local")
    assert env["name"] == "runner" and "Horovod" in why
    env, why = choose(envs, script_needs(K3_LOOP, "tf-distribute"), "kubernetes")
    assert env["name"] == "k8s-tf221"
    env, why = choose([e for e in envs if e["kind"] == "local"], Needs(), "kubernetes")
    assert env is None and "[kubernetes]" in why


def test_refusals_name_the_reason(tmp_path):
    envs = _envs(tmp_path)
    with pytest.raises(JobError) as e:
        choose(envs, script_needs(K3_FIT, "tf-distribute"), "local")
    assert "keras-team/keras#20585" in str(e.value) and "custom training loop" in str(e.value)
    with pytest.raises(JobError) as e:
        choose(envs, script_needs(K3_LOOP, "horovod"), "local")
    assert "--to tf-distribute" in str(e.value) and "Keras 2" in str(e.value)
    with pytest.raises(JobError, match="environment 'runner' cannot run this job: it has "
                                       "TensorFlow 2.15.1"):
        choose(envs, script_needs(K3_LOOP, "tf-distribute"), "local", named="runner")
    with pytest.raises(JobError, match="is an image; it runs jobs with --backend kubernetes"):
        choose(envs, Needs(), "local", named="k8s-tf221")
    with pytest.raises(JobError, match="no environment named 'nope'"):
        choose(envs, Needs(), "local", named="nope")
    with pytest.raises(JobError) as e:
        choose(envs[:1], script_needs(K3_LOOP, "python"), "local")
    assert "runner: it has TensorFlow 2.15.1" in str(e.value)


def test_engine_refuses_before_a_job_exists_and_records_the_choice(tmp_path):
    envs = _envs(tmp_path)
    eng = make_engine(tmp_path / "home", environments=lambda: envs, follow=False)
    try:
        with pytest.raises(JobError, match="20585"):
            eng.submit("train", {"script_source": K3_FIT, "workers": 2,
                                 "convert": "tf-distribute"})
        assert eng.list() == []
        plan = eng.dry_run("train", {"script_source": K3_LOOP, "workers": 1})
        assert plan["spec"].runtime.name == "runner-tf221"
        assert plan["text"].startswith("# environment: picked runner-tf221")
        job = eng.submit("train", {"script_source": "print(1)\n", "environment": "runner-tf221"})
        assert job.spec.runtime.name == "runner-tf221" and "as asked" in job.spec.runtime_why
        assert any(e.message.startswith("environment: environment runner-tf221")
                   for e in eng.events(job.id))
    finally:
        eng.close()


def _ctx(tmp_path, monkeypatch, toml: str = ""):
    from bot.config import load_config
    from bot.context import Context
    home = tmp_path / "home"
    home.mkdir()
    k3 = tmp_path / "k3" / "bin"
    k3.mkdir(parents=True)
    (k3 / "python").symlink_to(sys.executable)
    (tmp_path / "k3" / "versions.json").write_text(
        '{"tf_version": "2.21.0", "keras_version": "3.15.1", "horovod_version": ""}')
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n'
                                      f'keras3_python = "{k3 / "python"}"\n' + toml)
    monkeypatch.setenv("TFDESK_HOME", str(home))
    return Context(config=load_config())


def test_cli_registers_both_runtimes_picks_and_obeys_default(tmp_path, monkeypatch):
    from bot.dispatch import run_line
    ctx = _ctx(tmp_path, monkeypatch)
    loop = write(tmp_path / "loop.py", K3_LOOP)
    plain = write(tmp_path / "plain.py", "print('hello')\n")
    try:
        _, r = run_line(ctx, "environments list --json")
        got = {e["name"]: e for e in r.data["environments"]}
        assert got["runner-tf221"]["tf_version"] == "2.21.0"  # read from versions.json
        assert got["runner-tf221"]["keras_version"] == "3.15.1" and got["runner"]["default"]
        _, r = run_line(ctx, f"train {loop} --dry-run")
        assert r.ok and "# environment: picked runner-tf221" in r.text
        _, r = run_line(ctx, f"train {plain} --dry-run")
        assert "the default environment runner " in r.text
        _, r = run_line(ctx, "environments default runner-tf221")
        assert r.ok
        _, r = run_line(ctx, f"train {plain} --dry-run")
        assert "the default environment runner-tf221" in r.text
        _, r = run_line(ctx, f"train {plain} --env runner --dry-run")
        assert "environment runner (TF 2.15.1" in r.text and "as asked" in r.text
        _, r = run_line(ctx, f"train {loop} --env runner --dry-run")
        assert not r.ok and "cannot run this job: it has TensorFlow 2.15.1" in r.text
    finally:
        ctx.services.close()


def test_pipeline_steps_run_each_in_their_own_environment(tmp_path, monkeypatch):
    """Two steps naming two local environments: each job runs with its environment's
    interpreter (the script prints the interpreter it runs on)."""
    from bot.dispatch import run_line
    ctx = _ctx(tmp_path, monkeypatch)
    for name, tf in (("old", "2.15.1"), ("new", "2.21.0")):
        bin_dir = tmp_path / name / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").symlink_to(sys.executable)
        (tmp_path / name / "versions.json").write_text(f'{{"tf_version": "{tf}"}}')
        _, r = run_line(ctx, f"environments add {name} --python {bin_dir / 'python'}")
        assert r.ok, r.text
    script = write(tmp_path / "which.py", "import sys\nprint('PY', sys.executable)\n")
    yml = write(tmp_path / "p.yaml", f"""
        name: two-runtimes
        steps:
          - name: first
            kind: train
            environment: old
            with: {{script_path: {script}}}
          - name: second
            kind: train
            environment: new
            with: {{script_path: {script}}}
        """)
    try:
        assert run_line(ctx, f"pipelines add - {yml}")[1].ok
        _, r = run_line(ctx, "pipeline run two-runtimes")
        assert r.ok, r.text
        engine = ctx.services.engine
        jobs = {j.spec.labels.step: j for j in engine.list()}
        for step, env in (("first", "old"), ("second", "new")):
            job = jobs[step]
            assert job.state == "succeeded" and job.spec.runtime.name == env
            assert f"PY {tmp_path / env / 'bin' / 'python'}" in engine.read_log(job.id)
    finally:
        ctx.services.close()


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.parametrize("script, to, expected", [
    ("keras3_fit_train_step.py", "tf-distribute", "keras-team/keras#20585"),
    ("keras3_fit_train_step.py", "horovod", "Convert with --to tf-distribute instead"),
    ("keras3_loop.py", "horovod", "Convert with --to tf-distribute instead"),
])
def test_keras3_refusals_before_anything_starts(tmp_path, monkeypatch, script, to, expected):
    from bot.dispatch import run_line
    ctx = _ctx(tmp_path, monkeypatch)
    try:
        _, r = run_line(ctx, f"train {SCRIPTS / script} --workers 2 --to {to}")
        assert not r.ok and expected in r.text and "Keras" in r.text
        assert "Traceback" not in r.text
        assert ctx.services.engine.list() == []  # no job was made
    finally:
        ctx.services.close()


def _keras_file(path: Path, version: str) -> Path:
    import json
    import zipfile
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": version}))
        zf.writestr("config.json", "{}")
    return path


def test_models_saved_with_keras3_go_to_the_keras3_runtime(tmp_path):
    from runners.needs import model_needs
    envs = _envs(tmp_path)
    k3 = model_needs({"model": str(_keras_file(tmp_path / "m3.keras", "3.15.1"))})
    env, why = choose(envs, k3, "local")
    assert env["name"] == "runner-tf221" and "saved with Keras 3.15.1" in why
    k2 = model_needs({"model": str(_keras_file(tmp_path / "m2.keras", "2.15.0"))})
    assert choose(envs, k2, "local")[0]["name"] == "runner"
    # TensorRT on a machine without a GPU still runs locally (ONNX, validation, manifests)
    trt = model_needs({"model": str(tmp_path / "m2.keras"), "target": "tensorrt"})
    assert choose(envs, trt, "local")[0]["name"] == "runner"
    with pytest.raises(JobError, match="no TensorRT"):
        choose(envs, trt, "kubernetes")


def test_adding_a_local_environment_asks_its_interpreter_once(tmp_path, monkeypatch):
    """No versions.json: the interpreter itself is asked (package metadata only)."""
    from catalog import environments
    from catalog.store import open_db
    site = tmp_path / "site"
    for dist, version in (("tensorflow", "2.19.1"), ("keras", "3.9.0")):
        info = site / f"{dist}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    bin_dir = tmp_path / "tf219" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PYTHONPATH", str(site))  # what that interpreter will see
    conn = open_db(tmp_path / "state.sqlite")
    try:
        env = environments.add(conn, "tf219", "ann", kind="local", python=str(bin_dir / "python"))
        assert (env["tf_version"], env["keras_version"], env["horovod_version"]) == \
            ("2.19.1", "3.9.0", "")
        with pytest.raises(Exception, match="needs --python"):
            environments.add(conn, "nopy", "ann", kind="local")
    finally:
        conn.close()


def test_auto_conversion_of_a_keras3_script_is_tf_distribute(tmp_path):
    envs = _envs(tmp_path)
    eng = make_engine(tmp_path / "home", environments=lambda: envs, follow=False)
    try:
        plan = eng.dry_run("train", {"script_source": (SCRIPTS / "keras3_loop.py").read_text(),
                                     "workers": 2})
        assert plan["spec"].converted_to == "tf-distribute"
        assert plan["spec"].runtime.name == "runner-tf221"
        plan = eng.dry_run("train", {"script_source": TFK_FIT, "workers": 2})
        assert plan["spec"].converted_to == "horovod" and plan["spec"].runtime.name == "runner"
    finally:
        eng.close()
