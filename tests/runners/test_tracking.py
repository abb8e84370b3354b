"""Run tracking: parameters as given, the metric summary the database keeps, filters and sorts
checked against Python computing the same answer, and (slow) a real Keras job tracked with no
logging code in its script."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import string
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from runners import run_list, tracking
from runners.run_list import BadQuery, Filter, RunQuery, Sort
from runners.store import JobStore



def _word(first: str, rest: str, most: int):
    """A first character from ``first`` then up to ``most`` from ``rest``: the same strings as
    a from_regex strategy at half its cost per draw (from_regex made the flags test trip
    Hypothesis' too_slow draw-time check on a loaded 2-core machine)."""
    return st.builds(str.__add__, st.sampled_from(first), st.text(rest, max_size=most))


LOWER_DIGITS = string.ascii_lowercase + string.digits
NAMES = _word(string.ascii_lowercase, LOWER_DIGITS + "_", 8)     # [a-z][a-z0-9_]{0,8}
WORDS = _word(LOWER_DIGITS, LOWER_DIGITS + "._/", 10)            # [a-z0-9][a-z0-9._/]{0,10}


# tracking.flags is pure and fast; its wall time under load is not what this checks, and a
# deadline also sets the draw-time limit of the too_slow check (5 x deadline).
@settings(deadline=None)
@given(st.dictionaries(NAMES, WORDS, max_size=6), st.lists(st.booleans(), min_size=6,
                                                           max_size=6))
def test_flags_read_back_as_given(values, joined):
    argv = []
    for (name, value), eq in zip(values.items(), joined):
        argv += [f"--{name}={value}"] if eq else [f"--{name}", value]
    assert tracking.flags(argv) == values


def test_flags_switches_positionals_and_negative_numbers():
    assert tracking.flags(["data.csv", "--fast", "--lr", "-0.5", "--shuffle"]) == {
        "arg0": "data.csv", "fast": "true", "lr": "-0.5", "shuffle": "true"}


def _store(tmp_path) -> tuple[JobStore, sqlite3.Connection]:
    store = JobStore(tmp_path / "state.sqlite")
    return store, tracking.open_tracking(tmp_path / "state.sqlite")


def _job(store, tmp_path, owner="ana", kind="train", **spec):
    job, _ = store.create(kind, {"script_name": "train.py", "workers": 1,
                                 "launcher": "python", **spec}, owner, {}, "local",
                          tmp_path / "jobs")
    return job.id


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 30), st.floats(-1e6, 1e6, allow_nan=False)),
                min_size=1, max_size=20, unique_by=lambda p: p[0]))
def test_summary_follows_metrics_in_any_order(tmp_path_factory, points):
    tmp = tmp_path_factory.mktemp("s")
    store, conn = _store(tmp)
    jid = _job(store, tmp)
    for epoch, value in points:
        store.add_metrics(jid, epoch, {"loss": value})
    row = conn.execute("SELECT * FROM run_summary WHERE job_id = ? AND name = 'loss'",
                       (jid,)).fetchone()
    last = max(points)[1]
    assert (row["last"], row["step"]) == (pytest.approx(last), max(points)[0])
    assert row["min"] == pytest.approx(min(v for _, v in points))
    assert row["max"] == pytest.approx(max(v for _, v in points))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["ana", "bo"]), st.sampled_from(["0.1", "0.01", "1e-3"]),
                          st.one_of(st.none(), st.floats(0, 1, allow_nan=False))),
                min_size=1, max_size=12),
       st.floats(0, 1, allow_nan=False), st.sampled_from([">", ">=", "<", "<=", "=", "!="]),
       st.booleans())
def test_filters_and_sorts_agree_with_python(tmp_path_factory, runs, cut, op, desc):
    tmp = tmp_path_factory.mktemp("q")
    store, conn = _store(tmp)
    made = []
    for owner, lr, acc in runs:
        jid = _job(store, tmp, owner=owner, args=["--lr", lr])
        if acc is not None:
            store.add_metrics(jid, 1, {"val_accuracy": acc})
        made.append((jid, owner, float(lr), acc))
    cmp = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__,
           "=": float.__eq__, "!=": float.__ne__}[op]
    q = RunQuery(owner="ana", metrics=[Filter("val_accuracy", op, repr(cut))],
                 params=[Filter("lr", ">=", "0.01")],
                 sort=Sort("metric:val_accuracy", desc), limit=1000)
    if all(m[3] is None for m in made):  # a metric no run records is an error, not "none"
        with pytest.raises(BadQuery, match="val_accuracy"):
            run_list.list_runs(conn, q)
        return
    rows, total = run_list.list_runs(conn, q)
    expect = [m for m in made if m[1] == "ana" and m[3] is not None and cmp(m[3], cut)
              and m[2] >= 0.01]
    assert total == len(expect) == len(rows)
    assert {r.id for r in rows} == {m[0] for m in expect}
    got = [r.metrics["val_accuracy"] for r in rows]
    assert got == sorted(got, reverse=desc)


def test_params_of_a_training_job(tmp_path):
    store, conn = _store(tmp_path)
    jid = _job(store, tmp_path, args=["--lr", "0.1", "--epochs=3"], workers=2,
               launcher="horovod", script_sha256="ab" * 32, runtime={"name": "tf215"},
               project="vision")
    rows, _ = run_list.list_runs(conn, RunQuery(params=[Filter.parse("flag.lr=0.1")]))
    assert [r.id for r in rows] == [jid]
    assert rows[0].params == {"kind": "train", "backend": "local", "workers": "2",
                              "target": "horovod", "script": "train.py",
                              "script_sha256": "ab" * 32, "environment": "tf215",
                              "project": "vision", "flag.lr": "0.1", "flag.epochs": "3",
                              "gpus_per_worker": "0"}  # every stored train spec has it
    assert run_list.list_runs(conn, RunQuery(project="VISION"))[1] == 1


def test_a_deleted_job_takes_its_tracking(tmp_path):
    store, conn = _store(tmp_path)
    jid = _job(store, tmp_path)
    store.add_metrics(jid, 1, {"loss": 0.5})
    tracking.record_steps(conn, jid, [(10, {"loss": 0.6})])
    run_list.list_runs(conn, RunQuery())
    store.delete(jid)
    for table in ("tracked_runs", "run_params", "run_summary", "run_step_metrics"):
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


@pytest.mark.parametrize("text", ["lr", "lr>", ">3", "lr>abc", "lr<<3", "val_loss<=x"])
def test_bad_filters_say_what_is_read(text):
    with pytest.raises(BadQuery, match="NAME OP VALUE|compares numbers"):
        Filter.parse(text)


@pytest.mark.parametrize("text", ["metric:", "banana", "param"])
def test_bad_sort_keys(text):
    with pytest.raises(BadQuery, match="cannot sort"):
        Sort.parse(text)


def test_compare_names_differences(tmp_path):
    store, conn = _store(tmp_path)
    a = _job(store, tmp_path, args=["--lr", "0.1"])
    b = _job(store, tmp_path, args=["--lr", "0.01"])
    store.add_metrics(a, 1, {"loss": 0.5})
    c = run_list.compare(conn, [a, b])
    assert c.differ == {"flag.lr": ["0.1", "0.01"]}
    assert c.metrics == {"loss": [0.5, None]}
    text = run_list.render_comparison(c)
    assert "flag.lr" in text and "parameters that differ" in text
    with pytest.raises(BadQuery, match="no run j-nope"):
        run_list.compare(conn, [a, "j-nope"])


def test_step_reader_keeps_rank_zero_steps_only():
    r = tracking.StepReader()
    for line in ['[1] TFDESK_STEP {"step": 10, "loss": 9}', '[0] TFDESK_STEP {"step": 10, "loss": 1}',
                 'TFDESK_STEP {"step": 20, "loss": 0.5, "lr": "x"}', "TFDESK_STEP {broken"]:
        assert r.feed(line) is None
    assert r.take_steps() == [(10, {"loss": 1.0}), (20, {"loss": 0.5})]
    assert r.feed('TFDESK_METRIC {"epoch": 1, "loss": 0.4}') == (1, {"loss": 0.4})


REPO = Path(__file__).resolve().parents[2]
RUNNERS = {"keras2": REPO / ".venv-runner" / "bin" / "python",
           "keras3": REPO / ".venv-runner-tf221" / "bin" / "python"}
KERAS_SCRIPT = """
import numpy as np, tensorflow as tf
x = np.random.rand(256, 4).astype("float32"); y = (x.sum(1) > 2).astype("float32")
m = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"),
                         tf.keras.layers.Dense(1, activation="sigmoid")])
m.compile("adam", "binary_crossentropy", metrics=["accuracy"])
m.fit(x, y, epochs=3, batch_size=16, verbose=0, validation_split=0.25)
"""


@pytest.mark.slow
@pytest.mark.parametrize("keras", list(RUNNERS))
def test_a_keras_job_is_tracked_without_logging_code(tmp_path, keras):
    runner = RUNNERS[keras]
    if not runner.exists():
        pytest.skip(f"needs {runner} (make runner-env)")
    from tests.jobs_helpers import make_engine
    script = tmp_path / "quiet_fit.py"
    script.write_text(textwrap.dedent(KERAS_SCRIPT))
    engine = make_engine(tmp_path, python=runner)
    try:
        job = engine.submit("train", {"script_path": str(script), "args": ["--lr", "0.01"]})
        job = engine.wait(job.id, timeout=240)
        assert job.state == "succeeded", engine.read_log(job.id)
    finally:
        engine.close()
    conn = tracking.open_tracking(tmp_path / "state.sqlite")
    (row,), _ = run_list.list_runs(conn, RunQuery(metrics=[Filter.parse("val_loss>0")]))
    assert row.params["script_sha256"] == hashlib.sha256(
        script.read_text().encode()).hexdigest()
    assert row.params["flag.lr"] == "0.01" and row.params["target"] == "python"
    curves = run_list.curves(conn, job.id)
    # verbose=0 prints nothing of Keras': every epoch came from the runner's callback
    assert [e for e, _ in curves["epoch"]["val_accuracy"]] == [1, 2, 3]
    # 192 training samples / 16 = 12 steps per epoch, every 10th step recorded
    assert [s for s, _ in curves["step"]["loss"]] == [10, 20, 30]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9]),
                          st.floats(0, 1, allow_nan=False)), min_size=1, max_size=14),
       st.integers(1, 5), st.booleans())
def test_metric_sorted_pages_cover_every_run_once(tmp_path_factory, values, size, desc):
    tmp = tmp_path_factory.mktemp("p")
    store, conn = _store(tmp)
    made = []
    for v in values:
        jid = _job(store, tmp)
        if v is not None:
            store.add_metrics(jid, 1, {"auc": v})
        made.append((jid, v))
    if all(v is None for _, v in made):  # sorting by a metric no run records is an error
        with pytest.raises(BadQuery, match="auc"):
            run_list.list_runs(conn, RunQuery(sort=Sort("metric:auc", desc)))
        return
    pages, offset = [], 0
    while True:
        rows, total = run_list.list_runs(conn, RunQuery(sort=Sort("metric:auc", desc),
                                                        limit=size, offset=offset))
        if not rows:
            break
        pages += [r.id for r in rows]
        offset += size
    assert total == len(values)
    having = sorted(((v, j) for j, v in made if v is not None), reverse=desc)
    without = [j for j, v in reversed(made) if v is None]  # newest first
    assert pages == [j for _, j in having] + without


def test_model_jobs_carry_their_validation_and_benchmark(tmp_path):
    from tests.web_helpers import BENCH, populate
    ids = populate(tmp_path)
    conn = tracking.open_tracking(tmp_path / "state.sqlite")
    rows, _ = run_list.list_runs(conn, RunQuery(
        kind="convert-model", metrics=[Filter.parse("benchmark.converted.b32.p50_ms<100")]))
    assert [r.id for r in rows] == [ids["convert"]]
    m = rows[0].metrics
    assert m["benchmark.converted.b32.p50_ms"] == pytest.approx(BENCH["converted"][2]["p50_ms"])
    assert m["validation.outputs.dense.max_abs_error"] == pytest.approx(2.1e-6)
    assert "validation.passed" not in m  # a verdict is not a figure


def test_model_runs_without_figures_leave_the_pending_list(tmp_path):
    store, conn = _store(tmp_path)
    failed = _job(store, tmp_path, kind="convert-model")
    waiting = _job(store, tmp_path, kind="convert-model")
    for st_ in ("starting", "running", "failed"):
        store.transition(failed, st_)
    run_list.list_runs(conn, RunQuery())
    pending = {r[0] for r in conn.execute(
        "SELECT job_id FROM tracked_runs WHERE figures_done = 0")}
    assert pending == {waiting}  # still queued: its figures may come


@pytest.mark.parametrize("env, rank", [
    ({}, 0), ({"HOROVOD_RANK": "1"}, 1), ({"HOROVOD_RANK": "0"}, 0),
    ({"OMPI_COMM_WORLD_RANK": "3"}, 3),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a", "b"]}, "task": {"type": "worker", "index": 1}}'}, 1),
    ({"TF_CONFIG": '{"cluster": {"worker": ["a", "b"]}, "task": {"type": "worker", "index": 0}}'}, 0),
    ({"TF_CONFIG": '{"cluster": {"chief": ["c"], "worker": ["a"]}, "task": {"type": "worker", "index": 0}}'}, 1),
    ({"TF_CONFIG": '{"cluster": {"chief": ["c"], "worker": ["a"]}, "task": {"type": "chief", "index": 0}}'}, 0),
    ({"TF_CONFIG": "not json"}, 0),
])
def test_only_the_first_worker_reports(env, rank):
    """The callback is added in rank 0 only (Horovod's or tf.distribute's), in a fresh
    interpreter as a job starts."""
    import json as _json
    import os
    import subprocess
    hook = Path(tracking.__file__).with_name("tracking_hook")
    code = "import tfdesk_track, sys; print(tfdesk_track.rank())"
    clean = {k: v for k, v in os.environ.items()
             if k not in ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "TF_CONFIG")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env, "PYTHONPATH": str(hook)},
                         capture_output=True, text=True, timeout=60)
    assert _json.loads(out.stdout.strip().splitlines()[-1]) == rank, out.stderr


TB_LOOP = """
import tensorflow as tf
w = tf.summary.create_file_writer("logs/train")
v = tf.Variable(3.0)
opt = tf.keras.optimizers.SGD(0.1)
with w.as_default():
    for step in range(1, 31):
        with tf.GradientTape() as t:
            loss = (v - 1.0) ** 2
        opt.apply_gradients([(t.gradient(loss, v), v)])
        tf.summary.scalar("loss", loss, step=step)
w.flush()
"""


@pytest.mark.slow
def test_a_custom_loop_is_tracked_from_its_tensorboard_summaries(tmp_path):
    """No fit: the hook reads the script's event files at its exit with TensorBoard's reader
    (in the job, as the job's user), and every scalar becomes a step metric."""
    from tests.jobs_helpers import make_engine
    runner = RUNNERS["keras2"]
    if not runner.exists():
        pytest.skip(f"needs {runner} (make runner-env)")
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(TB_LOOP))
    engine = make_engine(tmp_path, python=runner)
    try:
        job = engine.wait(engine.submit("train", {"script_path": str(script)}).id, timeout=240)
        assert job.state == "succeeded", engine.read_log(job.id)
    finally:
        engine.close()
    conn = tracking.open_tracking(tmp_path / "state.sqlite")
    loss = run_list.curves(conn, job.id)["step"]["loss"]
    assert [s for s, _ in loss] == list(range(1, 31))
    assert loss[0][1] == pytest.approx(4.0) and loss[-1][1] < 0.01  # (3 - 1)^2, converging


def test_charts_drawn_in_threads_are_the_charts_drawn_alone():
    """The web view draws in a thread pool: a chart drawn alongside others is byte for byte
    the chart drawn alone (no shared pyplot state)."""
    from concurrent.futures import ThreadPoolExecutor
    from runners.run_charts import overlay_png
    series = [{f"r{i}": {"loss": [(e, 1.0 / (e + i)) for e in range(1, 30)],
                         "acc": [(e, e / (30 + i)) for e in range(1, 30)]}} for i in range(8)]
    alone = [overlay_png(s) for s in series]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            together = list(pool.map(overlay_png, series))
            assert together == alone
    assert all(p[:4] == b"\x89PNG" for p in alone) and len(set(alone)) == len(alone)


@pytest.mark.parametrize("launcher, workers", [("python", 1), ("tf-distribute", 2),
                                               ("horovod", 2)])
def test_cluster_pods_carry_the_hook(launcher, workers):
    """On Kubernetes the hook rides in the script's ConfigMap and is first on PYTHONPATH of
    every container that runs the script."""
    from runners.kubernetes.manifests import SCRIPT_DIR, training_plan
    from runners.stored import build
    plan = training_plan("j-0a1b2c3d", build("train", {"workers": workers, "launcher": launcher,
                                                       "script_name": "s.py"}),
                         "print(1)\n", {"image": "tensorflow/tensorflow:2.15.0"})
    (cm,) = [m for m in plan.manifests if m["kind"] == "ConfigMap"]
    assert set(cm["data"]) == {"script.py", "sitecustomize.py", "tfdesk_track.py"}

    def containers(obj):
        if isinstance(obj, dict):
            if "image" in obj and "env" in obj:
                yield obj
            for v in obj.values():
                yield from containers(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from containers(v)
    found = list(containers(plan.main))
    assert found and all({"name": "PYTHONPATH", "value": SCRIPT_DIR} in c["env"] for c in found)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(
                         st.sampled_from(["labels", "args", "runtime", "workers", "project",
                                          "environment", "x"]), c, max_size=4), max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_json.map(json.dumps) | st.text(max_size=8), min_size=1, max_size=4))
def test_runs_with_damaged_specs_are_listed_not_dropped(tmp_path_factory, specs):
    """Whatever a row's spec holds (any JSON, or none), the run list keeps every run, with
    the parameters its columns give."""
    tmp_path = tmp_path_factory.mktemp("runs")
    store, conn = _store(tmp_path)
    ids = [_job(store, tmp_path) for _ in specs]
    for jid, text in zip(ids, specs):
        store._db().execute("UPDATE jobs SET spec = ? WHERE id = ?", (text, jid))
    rows, total = run_list.list_runs(conn, RunQuery())
    assert total == len(ids) and sorted(r.id for r in rows) == sorted(ids)
    assert all(r.params["kind"] == "train" and r.params["backend"] == "local" for r in rows)
