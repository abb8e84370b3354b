"""A job's stored spec is typed end to end (runners/stored.py): generated specs of every kind
round-trip through the real job store unchanged; rows written by the code before typed specs
(tests/runners/data/legacy_job_rows.json, made by tfdesk b8d8b85's engine) still load, with
every value they held; a damaged or foreign row is refused with an error naming the job."""
from __future__ import annotations

import json
import sqlite3
import string
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from runners import stored
from runners.models import JobError
from runners.store import JobStore

DATA = Path(__file__).resolve().parent / "data" / "legacy_job_rows.json"

text = st.text(string.printable, max_size=12)
maybe = lambda s: st.none() | s  # noqa: E731
names = st.text(string.ascii_letters + "-_.", min_size=1, max_size=10)
paths = st.lists(names, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p))
json_leaf = st.none() | st.booleans() | st.integers(-10**6, 10**6) | text
json_values = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(names, c, max_size=3), max_leaves=6)
labels = st.builds(stored.Labels, *[maybe(names) for _ in fields(stored.Labels)])
runtimes = maybe(st.builds(stored.Runtime, *[maybe(text) for _ in fields(stored.Runtime)]))
common = dict(inputs=st.lists(paths, max_size=3).map(tuple),
              input_copies=st.dictionaries(paths, names, max_size=2), labels=labels,
              runtime=runtimes, runtime_why=text, tf_version=maybe(text),
              timeout=maybe(st.floats(0.5, 1e5)))
trains = st.builds(
    stored.StoredTrain, **common, script=names, script_name=text,
    workers=st.integers(1, 64), launcher=st.sampled_from(["python", "horovod", "tf-distribute"]),
    converted_to=maybe(names), conversion_report=text, script_sha256=text,
    epochs=maybe(st.integers(1, 100)), gpus_per_worker=st.integers(0, 8),
    args=st.lists(text, max_size=4).map(tuple), cpu=maybe(names), memory=maybe(names))
model_jobs = st.builds(
    stored.StoredModelJob, **common, kind=st.sampled_from(stored.MODEL_KINDS), id=names,
    mode=names, name=text, model=text, source=st.dictionaries(names, json_values, max_size=3),
    target=names, precision=names,
    tolerance=st.dictionaries(names, st.floats(0, 1), max_size=2),
    batches=st.lists(st.integers(1, 4096), max_size=3).map(tuple), input=maybe(text),
    calibration=maybe(text), signature=text, allow_code=st.booleans(),
    opset=maybe(st.integers(7, 20)), gpus=st.integers(0, 8), input_origin=maybe(paths),
    dim_default=st.integers(1, 64), threads=st.integers(0, 64),
    min_agreement=st.floats(0, 1), bench=st.dictionaries(names, json_values, max_size=2),
    kubernetes=st.dictionaries(names, json_values, max_size=2),
    trt_shapes=st.dictionaries(names, json_values, max_size=2), data=maybe(text),
    data_origin=maybe(paths), metrics=st.lists(names, max_size=3).map(tuple),
    label_key=maybe(names), output=maybe(text), eval_batch=st.integers(1, 1024),
    against=maybe(st.dictionaries(names, json_values, max_size=2)),
    against_origin=maybe(paths))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = JobStore(tmp_path_factory.mktemp("store") / "state.sqlite")
    yield s
    s.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trains | model_jobs)
def test_every_kind_round_trips_through_the_store_unchanged(store, spec):
    job, _ = store.create(spec.kind, spec, "ann", {}, "local", Path("/tmp/jobs"))
    back = store.get(job.id)
    assert back.spec == spec and type(back.spec) is type(spec)
    row = store._db().execute("SELECT spec FROM jobs WHERE id = ?", (job.id,)).fetchone()[0]
    assert json.loads(row)["v"] == stored.VERSION and json.loads(row)["kind"] == spec.kind


def _insert(store: JobStore, job_id: str, kind: str, spec_text: str) -> None:
    store._db().execute("INSERT INTO jobs (id, kind, spec, owner, reply_to, backend, state, "
                        "created_at) VALUES (?,?,?,?,?,?,?,?)",
                        (job_id, kind, spec_text, "ann", "{}", "local", "queued", 0.0))


def test_rows_written_before_typed_specs_still_load(tmp_path):
    rows = json.loads(DATA.read_text())["rows"]
    assert sorted({r["kind"] for r in rows}) == ["convert-model", "evaluate", "infer", "train"]
    store = JobStore(tmp_path / "state.sqlite")
    for r in rows:
        _insert(store, r["id"], r["kind"], r["spec"])
    for r in rows:
        old, spec = json.loads(r["spec"]), store.get(r["id"]).spec
        assert spec.kind == r["kind"]
        # every value the old row held is there, under the same name
        for key, value in old.items():
            if key == "labels":
                assert {k: v for k, v in stored.dump(spec)["labels"].items() if v} == value
            else:
                assert stored.dump(spec)[key] == value, key
        # and written again it is a current row that reads back the same
        store._db().execute("UPDATE jobs SET spec = ? WHERE id = ?",
                            (stored.dumps(spec), r["id"]))
        assert store.get(r["id"]).spec == spec
    train = store.get(rows[0]["id"]).spec
    assert (train.labels.pipeline_run, train.labels.register, train.args) == \
        ("r-1", "mnist", ("--lr", "0.1"))
    assert train.runtime.name == "runner" and train.inputs == ("/tmp/specs/work/data",)
    evaluate = next(store.get(r["id"]).spec for r in rows if r["kind"] == "evaluate")
    assert evaluate.metrics == ("accuracy",) and evaluate.worker_spec()["data"].endswith(".npz")


def test_an_old_row_with_context_at_top_level_keeps_it_as_labels(tmp_path):
    store = JobStore(tmp_path / "state.sqlite")
    _insert(store, "j-00000001", "train", json.dumps({"workers": 2, "project": "vision",
                                                      "retired_key": 1}))
    spec = store.get("j-00000001").spec
    assert spec.workers == 2 and spec.labels.project == "vision"


@pytest.mark.parametrize("row, why", [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
    ('{"v": 2, "kind": "train", "workers": "two"}', "workers"),
    ('{"v": 2, "kind": "train", "surprise": 1}', "surprise"),
    ('{"v": 2, "kind": "infer"}', "for a 'infer' job, but the job is 'train'"),
    ('{"v": 99, "kind": "train"}', "format version 99"),
    ('{"workers": "many"}', "workers"),
])
def test_a_damaged_row_is_refused_naming_the_job(tmp_path, row, why):
    store = JobStore(tmp_path / "state.sqlite")
    _insert(store, "j-0badc0de", "train", row)
    with pytest.raises(stored.UnreadableSpec) as info:
        store.get("j-0badc0de")
    assert str(info.value).startswith("job j-0badc0de: ") and why in str(info.value)
    assert isinstance(info.value, JobError)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["train", *stored.MODEL_KINDS]),
       st.dictionaries(st.sampled_from(["v", "kind", "workers", "labels", "runtime", "inputs",
                                        "batches", "source", "args", "x"]), json_values)
       | text.map(lambda t: t))
def test_any_row_loads_valid_or_is_refused_clearly(kind, data):
    raw = data if isinstance(data, str) else json.dumps(data)
    try:
        spec = stored.load(kind, raw, "j-1")
    except stored.UnreadableSpec as exc:
        assert str(exc).startswith("job j-1: ")
        return
    assert spec.kind == kind and stored.load(kind, stored.dumps(spec)) == spec


def test_the_store_keeps_only_typed_specs_of_the_jobs_kind(tmp_path):
    store = JobStore(tmp_path / "state.sqlite")
    with pytest.raises(JobError, match="a train spec cannot be stored for a infer job"):
        store.create("infer", stored.StoredTrain(), "ann", {}, "local", tmp_path)
    with pytest.raises(stored.UnreadableSpec, match="workers"):
        store.create("train", {"workers": "x"}, "ann", {}, "local", tmp_path)
    assert store._db().execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    assert sqlite3.sqlite_version


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.sets(st.integers(0, 5), max_size=6))
def test_a_damaged_row_never_hides_the_others_and_can_be_deleted(tmp_path_factory, bad):
    """Any of six jobs damaged: the list keeps the readable ones in order, names each
    damaged one with why, and the engine deletes a damaged one like any other."""
    from tests.jobs_helpers import make_engine
    home = tmp_path_factory.mktemp("home")
    engine = make_engine(home, start=False)
    ids = []
    for i in range(6):
        job, _ = engine.store.create("train", stored.StoredTrain(), "ann", {}, "local",
                                     home / "jobs" / f"w{i}")
        ids.append(job.id)
    db = engine.store._db()
    db.execute("UPDATE jobs SET state = 'succeeded'")
    for i in bad:
        db.execute("UPDATE jobs SET spec = ? WHERE id = ?", ('{"v": 2, "kind": "train", "x": 1}',
                                                            ids[i]))
    skipped: list = []
    listed = [j.id for j in engine.list(skipped=skipped)]
    assert listed == [ids[i] for i in range(6) if i not in bad]
    assert [s[0] for s in skipped] == [ids[i] for i in sorted(bad)]
    assert all(why.startswith(f"job {i}: ") and "x" in why for i, why in skipped)
    for i in bad:
        engine.delete(ids[i])
    skipped.clear()
    assert [j.id for j in engine.list(skipped=skipped)] == listed and skipped == []
