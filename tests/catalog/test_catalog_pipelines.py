"""Pipelines: YAML + JSON-schema validation, runs as chains of real (trivial) jobs through the
StepExecutor interface, output passing, stop at first failure, resume with --from, and
automatic registration of outputs."""
import textwrap

import pytest

from catalog import components, datasets, models, open_db, pipelines, projects, runs
from catalog.errors import Duplicate, HasDependants, InvalidInput
from catalog.executor import StepExecutor
from catalog.outputs import FinishedJob, register_job_outputs
from runners.specs import EvaluateSpec, TrainSpec
from runners.stored import Labels
from tests.catalog_helpers import ProcessEngine

PIPELINE = """
name: mnist-hvd
description: convert, train with two workers, convert to ONNX, benchmark
project: vision
params: {{epochs: 2}}
steps:
  - name: convert
    kind: convert-script
    with: {{script: "{script}", target: "{convert_target}"}}
  - name: train
    component: hvd-train
    register: mnist-cnn
    with:
      script: ${{steps.convert.outputs.script}}
      args: ["${{datasets.mnist}}"{train_fail}]
      dataset: mnist
      epochs: ${{params.epochs}}
  - name: to-onnx
    kind: convert-model
    with: {{model: "${{steps.train.outputs.model}}", target: onnx}}
  - name: bench
    kind: infer
    with: {{model: "${{steps.to-onnx.outputs.model}}", batch: [1, 8]}}
"""


@pytest.fixture
def conn(tmp_path):
    c = open_db(tmp_path / "state.sqlite")
    data = tmp_path / "mnist.npz"
    data.write_bytes(b"npz")
    script = tmp_path / "train.py"
    script.write_text("print('train')\n")
    projects.add(c, "vision", "ann")
    datasets.add(c, "mnist", str(data), "ann")
    components.add(c, "hvd-train", "train", "ann", params={"workers": 2})
    yield c
    c.close()



def definition(conn, convert_target="horovod", train_fail=""):
    return PIPELINE.format(script=conn.execute("PRAGMA database_list").fetchone()[2]
                           .replace("state.sqlite", "train.py"), convert_target=convert_target,
                           train_fail=train_fail)


def test_engine_stand_in_implements_the_interface(tmp_path):
    assert isinstance(ProcessEngine(tmp_path), StepExecutor)


@pytest.mark.parametrize("text, message", [
    ("steps: [", "not valid YAML at line 1"),
    ("- a\n- b", "YAML mapping"),
    ("steps: []", "steps: [] should be non-empty"),
    ("steps:\n  - {name: a}", "exactly one of 'kind' or 'component'"),
    ("steps:\n  - {name: a, kind: train, component: x}", "exactly one of"),
    ("steps:\n  - {name: 'bad name', kind: train}", "steps[0].name"),
    ("steps:\n  - {name: a, kind: train, colour: red}", "'colour' was unexpected"),
    ("steps:\n  - {name: a, kind: train}\n  - {name: a, kind: infer}", "used twice"),
])
def test_definitions_are_validated(conn, text, message):
    with pytest.raises(InvalidInput) as info:
        pipelines.add(conn, "p", text, "ann")
    assert message in str(info.value)
    assert pipelines.list_(conn) == []


def test_references_are_checked_against_steps_and_catalog(conn):
    text = textwrap.dedent("""
        steps:
          - name: a
            kind: train
            with: {script: x.py, args: ["${steps.b.outputs.model}", "${datasets.nope}",
                                        "${params.q}"]}
          - name: b
            component: ghost
    """)
    with pytest.raises(InvalidInput) as info:
        pipelines.add(conn, "p", text, "ann")
    msg = str(info.value)
    assert "names a step it does not run after ('b')" in msg
    assert "dataset 'nope' is not in the catalog" in msg
    assert "not a declared param" in msg
    assert "no component 'ghost'" in msg


def test_a_full_run_chains_jobs_passes_outputs_and_registers_models(conn, tmp_path):
    pipelines.add(conn, None, definition(conn), "ann")
    with pytest.raises(Duplicate):
        pipelines.add(conn, None, definition(conn), "ann")
    engine = ProcessEngine(tmp_path / "jobs")
    seen = []
    run_id = runs.start(conn, "mnist-hvd", "ann", {"kind": "terminal"})
    st = runs.execute(conn, run_id, engine, progress=lambda m, d, t: seen.append((m, d, t)))
    assert st["state"] == "succeeded", runs.render(st)
    assert [s["state"] for s in st["steps"]] == ["succeeded"] * 4
    # Outputs fed forward, component defaults merged, params and dataset URIs resolved.
    train_spec = engine.jobs["job-2"]["spec"]
    assert train_spec["script_path"] == st["steps"][0]["outputs"]["script"]
    assert train_spec["workers"] == 2 and train_spec["epochs"] == 2
    assert train_spec["args"] == [datasets.get(conn, "mnist")["uri"]]
    assert train_spec["project"] == "vision" and train_spec["pipeline_run"] == run_id
    assert engine.jobs["job-4"]["spec"]["batch"] == [1, 8]
    # Every output registered, linked to its job, run, source model and dataset.
    trained = models.get(conn, "mnist-cnn")
    assert (trained["job_id"], trained["run_id"], trained["dataset"]) == ("job-2", run_id, "mnist")
    assert trained["tf_version"] == "2.15.1" and trained["project"] == "vision"
    onnx = models.get(conn, "mnist-cnn-onnx")
    assert onnx["format"] == "onnx" and onnx["parent"] == "mnist-cnn:1"
    assert onnx["validation"] == {"passed": True, "max_abs_error": 1e-6}
    assert onnx["benchmark"] == {"p50_ms": 1.5}  # the infer step's report
    assert st["models"] == ["mnist-cnn:1", "mnist-cnn-onnx:1"]
    assert projects.get(conn, "vision")["jobs"] == ["job-2", "job-3", "job-4"]
    assert seen[0][0] == "mnist-hvd: step convert (convert-script)" and seen[-1][1] == 4
    # Nothing stays marked in use after the run.
    assert conn.execute("SELECT COUNT(*) FROM catalog_uses").fetchone()[0] == 0


def test_failure_stops_the_run_and_resume_reuses_earlier_outputs(conn, tmp_path):
    pipelines.add(conn, None, definition(conn, train_fail=', "--fail=out of memory"'), "ann")
    engine = ProcessEngine(tmp_path / "jobs")
    run1 = runs.start(conn, "mnist-hvd", "ann")
    st = runs.execute(conn, run1, engine)
    assert st["state"] == "failed"
    assert [s["state"] for s in st["steps"]] == ["succeeded", "failed", "not-run", "not-run"]
    assert st["error"] == "step 'train' (job job-2) failed: training crashed: out of memory"
    assert st["resume_hint"] == ("fix the cause, then resume with: pipeline run mnist-hvd "
                                 "--from train")
    text = runs.render(st)
    assert "FAILED  train (train) job job-2" in text and "not run  to-onnx" in text
    assert len(engine.jobs) == 2  # nothing ran after the failure
    assert models.list_(conn) == []

    pipelines.add(conn, None, definition(conn), "ann", replace=True)  # the fix
    run2 = runs.start(conn, "mnist-hvd", "ann", from_step="train")
    st2 = runs.execute(conn, run2, engine)
    assert st2["state"] == "succeeded" and st2["resumed_from"] == run1
    assert [s["state"] for s in st2["steps"]] == ["reused"] + ["succeeded"] * 3
    assert st2["steps"][0]["job_id"] == "job-1"  # the convert step did not run again
    assert engine.jobs["job-3"]["spec"]["script_path"] == st["steps"][0]["outputs"]["script"]
    assert [r["id"] for r in runs.list_runs(conn, "mnist-hvd")] == [run2, run1]

    with pytest.raises(InvalidInput, match="has no step 'nope'"):
        runs.start(conn, "mnist-hvd", "ann", from_step="nope")


def test_resume_without_an_earlier_successful_prefix_is_refused(conn, tmp_path):
    pipelines.add(conn, None, definition(conn, convert_target="fail:syntax error"), "ann")
    run1 = runs.start(conn, "mnist-hvd", "ann")
    assert runs.execute(conn, run1, ProcessEngine(tmp_path / "j"))["state"] == "failed"
    with pytest.raises(InvalidInput, match="no earlier run finished the steps before it"):
        runs.start(conn, "mnist-hvd", "ann", from_step="train")


def test_a_rejected_submission_fails_the_step_with_its_message(conn, tmp_path):
    pipelines.add(conn, "p", "steps:\n  - {name: s, kind: evaluate, with: {model: /m, data: /d}}",
                  "ann")
    st = runs.execute(conn, runs.start(conn, "p", "ann"), ProcessEngine(tmp_path / "j"))
    assert st["state"] == "failed"
    assert "ValueError: unknown job kind evaluate" in st["error"]


def test_things_a_pipeline_uses_cannot_be_deleted(conn):
    pipelines.add(conn, None, definition(conn), "ann")
    with pytest.raises(HasDependants) as info:
        datasets.delete(conn, "mnist")
    assert info.value.dependants == ["pipeline mnist-hvd"]
    with pytest.raises(HasDependants, match="pipeline mnist-hvd"):
        components.delete(conn, "hvd-train")
    assert pipelines.get(conn, "mnist-hvd")["uses"] == ["component hvd-train", "dataset mnist"]
    datasets.delete(conn, "mnist", force=True)
    pipelines.delete(conn, "mnist-hvd")
    components.delete(conn, "hvd-train")


def test_register_job_outputs_from_an_engine_job_is_idempotent(conn, tmp_path):
    sm = tmp_path / "job-9" / "saved_model"
    sm.mkdir(parents=True)
    (sm / "saved_model.pb").write_bytes(b"pb")
    # A training by hand registers only under the name given (train --register my-train).
    spec = TrainSpec(script_path="/x/my train.py", labels=Labels(dataset="mnist", register="my-train"))
    job = FinishedJob.of("job-9", "train", spec, "bob")
    arts = [{"name": "saved_model", "path": str(sm)}]
    made = register_job_outputs(conn, job, arts)
    assert [m["ref"] for m in made] == ["my-train:1"] and made[0]["dataset"] == "mnist"
    assert [m["ref"] for m in register_job_outputs(conn, job, arts)] == ["my-train:1"]
    failed = FinishedJob.of("job-10", "train", spec, "bob", state="failed")
    assert register_job_outputs(conn, failed, arts) == []


def test_evaluation_joins_the_models_validation(conn, tmp_path):
    sm = tmp_path / "job-1" / "saved_model"
    sm.mkdir(parents=True)
    (sm / "saved_model.pb").write_bytes(b"pb")
    job = FinishedJob.of("job-1", "train", TrainSpec(script_path="/x/net.py",
                                                     labels=Labels(register="net")), "bob")
    [model] = register_job_outputs(conn, job, [{"name": "saved_model", "path": str(sm)}])
    from catalog import models
    models.update_results(conn, model["ref"], validation={"passed": True, "max_abs": 1e-6})
    ev = FinishedJob.of("job-2", "evaluate", EvaluateSpec(model=model["ref"]), "bob")
    register_job_outputs(conn, ev, [], results={"evaluation": {"accuracy": 0.9}})
    validation = models.get(conn, model["ref"])["validation"]
    assert validation["passed"] is True and validation["evaluation"] == {"accuracy": 0.9}
