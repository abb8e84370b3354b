"""A training job's artifacts: what it made in its folder, not the tools' caches; a model saved
outside the folder fails the job (its sandbox); a job that saved no model says so."""
from __future__ import annotations

from pathlib import Path

import pytest
from tests.jobs_helpers import make_engine, write

from runners.local import paths
from runners.saves import save_targets

SAVES = """
import os
os.makedirs(".horovod", exist_ok=True)
open(".horovod/cache.bin", "wb").write(b"cache")
os.makedirs(".keras", exist_ok=True)
open(".keras/keras.json", "w").write("{{}}")
open("history.csv", "w").write("epoch,loss\\n0,1.0\\n")

class Model:
    def save(self, path):
        open(path, "w").write("weights")

model = Model()
model.save({target!r})
"""


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_tool_caches_are_not_artifacts_and_nothing_is_saved_outside(home, tmp_path):
    """The job folder is the only place a job may write (its sandbox): a model saved
    elsewhere fails the job with the reason, and nothing outside is listed or made."""
    inside = write(tmp_path / "inside.py", SAVES.format(target="model.keras"))
    outside = tmp_path / "elsewhere" / "model.keras"
    outside.parent.mkdir()
    escaping = write(tmp_path / "train.py", SAVES.format(target=str(outside)))
    eng = make_engine(home)
    try:
        job = eng.wait(eng.submit("train", {"script_path": str(inside)}).id, 30)
        assert job.state == "succeeded", job.reason
        arts = {a["path"]: a for a in eng.artifacts(job.id)}
        assert sorted(arts) == ["history.csv", "model.keras"], arts
        assert arts["history.csv"]["kind"] == "metrics" and arts["model.keras"]["kind"] == "model"
        job = eng.wait(eng.submit("train", {"script_path": str(escaping)}).id, 30)
        assert job.state == "failed" and "FileNotFoundError" in job.reason, job.reason
        assert not outside.exists()
        assert all(not a["path"].startswith("/") for a in eng.artifacts(job.id))
        records = paths(Path(job.workdir))["records"]
        assert (records / "job.log").is_file() and not (Path(job.workdir) / "job.log").exists()
        eng.delete(job.id)  # the job's folder and tfdesk's record of it both go
        assert not Path(job.workdir).exists() and not records.exists()
    finally:
        eng.close()


def test_a_job_that_saved_no_model_says_so(home, tmp_path, monkeypatch):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    script = write(tmp_path / "train.py", "print('trained, saved nothing')\n")
    monkeypatch.setenv("TFDESK_HOME", str(home))
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{__import__("sys").executable}"\n')
    ctx = Context(load_config())
    try:
        _, reply = run_line(ctx, f"train {script} --wait")
        assert reply.ok, reply.text
        assert "no saved model found" in reply.text
    finally:
        ctx.services.close()


def test_save_targets_read_from_the_code():
    src = """
import tensorflow as tf
model.save("/data/m.keras")
tf.saved_model.save(model, "/data/sm")
model.save(os.path.join(out, "m.keras"))
cb = tf.keras.callbacks.ModelCheckpoint(filepath="ckpt/{epoch}.keras")
np.save("/data/x.npy", arr)
"""
    assert save_targets(src) == [{"line": 3, "path": "/data/m.keras"},
                                 {"line": 4, "path": "/data/sm"},
                                 {"line": 5, "path": None},
                                 {"line": 6, "path": "ckpt/{epoch}.keras"}]
