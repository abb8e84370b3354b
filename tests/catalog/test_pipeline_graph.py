"""Pipelines as graphs, run by catalog.runs on a real state database: generated graphs run each
step only after what it waits for and let independent steps overlap; retries; reuse of a
step whose inputs and code (the bytes of the files it names) are unchanged, said so; and
definitions whose after:/retries: cannot be run are refused with the step named."""
from __future__ import annotations

import threading
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog import pipelines
from catalog import runs as pipeline_runs
from catalog.errors import InvalidInput
from catalog.executor import StepOutcome
from catalog.store import open_db


class TimedSteps:
    """A StepExecutor whose jobs take ``pause`` seconds; it records when each ran, and fails
    a step's first ``fail[name]`` attempts."""

    def __init__(self, pause: float = 0.05, fail: dict[str, int] | None = None):
        self.pause, self.fail = pause, dict(fail or {})
        self.lock = threading.Lock()
        self.jobs: dict[str, str] = {}
        self.spans: dict[str, list[tuple[float, float]]] = {}
        self.n = 0

    def submit(self, kind, spec, owner, reply_to, readable=()):
        with self.lock:
            self.n += 1
            job = f"j-{self.n:04d}"
            self.jobs[job] = spec.labels.step
        return job

    def wait(self, job_id, timeout=None):
        name = self.jobs[job_id]
        start = time.monotonic()
        time.sleep(self.pause)
        with self.lock:
            self.spans.setdefault(name, []).append((start, time.monotonic()))
            if self.fail.get(name, 0) > 0:
                self.fail[name] -= 1
                return StepOutcome("failed", error="flaky")
        return StepOutcome("succeeded", {"model": name})


def _run(tmp_path, definition: dict, executor, name="g") -> dict:
    conn = open_db(tmp_path / "state.sqlite")
    pipelines.add(conn, name, yaml.safe_dump({"name": name, **definition}), "ana", replace=True)
    run_id = pipeline_runs.start(conn, name, "ana")
    return pipeline_runs.execute(conn, run_id, executor)


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 6))
    steps = []
    for i in range(n):
        after = draw(st.lists(st.sampled_from([f"s{j}" for j in range(i)]), unique=True)
                     ) if i else []
        steps.append({"name": f"s{i}", "kind": "train", "with": {"script": "x.py"},
                      "after": after})
    return steps


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs())
def test_each_step_starts_after_what_it_waits_for(tmp_path_factory, steps):
    ex = TimedSteps(pause=0.03)
    st_ = _run(tmp_path_factory.mktemp("g"), {"steps": steps}, ex)
    assert st_["state"] == "succeeded", st_
    for s in steps:
        (start, _), = ex.spans[s["name"]]
        for d in s["after"]:
            assert ex.spans[d][0][1] <= start, (s["name"], d)


def test_independent_steps_overlap_and_the_join_waits(tmp_path):
    steps = [{"name": "prep", "kind": "train", "with": {"script": "p.py"}},
             {"name": "a", "kind": "train", "with": {"script": "a.py"}, "after": "prep"},
             {"name": "b", "kind": "train", "with": {"script": "b.py"}, "after": ["prep"]},
             {"name": "join", "kind": "train", "after": ["a", "b"],
              "with": {"script": "j.py",
                       "args": ["${steps.a.outputs.model}", "${steps.b.outputs.model}"]}}]
    ex = TimedSteps(pause=0.4)
    t0 = time.monotonic()
    st_ = _run(tmp_path, {"steps": steps}, ex)
    took = time.monotonic() - t0
    assert st_["state"] == "succeeded"
    (a0, a1), = ex.spans["a"]
    (b0, b1), = ex.spans["b"]
    assert a0 < b1 and b0 < a1  # a and b ran at the same time
    assert ex.spans["join"][0][0] >= max(a1, b1)
    assert took < 4 * 0.4  # three rounds, not four


def test_a_flaky_step_is_tried_again(tmp_path):
    steps = [{"name": "fit", "kind": "train", "with": {"script": "f.py"}, "retries": 2}]
    ex = TimedSteps(fail={"fit": 2})
    st_ = _run(tmp_path, {"steps": steps}, ex)
    assert st_["state"] == "succeeded" and len(ex.spans["fit"]) == 3
    ex = TimedSteps(fail={"fit": 3})
    st_ = _run(tmp_path, {"steps": steps}, ex)
    assert st_["state"] == "failed" and "flaky" in st_["error"] and len(ex.spans["fit"]) == 3


def test_a_failure_stops_what_waits_for_it_and_lets_the_rest_end(tmp_path):
    steps = [{"name": "bad", "kind": "train", "with": {"script": "b.py"}, "after": []},
             {"name": "slow", "kind": "train", "with": {"script": "s.py"}, "after": []},
             {"name": "next", "kind": "train", "with": {"script": "n.py"}, "after": ["bad"]}]
    ex = TimedSteps(pause=0.2, fail={"bad": 1})
    st_ = _run(tmp_path, {"steps": steps}, ex)
    states = {s["name"]: s["state"] for s in st_["steps"]}
    assert st_["state"] == "failed" and "step 'bad'" in st_["error"]
    assert states == {"bad": "failed", "slow": "succeeded", "next": "not-run"}


def test_an_unchanged_step_is_reused_and_a_changed_one_is_not(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('v1')\n")
    steps = [{"name": "fit", "kind": "train", "with": {"script": str(script)}, "cache": True},
             {"name": "use", "kind": "train", "after": "fit",
              "with": {"script": "u.py", "args": ["${steps.fit.outputs.model}"]}}]
    first = _run(tmp_path, {"steps": steps}, TimedSteps())
    ex = TimedSteps()
    second = _run(tmp_path, {"steps": steps}, ex)
    fit = second["steps"][0]
    assert fit["state"] == "reused" and "fit" not in ex.spans and "use" in ex.spans
    # the run's status says why (the web view's pipeline run page shows it)
    assert fit["reused"].startswith(f"reused from run {first['id']} step fit")
    assert "unchanged" in fit["reused"] and second["steps"][1]["reused"] is None
    script.write_text("print('v2')\n")  # the code changed: it runs again
    ex = TimedSteps()
    third = _run(tmp_path, {"steps": steps}, ex)
    assert third["steps"][0]["state"] == "succeeded" and "fit" in ex.spans
    assert third["steps"][0]["reused"] is None


@pytest.mark.parametrize("steps, says", [
    ([{"name": "a", "kind": "train", "after": "a"}], "names the step itself"),
    ([{"name": "a", "kind": "train", "after": "zz"}], "names no step 'zz'"),
    ([{"name": "a", "kind": "train", "after": "b"}, {"name": "b", "kind": "train"}],
     "is below it"),
])
def test_graphs_that_cannot_run_are_refused(tmp_path, steps, says):
    conn = open_db(tmp_path / "state.sqlite")
    with pytest.raises(InvalidInput, match=says):
        pipelines.add(conn, "bad", yaml.safe_dump({"steps": steps}), "ana")


def test_retries_beyond_five_are_refused(tmp_path):
    conn = open_db(tmp_path / "state.sqlite")
    with pytest.raises(InvalidInput):
        pipelines.add(conn, "bad", yaml.safe_dump(
            {"steps": [{"name": "a", "kind": "train", "retries": 9}]}), "ana")


def test_a_graph_run_with_one_live_job_is_followed_after_a_crash(tmp_path):
    """tfdesk stopped while two steps ran: one job failed, one goes on. The run is followed
    (not failed at once), and following it waits for the live one and ends the run failed."""
    steps = [{"name": "a", "kind": "train", "with": {"script": "a.py"}, "after": []},
             {"name": "b", "kind": "train", "with": {"script": "b.py"}, "after": []}]
    conn = open_db(tmp_path / "state.sqlite")
    pipelines.add(conn, "g", yaml.safe_dump({"steps": steps}), "ana")
    run_id = pipeline_runs.start(conn, "g", "ana")
    with conn:  # the state a crash leaves: running, its driver gone, both jobs submitted
        conn.execute("UPDATE catalog_runs SET state = 'running', driver = NULL WHERE id = ?",
                     (run_id,))
        for name, job in (("a", "j-dead"), ("b", "j-live")):
            conn.execute("UPDATE catalog_run_steps SET state = 'running', job_id = ? WHERE "
                         "run_id = ? AND name = ?", (job, run_id, name))
    jobs = {"j-dead": ("failed", "exit status 1"), "j-live": ("running", "")}
    (action,) = pipeline_runs.reconcile(conn, jobs.get)
    assert action["action"] == "follow" and "j-live" in action["why"]

    class Ends:
        def submit(self, *a):
            raise AssertionError("nothing is submitted again")

        def wait(self, job_id, timeout=None):
            return StepOutcome("failed", error="exit status 1") if job_id == "j-dead" \
                else StepOutcome("succeeded", {"model": "b"})

    st_ = pipeline_runs.follow(conn, run_id, Ends())
    states = {s["name"]: s["state"] for s in st_["steps"]}
    assert st_["state"] == "failed" and states == {"a": "failed", "b": "succeeded"}
