"""What a job offers as its model is a loadable model (catalog/model_files.py): generated job
folders mixing real files TensorFlow wrote (TF checkpoints, weights-only .h5 files, full .h5
and .keras models, SavedModel folders) at any depth; the rule picks one of the loadable ones,
or none when there is none, and a later step is told why by name."""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from catalog.errors import InvalidInput
from catalog.inputs import Resolver
from catalog.model_files import loadable_format, pick_model
from catalog.outputs import FinishedJob, register_job_outputs
from catalog.store import open_db
from runners.jobfiles import collect_artifacts

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / ".venv-runner" / "bin" / "python"
pytestmark = pytest.mark.slow  # TensorFlow writes the files once (about 10 s)

# What TensorFlow writes, saved by itself (Keras 2, as the Horovod stack runs).
MAKE = """
import sys, tensorflow as tf
out = sys.argv[1]
m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
m.compile("adam", "mse")
m.save(f"{out}/full.keras"); m.save(f"{out}/full.h5")
m.save_weights(f"{out}/w.weights.h5"); m.save_weights(f"{out}/legacy_w.h5")
tf.saved_model.save(m, f"{out}/sm")
tf.train.Checkpoint(model=m).save(f"{out}/tfckpt/ckpt")
"""
# kind -> (files it copies, relative to the made folder; loadable?)
KINDS = {
    "keras": (["full.keras"], True),
    "h5": (["full.h5"], True),
    "savedmodel": (["sm"], True),
    "weights": (["w.weights.h5"], False),
    "legacy_weights": (["legacy_w.h5"], False),
    "tf_checkpoint": (["tfckpt/checkpoint", "tfckpt/ckpt-1.index",
                       "tfckpt/ckpt-1.data-00000-of-00001"], False),
    "junk_keras": ([], False),  # a .keras that is no zip
}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    if not RUNNER.exists():
        pytest.skip("no runner environment (make runner-env)")
    out = tmp_path_factory.mktemp("made")
    subprocess.run([str(RUNNER), "-c", MAKE, str(out)], check=True, capture_output=True,
                   timeout=300)
    return out


def place(made: Path, job: Path, kind: str, where: str, stem: str) -> Path:
    """Copy a real file of ``kind`` into ``job/where`` under a generated name."""
    folder = job / where if where else job
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "junk_keras":
        target = folder / f"{stem}.keras"
        target.write_bytes(b"not a zip")
        return target
    files, _ = KINDS[kind]
    if kind == "savedmodel":
        target = folder / stem
        shutil.copytree(made / "sm", target, dirs_exist_ok=True)
        return target
    if kind == "tf_checkpoint":
        for f in files:
            shutil.copy(made / f, folder / Path(f).name)
        return folder / "ckpt-1.index"
    src = made / files[0]
    suffix = ".weights.h5" if kind == "weights" else src.suffix
    target = folder / f"{stem}{suffix}"
    shutil.copy(src, target)
    return target


entries = st.lists(st.tuples(st.sampled_from(sorted(KINDS)),
                             st.sampled_from(["", "checkpoints", "out/deep", "ckpt-3"]),
                             st.sampled_from(["model", "ckpt-1", "best", "final_v2"])),
                   max_size=6)


def build(made: Path, job: Path, spec) -> set[str]:
    """The generated job folder; returns the paths of the loadable models in it."""
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir()
    placed: dict[str, str] = {}
    for kind, where, stem in spec:
        placed[str(place(made, job, kind, where, stem))] = kind  # a later copy overwrites
    return {p for p, kind in placed.items() if KINDS[kind][1]}


def listing(job: Path) -> list[dict]:
    """The job's artifacts as the engine lists them, named by kind (bot/pipeline_engine.py)."""
    return [{**a, "name": a["kind"], "path": str(job / a["path"])}
            for a in collect_artifacts(job)]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=entries)
def test_the_model_offered_is_loadable_or_none(made, tmp_path, spec):
    job = tmp_path / "job"
    truth = build(made, job, spec)
    chosen = pick_model(listing(job), ("onnx", "engine", "saved_model", "keras_model"))
    if not truth:
        assert chosen is None
        return
    assert chosen is not None and chosen["path"] in truth
    # A model saved at the folder's top beats one in a sub-folder (a full-model checkpoint).
    depth = min(len(Path(p).relative_to(job).parts) for p in truth)
    assert len(Path(chosen["path"]).relative_to(job).parts) == depth


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=entries)
def test_a_training_registers_a_loadable_model_or_nothing(made, tmp_path, spec):
    job = tmp_path / "job"
    truth = build(made, job, spec)
    conn = open_db(tmp_path / "state.db")
    job_id = f"j{abs(hash(str(spec))) % 10**9}"
    made_entries = register_job_outputs(
        conn, FinishedJob(job_id, "train", register="mnist"), listing(job))
    if not truth:
        assert made_entries == []
    else:
        [entry] = made_entries
        assert entry["artifact_uri"] in {str(Path(p).resolve()) for p in truth}
    conn.close()


def test_real_files_by_what_they_hold(made):
    assert loadable_format(made / "full.keras") == "keras"
    assert loadable_format(made / "full.h5") == "keras"
    assert loadable_format(made / "sm") == "savedmodel"
    for not_a_model in ("w.weights.h5", "legacy_w.h5", "tfckpt/ckpt-1.index", "tfckpt"):
        assert loadable_format(made / not_a_model) is None, not_a_model


def test_a_step_reading_the_model_of_a_training_without_one_is_told_why(tmp_path):
    conn: sqlite3.Connection = open_db(tmp_path / "state.db")
    resolver = Resolver(conn, {}, {"train": {"workdir": str(tmp_path)}})
    with pytest.raises(InvalidInput, match="step 'train' saved no loadable model"):
        resolver.value("steps.train.outputs.model")
