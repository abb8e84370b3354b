"""Filtering and sorting runs by per-epoch and per-step metrics with the metric grammar
(runners/run_list.py): ``NAME``, ``step:NAME`` and ``last|min|max(...)`` of either, checked
against Python computing the same answer from the values stored; unknown metrics and bad
grammar are refused with what would be read."""
from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from runners import run_list, tracking
from runners.run_list import BadQuery, Filter, MetricRef, RunQuery, Sort
from runners.store import JobStore

AGGS = {"last": lambda pts: max(pts)[1], "min": lambda pts: min(v for _, v in pts),
        "max": lambda pts: max(v for _, v in pts)}
OPS = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__,
       "=": float.__eq__, "!=": float.__ne__}
SERIES = st.lists(st.tuples(st.integers(1, 500), st.floats(0, 10, allow_nan=False)),
                  min_size=1, max_size=8, unique_by=lambda p: p[0])


def _db(tmp_path) -> tuple[JobStore, sqlite3.Connection]:
    return JobStore(tmp_path / "state.sqlite"), tracking.open_tracking(tmp_path / "state.sqlite")


def _job(store, tmp_path) -> str:
    job, _ = store.create("train", {"script_name": "t.py", "workers": 1, "launcher": "python"},
                          "ana", {}, "local", tmp_path / "jobs")
    return job.id


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.tuples(st.one_of(st.none(), SERIES), st.one_of(st.none(), SERIES)),
                     min_size=1, max_size=8),
       per_step=st.booleans(), agg=st.sampled_from(["last", "min", "max"]),
       spelled=st.booleans(), op=st.sampled_from(list(OPS)), cut=st.floats(0, 10),
       desc=st.booleans())
def test_metric_filters_and_sorts_agree_with_python(tmp_path_factory, runs, per_step, agg,
                                                    spelled, op, cut, desc):
    tmp = tmp_path_factory.mktemp("m")
    store, conn = _db(tmp)
    expect = {}
    for epochs, steps in runs:
        jid = _job(store, tmp)
        for epoch, value in epochs or []:  # stored out of order: the summary keeps up
            store.add_metrics(jid, epoch, {"loss": value})
        tracking.record_steps(conn, jid, [(s, {"loss": v}) for s, v in steps or []])
        pts = steps if per_step else epochs
        if pts:
            expect[jid] = AGGS[agg](pts)
    series = f"step:loss" if per_step else "loss"
    text = f"{agg}({series})" if spelled or agg != "last" else series
    q = RunQuery(metrics=[Filter.parse(f"{text}{op}{cut!r}", "metric filter")],
                 sort=Sort.parse(("" if desc else "-") + f"metric:{text}"), limit=1000)
    if not expect:
        with pytest.raises(BadQuery, match="no run (records|has recorded)"):
            run_list.list_runs(conn, q)
        return
    rows, total = run_list.list_runs(conn, q)
    want = {j for j, v in expect.items() if OPS[op](v, cut)}
    assert {r.id for r in rows} == want and total == len(want)
    shown = str(MetricRef.parse(text))
    got = [r.metrics[shown] for r in rows]
    assert got == pytest.approx([expect[r.id] for r in rows])
    assert got == sorted(got, reverse=desc)


def test_the_grammar_reads_back_canonically():
    for text, ref in [("loss", MetricRef("loss")), ("last(loss)", MetricRef("loss")),
                      ("step:loss", MetricRef("loss", True)),
                      ("min( step:val_loss )", MetricRef("val_loss", True, "min")),
                      ("max(benchmark.converted.b1.p50_ms)",
                       MetricRef("benchmark.converted.b1.p50_ms", False, "max"))]:
        assert MetricRef.parse(text) == ref
        assert MetricRef.parse(str(ref)) == ref


@pytest.mark.parametrize("text, says", [
    ("avg(loss)>1", "'avg' is not one of last, min, max"),
    ("min(loss>1", "is not NAME OP VALUE"),
    ("step:>1", "name the per-step series"),
    ("loss>high", "compares numbers"),
])
def test_bad_metric_filters_say_what_would_be_read(tmp_path, text, says):
    store, conn = _db(tmp_path)
    store.add_metrics(_job(store, tmp_path), 1, {"loss": 0.5})
    with pytest.raises(BadQuery, match=says.replace("(", r"\(").replace(")", r"\)")):
        run_list.list_runs(conn, RunQuery(metrics=[Filter.parse(text, "metric filter")]))


def test_an_unknown_metric_names_the_recorded_ones(tmp_path):
    store, conn = _db(tmp_path)
    jid = _job(store, tmp_path)
    store.add_metrics(jid, 1, {"loss": 0.5, "val_accuracy": 0.8})
    tracking.record_steps(conn, jid, [(10, {"batch_loss": 0.4})])
    with pytest.raises(BadQuery) as exc:
        run_list.list_runs(conn, RunQuery(metrics=[Filter.parse("val_acc>0.5")]))
    assert "'val_acc'" in str(exc.value) and "loss, val_accuracy" in str(exc.value)
    assert "step:NAME: batch_loss" in str(exc.value)
    with pytest.raises(BadQuery, match="recorded per step: write step:batch_loss"):
        run_list.list_runs(conn, RunQuery(sort=Sort.parse("metric:batch_loss")))
    with pytest.raises(BadQuery, match="recorded per epoch: write loss"):
        run_list.list_runs(conn, RunQuery(metrics=[Filter.parse("min(step:loss)<1")]))


def test_a_deleted_job_takes_its_step_summary(tmp_path):
    store, conn = _db(tmp_path)
    jid = _job(store, tmp_path)
    tracking.record_steps(conn, jid, [(10, {"loss": 0.4})])
    store.delete(jid)
    assert conn.execute("SELECT count(*) FROM run_step_summary").fetchone()[0] == 0
