"""evaluate: metrics and labelled-data reading (numpy only, fast), then the real thing in the
runner: a tiny dense classifier scored against its ONNX conversion, side by side."""
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from converters.model import labelled, metrics
from converters.model.errors import BadInput, BadOption
from runners.model_run import run_model_job

REPO = Path(__file__).resolve().parents[2]
RUNNER = os.environ.get("TFDESK_RUNNER_PYTHON") or str(REPO / ".venv-runner" / "bin" / "python")
DENSE = [{"name": "features", "dtype": "float32", "shape": [None, 16]}]


# -- metrics ----------------------------------------------------------------------------------
def test_metric_names_parse_with_aliases_and_unknown_ones_are_named():
    assert metrics.parse("accuracy, top-5,MAE,mean_squared_error,top1") == [
        "accuracy", "top5", "mae", "mse"]
    assert metrics.parse(None) == []
    with pytest.raises(BadOption, match=r"unknown metric 'f1'.*accuracy.*top5"):
        metrics.parse("accuracy,f1")


def test_classification_metrics_are_right():
    pred = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    labels = np.array([1, 1, 2, 2])
    got = metrics.compute(["accuracy", "top2"], pred, labels, "t")
    assert got == {"accuracy": 0.5, "top2": 0.75}
    one_hot = np.eye(3)[labels]
    assert metrics.compute(["accuracy"], pred, one_hot, "t") == {"accuracy": 0.5}
    # a single score: probabilities cut at 0.5, logits at 0
    assert metrics.compute(["accuracy"], np.array([[0.9], [0.2]]), np.array([1, 1]), "t") == \
        {"accuracy": 0.5}
    assert metrics.compute(["accuracy"], np.array([3.0, -1.0]), np.array([1, 0]), "t") == \
        {"accuracy": 1.0}
    assert metrics.default_metrics(np.zeros((2, 10))) == ["accuracy", "top5"]
    assert metrics.default_metrics(np.zeros((2, 1))) == ["mae", "mse"]


def test_regression_metrics_and_agreement():
    pred, y = np.array([[1.0], [2.0], [4.0]]), np.array([1.0, 3.0, 2.0])
    got = metrics.compute(["mae", "mse", "rmse"], pred, y, "t")
    assert got["mae"] == pytest.approx(1.0) and got["mse"] == pytest.approx(5 / 3)
    assert got["rmse"] == pytest.approx(np.sqrt(5 / 3))
    a = np.array([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5001]])
    b = a + np.array([[0, 0], [0, 0], [0.001, -0.001]])
    agree = metrics.agreement(a, b)
    assert agree["agreement"] == pytest.approx(2 / 3) and agree["disagreeing_rows"] == 1
    assert agree["max_abs_diff"] == pytest.approx(0.001)


def test_labels_that_do_not_fit_the_output_are_explained():
    pred = np.zeros((3, 4))
    with pytest.raises(BadInput, match=r"label 7 is not a class.*4 classes"):
        metrics.compute(["accuracy"], pred, np.array([0, 1, 7]), "d.npz")
    with pytest.raises(BadInput, match="not whole numbers"):
        metrics.compute(["accuracy"], pred, np.array([0.5, 1, 2]), "d.npz")
    with pytest.raises(BadInput, match=r"labels have shape \[3\].*predictions have shape \[3, 4\]"):
        metrics.compute(["mae"], pred, np.array([0, 1, 2]), "d.npz")
    with pytest.raises(BadInput, match="top5 needs class scores"):
        metrics.compute(["top5"], np.zeros((3, 1)), np.array([0, 1, 1]), "d.npz")


# -- labelled data ----------------------------------------------------------------------------
def test_npz_with_label_key_found_or_given(tmp_path):
    x = np.arange(32, dtype="float64").reshape(2, 16)
    np.savez(tmp_path / "d.npz", features=x, label=np.array([3, 4]))
    feeds, labels = labelled.load(tmp_path / "d.npz", DENSE)
    assert feeds["features"].dtype == np.float32 and labels.tolist() == [3, 4]
    np.savez(tmp_path / "e.npz", x=x, klass=np.array([3, 4]))   # one input under another name
    feeds, labels = labelled.load(tmp_path / "e.npz", DENSE, "klass")
    assert feeds["features"].shape == (2, 16)
    with pytest.raises(BadInput, match=r"no labels: name them one of label.*'klass', 'x'"):
        labelled.load(tmp_path / "e.npz", DENSE)


def test_csv_rows_become_the_input_shape(tmp_path):
    header = ",".join([f"f{i}" for i in range(16)] + ["label"])
    rows = [",".join([str(i + j) for j in range(16)] + [str(i % 10)]) for i in range(5)]
    (tmp_path / "d.csv").write_text(header + "\n" + "\n".join(rows) + "\n\n")
    feeds, labels = labelled.load(tmp_path / "d.csv", DENSE)
    assert feeds["features"].shape == (5, 16) and feeds["features"][2, 3] == 5
    assert labels.dtype == np.int64 and labels.tolist() == [0, 1, 2, 3, 4]
    image = [{"name": "image", "dtype": "float32", "shape": [None, 4, 4, 1]}]
    assert labelled.load(tmp_path / "d.csv", image)[0]["image"].shape == (5, 4, 4, 1)


def test_csv_with_several_inputs_by_column_prefix(tmp_path):
    inputs = [{"name": "numeric", "dtype": "float32", "shape": [None, 2]},
              {"name": "ids", "dtype": "int32", "shape": [None, 3]}]
    (tmp_path / "d.csv").write_text("numeric.0,numeric.1,ids_0,ids_1,ids_2,y\n"
                                    "0.5,1.5,1,2,3,0.25\n")
    feeds, labels = labelled.load(tmp_path / "d.csv", inputs)
    assert feeds["ids"].tolist() == [[1, 2, 3]] and feeds["ids"].dtype == np.int32
    assert labels.tolist() == [0.25]


@pytest.mark.parametrize("name, content, message", [
    ("d.csv", "f0,f1\n1,2\n", r"no labels"),
    ("d.csv", "a,label\n1,2\n", r"1 values per row, the model expects 16"),
    ("d.csv", ",".join(f"f{i}" for i in range(16)) + ",label\n" + "1," * 16 + "x\n",
     r"d.csv line 2, column 'label': 'x' is not a number"),
    ("d.csv", "a,b,label\n1,2\n", r"line 2: 2 fields, the header has 3"),
    ("d.csv", "a,label\n", r"at least one data row"),
    ("d.npz", b"not a zip", r"not a readable .npz"),
    ("d.tfrecord", b"", r"missing or empty"),
    ("d.parquet", b"x", r"unknown format.*\.npz.*\.csv.*\.tfrecord"),
])
def test_unreadable_data_is_explained(tmp_path, name, content, message):
    p = tmp_path / name
    (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
    with pytest.raises(BadInput, match=message):
        labelled.load(p, DENSE)


def test_label_count_and_input_shape_mismatch(tmp_path):
    np.savez(tmp_path / "d.npz", features=np.zeros((4, 16)), label=np.zeros(3))
    with pytest.raises(BadInput, match=r"3 labels but the inputs have \{'features': 4\} rows"):
        labelled.load(tmp_path / "d.npz", DENSE)
    np.savez(tmp_path / "e.npz", features=np.zeros((4, 8)), label=np.zeros(4))
    with pytest.raises(BadInput, match=r"has shape \[4, 8\], the model expects \['\?', 16\]"):
        labelled.load(tmp_path / "e.npz", DENSE)


def test_unknown_metric_answers_before_any_job(tmp_path):
    # The names must pass the file gate first (it runs before every handler): real files,
    # outside tfdesk's own folder.
    home, model, data = tmp_path / "home", tmp_path / "m", tmp_path / "x.npz"
    model.mkdir()
    np.savez(data, features=np.zeros((2, 16)), label=np.zeros(2))
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, ["evaluate", str(model), "--data", str(data), "--metrics", "f1"])
    assert not reply.ok and "unknown metric 'f1'" in reply.text, reply.text
    assert not (home / "jobs").exists() or not any((home / "jobs").iterdir())


# -- end to end, real TensorFlow and ONNX Runtime ---------------------------------------------
@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The tiny dense classifier, converted to ONNX by a real convert-model job through the
    engine (whose subscriber registers it in the catalog)."""
    root = tmp_path_factory.mktemp("evaluate")
    proc = subprocess.run([RUNNER, str(REPO / "tests" / "model_zoo.py"), str(root / "zoo"),
                           "dense"], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    home = root / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text("[models]\niterations = 3\nwarmup = 1\nbudget_s = 0.5\n"
                                      f"[runner]\npython = \"{RUNNER}\"\n")
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    # From the .keras file: the job also leaves the exported SavedModel among its artifacts,
    # which the catalog must not mistake for the converted model.
    _, reply = run_line(ctx, ["convert-model", str(root / "zoo" / "dense.keras"), "--batch", "1"])
    assert reply.ok, reply.text
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 16)).astype("float32")
    y = rng.integers(0, 10, 40)
    return {"ctx": ctx, "root": root, "model": root / "zoo" / "dense", "report": reply.data,
            "onnx": Path(reply.data["workdir"]) / "out" / "model.optimized.onnx", "x": x, "y": y}


def _evaluate(c, *argv):
    _, reply = run_line(c["ctx"], ["evaluate", *map(str, argv)])
    return reply


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_convert_model_job_registers_its_onnx_model_in_the_catalog(converted):
    from catalog import models, open_db
    job_id = converted["report"]["job"]["id"]
    _, job = run_line(converted["ctx"], ["job", job_id, "--json"])
    names = {a["path"]: a.get("name") for a in job.data["artifacts"]}
    assert names["out/model.optimized.onnx"] == "onnx" and names["out/model.onnx"] == "onnx_source"
    assert names["saved_model"] == "saved_model"
    conn = open_db(converted["ctx"].config.state_path)
    # The engine's subscribers run on its event thread, after the job's state is stored.
    deadline = time.monotonic() + 30
    while True:
        rows = conn.execute("SELECT name, version FROM catalog_models WHERE job_id = ?",
                            (job_id,)).fetchall()
        if rows or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(rows) == 1
    entry = models.get(conn, f"{rows[0]['name']}:{rows[0]['version']}")
    assert entry["format"] == "onnx" and entry["job_id"] == job_id
    assert entry["artifact_uri"] == str(converted["onnx"])
    assert entry["validation"]["passed"] and "probs" in entry["validation"]["outputs"]
    assert [r["batch"] for r in entry["benchmark"]["speedups"]] == [1]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_original_and_onnx_side_by_side_on_npz(converted, tmp_path):
    np.savez(tmp_path / "test.npz", features=converted["x"], label=converted["y"])
    reply = _evaluate(converted, converted["model"], "--data", tmp_path / "test.npz",
                      "--against", converted["onnx"], "--metrics", "accuracy,top3,agreement")
    assert reply.ok, reply.text
    ev = reply.data["evaluation"]
    assert ev["data"] == {"file": "test.npz", "format": "npz", "rows": 40}
    assert ev["output"] == "probs" and ev["task"] == "classification"
    orig, conv = ev["models"]
    assert (orig["backend"], conv["backend"]) == ("tensorflow", "onnxruntime")
    # the metric is what the predictions say, and the ONNX model scores the same
    preds = np.load(Path(reply.data["workdir"]) / "predictions.npz")
    assert preds["original"].shape == (40, 10)
    expected = float(np.mean(preds["original"].argmax(1) == converted["y"]))
    assert orig["metrics"]["accuracy"] == pytest.approx(expected)
    assert conv["metrics"] == pytest.approx(orig["metrics"], abs=1e-9)
    assert ev["agreement"]["agreement"] == 1.0 and ev["agreement"]["max_abs_diff"] < 1e-4
    assert "Agreement: 100.00%" in reply.text and "top3" in reply.text
    assert any(p.name == "report.json" for p in reply.files)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_csv_and_tfrecord_give_the_same_scores(converted, tmp_path):
    x, y = converted["x"], converted["y"]
    header = ",".join([f"f{i}" for i in range(16)] + ["label"])
    lines = [",".join([repr(float(v)) for v in row] + [str(int(t))]) for row, t in zip(x, y)]
    (tmp_path / "test.csv").write_text(header + "\n" + "\n".join(lines) + "\n")
    np.savez(tmp_path / "src.npz", x=x, y=y)
    code = ("import sys, numpy as np, tensorflow as tf\n"
            "d = np.load(sys.argv[1])\n"
            "with tf.io.TFRecordWriter(sys.argv[2]) as w:\n"
            "    for xi, yi in zip(d['x'], d['y']):\n"
            "        f = {'features': tf.train.Feature(float_list=tf.train.FloatList(value=xi)),\n"
            "             'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[yi]))}\n"
            "        w.write(tf.train.Example(features=tf.train.Features(feature=f))"
            ".SerializeToString())\n")
    proc = subprocess.run([RUNNER, "-c", code, str(tmp_path / "src.npz"),
                           str(tmp_path / "test.tfrecord")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reply = _evaluate(converted, converted["onnx"], "--data", tmp_path / "test.csv")
    assert reply.ok, reply.text
    csv_ev = reply.data["evaluation"]
    assert csv_ev["data"]["rows"] == 40 and csv_ev["metrics"] == ["accuracy", "top5"]
    assert "agreement" not in csv_ev and csv_ev["models"][0]["backend"] == "onnxruntime"
    # TFRecord through a job run to its end from a script (runners/model_run.py)
    job, report = run_model_job("evaluate", {"model": str(converted["onnx"]),
                                             "data": str(tmp_path / "test.tfrecord"),
                                             "metrics": "acc,top-5"}, RUNNER,
                                home=tmp_path / "home")
    assert job.spec.data == "inputs/test.tfrecord" and job.spec.source["kind"] == "onnx"
    assert report["status"] == "succeeded", report
    tf_ev = report["evaluation"]
    assert tf_ev["data"] == {"file": "test.tfrecord", "format": "tfrecord", "rows": 40}
    assert tf_ev["models"][0]["metrics"] == pytest.approx(csv_ev["models"][0]["metrics"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_data_errors_come_back_clearly(converted, tmp_path):
    np.savez(tmp_path / "narrow.npz", features=np.zeros((4, 8), "float32"), label=np.zeros(4))
    reply = _evaluate(converted, converted["model"], "--data", tmp_path / "narrow.npz")
    assert not reply.ok and "narrow.npz: input 'features' has shape [4, 8], the model expects " \
        "['?', 16]" in reply.text, reply.text
    np.savez(tmp_path / "big.npz", features=np.zeros((4, 16), "float32"), label=np.full(4, 12))
    reply = _evaluate(converted, converted["model"], "--data", tmp_path / "big.npz")
    assert not reply.ok and "label 12 is not a class" in reply.text
    reply = _evaluate(converted, converted["model"], "--data", tmp_path / "missing.csv")
    assert not reply.ok and "no such file" in reply.text and "missing.csv" in reply.text
