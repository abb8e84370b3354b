"""A step reads, read-only, exactly the catalog entries it names and the outputs it names of
steps it runs after (catalog/step_outputs.py). Generated step graphs: a definition is added iff
each ``${steps.X.outputs.K}`` names a step X above the reader and an output X makes; a run
starts every reader after what it reads has ended. End to end (slow): a second ``train`` step
reads the folder the first declared, bound read-only in its sandbox."""
from __future__ import annotations

import json
import os
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog import pipelines
from catalog import runs as pipeline_runs
from catalog.errors import InvalidInput
from catalog.executor import StepOutcome
from catalog.step_outputs import BUILTIN
from catalog.store import open_db

REPO = Path(__file__).resolve().parents[2]


class Steps:
    """A StepExecutor whose steps end at once with their kind's outputs and what they
    declare, each under its own folder; it records when each step ran and what it was given."""

    def __init__(self, root: Path, declared: dict[str, dict[str, str]]):
        self.root, self.declared = root, declared
        self.lock = threading.Lock()
        self.jobs: dict[str, str] = {}
        self.spans: dict[str, tuple[float, float]] = {}
        self.given: dict[str, tuple] = {}

    def submit(self, kind, spec, owner, reply_to, readable=()):
        with self.lock:
            job = f"j-{len(self.jobs) + 1:04x}"
            self.jobs[job] = spec.labels.step
            self.given[spec.labels.step] = (tuple(getattr(spec, "inputs", ())), readable)
        return job

    def wait(self, job_id, timeout=None):
        name, start = self.jobs[job_id], time.monotonic()
        time.sleep(0.01)
        workdir = self.root / job_id
        for rel in self.declared.get(name, {}).values():
            (workdir / rel).mkdir(parents=True, exist_ok=True)
        with self.lock:
            self.spans[name] = (start, time.monotonic())
        return StepOutcome("succeeded", {"workdir": str(workdir), "model": str(workdir / "m")})


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 5))
    steps = []
    for i in range(n):
        step = {"name": f"s{i}", "kind": "train", "with": {"script": "/x.py"}}
        if draw(st.booleans()):
            step["outputs"] = {"data": "data", "more": "out/more"}
        if i and draw(st.booleans()):
            step["after"] = draw(st.lists(st.sampled_from([f"s{j}" for j in range(i)]),
                                          unique=True))
        refs = draw(st.lists(st.tuples(st.integers(0, n - 1),
                                       st.sampled_from(["data", "model", "nope"])), max_size=2))
        if refs:
            step["with"]["args"] = [f"${{steps.s{j}.outputs.{k}}}" for j, k in refs]
        steps.append(step)
    return steps


def _allowed(steps) -> bool:
    """The rule, from the definition's words: every reference names a step above the reader
    and an output that step makes."""
    for i, s in enumerate(steps):
        for arg in s["with"].get("args", []):
            j, key = int(arg.split(".")[1][1:]), arg.split(".")[-1].rstrip("}")
            makes = {*BUILTIN["train"], *steps[j].get("outputs", {})}
            if j >= i or key not in makes:
                return False
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs())
def test_a_step_reads_only_outputs_of_steps_it_runs_after(tmp_path_factory, steps):
    tmp = tmp_path_factory.mktemp("g")
    conn = open_db(tmp / "state.sqlite")
    text = yaml.safe_dump({"name": "g", "steps": steps})
    if not _allowed(steps):
        with pytest.raises(InvalidInput) as info:
            pipelines.add(conn, "g", text, "ana")
        assert "outputs." in str(info.value) and "step 's" in str(info.value)
        return
    pipelines.add(conn, "g", text, "ana")
    ex = Steps(tmp / "jobs", {s["name"]: s.get("outputs", {}) for s in steps})
    status = pipeline_runs.execute(conn, pipeline_runs.start(conn, "g", "ana"), ex)
    assert status["state"] == "succeeded", status
    for s in steps:
        inputs, readable = ex.given[s["name"]]
        assert set(readable) == set(inputs)  # what it reads of earlier steps, and only that
        for arg in s["with"].get("args", []):
            src = arg.split(".")[1]
            assert ex.spans[src][1] <= ex.spans[s["name"]][0], (s["name"], src)
            key = arg.split(".")[-1].rstrip("}")
            if key != "model":  # a declared output: its folder in the source step's job
                path = ex.root / next(j for j, n in ex.jobs.items() if n == src) / "data"
                assert str(path) in readable


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.just("/etc"), st.just("../up"), st.just("a/../../b"), st.just(".hidden"),
                 st.just("x/.git"), st.just(""), st.just("."),
                 st.text(min_size=1, max_size=6).map(lambda t: "/" + t),
                 st.text(min_size=1, max_size=6).map(lambda t: "../" + t)))
def test_a_declared_output_outside_the_job_folder_is_refused(tmp_path_factory, rel):
    conn = open_db(tmp_path_factory.mktemp("o") / "state.sqlite")
    steps = [{"name": "prep", "kind": "train", "with": {"script": "/p.py"},
              "outputs": {"data": rel}}]
    with pytest.raises(InvalidInput, match="step 'prep': output 'data'"):
        pipelines.add(conn, "o", yaml.safe_dump({"steps": steps}), "ana")


def test_unknown_parameters_and_undeclared_outputs_are_named_at_add(tmp_path):
    conn = open_db(tmp_path / "state.sqlite")
    steps = [{"name": "prep", "kind": "train", "with": {"script": "/p.py", "scirpt": "x"},
              "outputs": {"model": "m"}},
             {"name": "fit", "kind": "train",
              "with": {"script": "/f.py", "args": ["${steps.prep.outputs.data}",
                                                    "${steps.fit.outputs.model}"]}}]
    with pytest.raises(InvalidInput) as info:
        pipelines.add(conn, "p", yaml.safe_dump({"steps": steps}), "ana")
    msg = str(info.value)
    assert "step 'prep': with: 'scirpt' is not a parameter of train (it takes: args," in msg
    assert "step 'prep': output 'model' is made by every train step" in msg
    assert "${steps.prep.outputs.data}: step 'prep' makes no output 'data'" in msg
    assert "${steps.fit.outputs.model} names itself" in msg
    from catalog import components
    with pytest.raises(InvalidInput, match="'wokers' is not a parameter of train"):
        components.add(conn, "c", "train", "ana", params={"wokers": 2})


# -- end to end: a real engine, the real sandbox ----------------------------------------------
PREP = """\
import os
os.makedirs("data")
with open("data/rows.txt", "w") as f:
    f.write("1\\n2\\n3\\n")
"""
FIT = """\
import os, sys
folder = sys.argv[1]
rows = open(os.path.join(folder, "rows.txt")).read().split()
print("sum=%d" % sum(map(int, rows)))
print("inputs=" + os.environ.get("TFDESK_INPUTS", ""))
try:
    open(os.path.join(folder, "mine.txt"), "w").write("x")
    print("wrote into the input")
except OSError as exc:
    print("read-only: %s" % type(exc).__name__)
"""


@pytest.mark.slow
def test_a_train_step_reads_the_folder_an_earlier_step_declared(tmp_path):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    runner = REPO / ".venv-runner" / "bin" / "python"
    if not runner.exists():
        pytest.skip("the runner environment (make runner-env) is not built")
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{runner}"\n')
    (tmp_path / "prep.py").write_text(PREP)
    (tmp_path / "fit.py").write_text(FIT)
    (tmp_path / "p.yaml").write_text(textwrap.dedent("""\
        name: two-step
        steps:
          - name: prep
            kind: train
            outputs: {data: data}
            with: {script: prep.py}
          - name: fit
            kind: train
            with: {script: fit.py, args: ["${steps.prep.outputs.data}"]}
    """))
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    try:
        os.chdir(tmp_path)
        _, r = run_line(ctx, f"pipelines add - {tmp_path / 'p.yaml'}")
        assert r.ok, r.text
        _, r = run_line(ctx, "pipeline run two-step --json")
        run = r.data["run"]
        assert r.ok and run["state"] == "succeeded", r.text
        steps = {s["name"]: s for s in run["steps"]}
        engine = ctx.services.engine
        prep, fit = engine.get(steps["prep"]["job_id"]), engine.get(steps["fit"]["job_id"])
        data = str(Path(prep.workdir) / "data")
        assert steps["prep"]["outputs"]["data"] == data
        assert fit.spec.inputs == (data,) and fit.spec.args == (data,)
        assert set(fit.spec.input_copies) == {data}  # a private copy, bound at that path
        log = engine.read_log(fit.id)
        assert "sum=6" in log and f"inputs={data}" in log and "read-only:" in log, log
        assert sorted(os.listdir(data)) == ["rows.txt"]
        assert json.loads(json.dumps(fit.to_dict()))["spec"]["inputs"] == [data]
    finally:
        os.chdir(REPO)
        ctx.services.close()
