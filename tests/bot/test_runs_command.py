"""`tfdesk runs` and `tfdesk runs compare` through the real command line, on a real state
database: filters, sorting, the comparison's text and its PNG."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from runners.store import JobStore


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDESK_HOME", str(tmp_path))
    monkeypatch.delenv("TFDESK_STATE", raising=False)
    store = JobStore(tmp_path / "state.sqlite")
    ids = []
    for i, lr in enumerate(["0.1", "0.01", "0.001"]):
        job, _ = store.create("train", {"script_name": "mnist.py", "workers": 2,
                                        "launcher": "horovod", "args": ["--lr", lr]},
                              "ana" if i else "bo", {}, "local", tmp_path / "jobs")
        for epoch in (1, 2, 3):
            store.add_metrics(job.id, epoch, {"loss": 1.0 / (epoch + i),
                                              "val_accuracy": 0.6 + 0.1 * i + 0.01 * epoch})
        ids.append(job.id)
    store.close()
    return tmp_path, ids


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_runs_filtered_and_sorted_by_metric(home, capsys):
    _, ids = home
    code, out, _ = _run(capsys, "runs", "--metric", "val_accuracy>0.7",
                        "--sort=-metric:val_accuracy", "--json")
    assert code == 0
    got = json.loads(out)
    assert [r["id"] for r in got["runs"]] == [ids[1], ids[2]]  # lowest first
    code, out, _ = _run(capsys, "runs", "--param", "lr=0.1", "--owner", "bo")
    assert code == 0 and ids[0] in out and ids[1] not in out
    # the lowest loss of each run is at its last epoch: 1/(3+i); min() < 0.3 keeps i = 1, 2
    code, out, _ = _run(capsys, "runs", "--metric", "min(loss)<0.3",
                        "--sort=metric:min(loss)")
    assert code == 0 and "min(loss)" in out.splitlines()[0]
    assert out.index(ids[1]) < out.index(ids[2]) and ids[0] not in out


def test_runs_compare_prints_differences_and_draws(home, capsys):
    tmp, ids = home
    chart = tmp / "cmp.png"
    code, out, _ = _run(capsys, "runs", "compare", ids[0], ids[2], "--chart", str(chart))
    assert code == 0, out
    assert "flag.lr" in out and "0.1" in out and "0.001" in out
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 5000


@pytest.mark.parametrize("argv, says", [
    (["runs", "--metric", "val_accuracy>high"], "compares numbers"),
    (["runs", "--sort", "banana"], "cannot sort"),
    (["runs", "compare", "j-00000000"], "two runs or more"),
    (["runs", "compare", "j-00000000", "j-11111111"], "no run j-00000000"),
    (["runs", "bogus"], "unknown runs action"),
    (["runs", "--metric", "avg(loss)>1"], "'avg' is not one of last, min, max"),
    (["runs", "--metric", "val_acc>0.5"], "no run records the metric 'val_acc'"),
    (["runs", "--sort", "metric:min(step:loss)"], "per step, as step:NAME: none"),
])
def test_bad_runs_requests_say_why(home, capsys, argv, says):
    code, out, err = _run(capsys, *argv)
    assert code != 0
    assert says in out + err
