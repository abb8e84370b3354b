"""End to end on the local backend, nothing stood in: a registered dataset, a pipeline in YAML,
a single-process Keras script converted to Horovod, trained by horovodrun (gloo) with two
workers in the runner environment, the SavedModel converted to ONNX (validated, benchmarked),
the ONNX model benchmarked by an infer job; every output registered and linked to its job and
run. Driven through the `pipeline run` command, so the real engine adapter is what runs."""
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line

REPO = Path(__file__).resolve().parents[2]
RUNNER = Path(os.environ.get("TFDESK_RUNNER_PYTHON") or REPO / ".venv-runner" / "bin" / "python")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not RUNNER.exists() or not (RUNNER.parent / "horovodrun").exists(),
                                 reason="the runner environment (make runner-env) is not built")]

# A plain single-process Keras script, the kind people bring: the converter makes it Horovod.
TRAIN_SCRIPT = textwrap.dedent("""\
    import os
    import sys

    import numpy as np
    import tensorflow as tf

    data = np.load(sys.argv[1])
    x, y = data["x"].astype("float32"), data["y"].astype("int64")
    out = os.path.join(os.environ.get("TFDESK_WORKDIR", "."), "saved_model")
    epochs = int(os.environ.get("TFDESK_EPOCHS", "1"))

    model = tf.keras.Sequential([
        tf.keras.layers.Input(shape=(8,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(3),
    ])
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    model.compile(optimizer=optimizer,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=2)
    model.save(out)
""")

PIPELINE = """\
name: toy-hvd
description: convert to Horovod, train on two workers, convert to ONNX, benchmark
project: vision
params: {{epochs: 2}}
steps:
  - name: convert
    kind: convert-script
    with: {{script: "{script}", target: horovod}}
  - name: train
    kind: train
    register: toy-mlp
    with:
      script: ${{steps.convert.outputs.script}}
      args: ["${{datasets.toy}}"]
      dataset: toy
      workers: 2
      epochs: ${{params.epochs}}
      timeout: 300
  - name: to-onnx
    kind: convert-model
    with:
      model: ${{steps.train.outputs.model}}
      target: onnx
      batch: [1, 4]
      bench: {{warmup: 1, iterations: 5, budget_s: 1}}
  - name: bench
    kind: infer
    with:
      model: ${{steps.to-onnx.outputs.model}}
      batch: [1, 4]
      bench: {{warmup: 1, iterations: 5, budget_s: 1}}
"""


@pytest.fixture
def ctx(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{RUNNER}"\n'
                                      '[jobs]\nlocal_workers = 2\ngrace_s = 2\n')
    c = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    yield c
    c.services.close()


def run(ctx, line):
    _command, reply = run_line(ctx, line)
    return reply


def test_pipeline_trains_with_horovod_converts_to_onnx_and_registers_everything(ctx, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    np.savez(tmp_path / "toy.npz", x=x, y=(x[:, 0] > 0).astype("int64") + (x[:, 1] > 1))
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    (tmp_path / "pipeline.yaml").write_text(PIPELINE.format(script=script))

    assert run(ctx, "projects add vision").ok
    assert run(ctx, f"datasets add toy {tmp_path / 'toy.npz'} --format npz -p vision").ok
    r = run(ctx, f"pipelines add - {tmp_path / 'pipeline.yaml'}")
    assert r.ok, r.text

    r = run(ctx, "pipeline run toy-hvd --json")
    st = r.data["run"]
    assert r.ok and st["state"] == "succeeded", r.text
    steps = {s["name"]: s for s in st["steps"]}
    assert [s["state"] for s in st["steps"]] == ["succeeded"] * 4
    assert steps["convert"]["job_id"].startswith("inline-")

    engine = ctx.services.engine
    jobs = {name: engine.get(steps[name]["job_id"]) for name in ("train", "to-onnx", "bench")}
    # The converted script really ran under horovodrun with two workers.
    train = jobs["train"]
    assert (train.state, train.spec.launcher, train.spec.workers) == \
        ("succeeded", "horovod", 2)
    converted = Path(steps["convert"]["outputs"]["script"]).read_text()
    assert "hvd.DistributedOptimizer" in converted and "if hvd.rank() == 0:" in converted
    assert [m["epoch"] for m in engine.metrics(train.id)][-1] == 2
    for name, job in jobs.items():
        assert job.state == "succeeded", (name, job.reason)
        assert job.spec.labels.pipeline_run == st["id"]
        assert job.spec.labels.step == name

    # Every output registered, linked to its job and run (and to its dataset / parent).
    from catalog import models, open_db
    conn = open_db(ctx.config.state_path)
    trained = models.get(conn, "toy-mlp:1")
    assert trained["format"] == "savedmodel"
    assert (trained["job_id"], trained["run_id"]) == (train.id, st["id"])
    assert (trained["dataset"], trained["project"]) == ("toy", "vision")
    assert trained["tf_version"].startswith("2.15")
    assert Path(trained["artifact_uri"], "saved_model.pb").is_file()
    assert steps["train"]["outputs"]["model"] == trained["artifact_uri"]

    onnx = models.get(conn, "toy-mlp-onnx:1")
    assert onnx["format"] == "onnx" and onnx["parent"] == "toy-mlp:1"
    assert (onnx["job_id"], onnx["run_id"]) == (jobs["to-onnx"].id, st["id"])
    assert onnx["validation"]["passed"] is True
    assert onnx["artifact_uri"] == steps["to-onnx"]["outputs"]["model"]
    assert onnx["artifact_uri"].endswith(".onnx") and Path(onnx["artifact_uri"]).is_file()
    # The infer step's benchmark is attached to the model it measured.
    bench = onnx["benchmark"]
    assert [b["batch"] for b in bench["original"]] == [1, 4]
    assert all(b["iterations"] >= 5 for b in bench["original"])
    assert trained["derived"] == ["toy-mlp-onnx:1"]
    assert sorted(st["models"]) == ["toy-mlp-onnx:1", "toy-mlp:1"]
    # Nothing was registered twice (the engine's subscriber and the run both register).
    assert conn.execute("SELECT COUNT(*) FROM catalog_models").fetchone()[0] == 2
    # Uses held by the run and its jobs are released once it is over.
    assert conn.execute("SELECT COUNT(*) FROM catalog_uses").fetchone()[0] == 0
    conn.close()

    r = run(ctx, f"pipeline status {st['id']}")
    assert r.ok and "toy-mlp-onnx:1" in r.text and r.text.count(" ok  ") == 4
