"""Catalog entries against a real SQLite state database: names, duplicates, filters,
dependants, artifacts, transactions."""
import json
import sqlite3

import pytest

from catalog import (components, datasets, environments, models, open_db, projects,
                     transfer)
from catalog.errors import Duplicate, HasDependants, InvalidInput, NotFound
from catalog.names import check_name, check_tags, split_ref


@pytest.fixture
def conn(tmp_path):
    c = open_db(tmp_path / "state.sqlite")
    yield c
    c.close()


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "data" / "train.csv"
    p.parent.mkdir()
    p.write_text("x,y\n1,2\n")
    return p


def saved_model(path):
    path.mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"pb")
    (path / "variables").mkdir()
    return path


def test_wal_mode_and_shared_state_file(conn):
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM catalog_meta").fetchone()[0] == "2"


@pytest.mark.parametrize("bad, words", [
    ("", "empty"), ("a b", "' '"), ("x" * 65, "limit is 64"), ("-lead", "start with"),
    ("model:1", "':'"), ("a/b", "'/'")])
def test_bad_names_are_refused_clearly(bad, words):
    with pytest.raises(InvalidInput, match=words):
        check_name(bad)


def test_tags_and_refs():
    assert check_tags(["Vision,nlp", "vision"]) == ["vision", "nlp"]
    with pytest.raises(InvalidInput):
        check_tags(["no spaces"])
    assert split_ref("m:3") == ("m", 3) and split_ref("m") == ("m", None)
    with pytest.raises(InvalidInput, match="positive number"):
        split_ref("m:x")


def test_dataset_registration_checks_uris(conn, data, tmp_path):
    d = datasets.add(conn, "train", str(data), "ann", tags=["tabular"])
    assert d["format"] == "csv" and d["size_bytes"] == data.stat().st_size
    with pytest.raises(Duplicate, match="already exists"):
        datasets.add(conn, "TRAIN", str(data), "bob")  # names are case-insensitive
    with pytest.raises(InvalidInput, match="does not exist"):
        datasets.add(conn, "gone", str(tmp_path / "nope"), "ann")
    with pytest.raises(InvalidInput, match="unsupported URI scheme"):
        datasets.add(conn, "web", "http://example.com/x", "ann")
    with pytest.raises(InvalidInput, match="not a valid pvc"):
        datasets.add(conn, "pv", "pvc://Bad_Claim/x", "ann")
    pv = datasets.add(conn, "imagenet", "pvc://datasets/imagenet/train", "ann",
                      format="tfrecord", size_bytes=10)
    assert datasets.get(conn, "imagenet")["mount"] == {"claim": "datasets",
                                                       "path": "/imagenet/train"}
    assert pv["size_bytes"] == 10
    datasets.add(conn, "s3data", "s3://my-bucket/key", "bob", format="parquet")
    assert [d["name"] for d in datasets.list_(conn, owner="ann")] == ["imagenet", "train"]
    assert [d["name"] for d in datasets.list_(conn, tag="tabular")] == ["train"]
    assert [d["name"] for d in datasets.list_(conn, search="image")] == ["imagenet"]
    assert [d["name"] for d in datasets.list_(conn, limit=1)] == ["s3data"]
    with pytest.raises(NotFound, match="no project"):
        datasets.list_(conn, project="nope")


def test_models_version_and_lineage(conn, tmp_path, data):
    datasets.add(conn, "train", str(data), "ann")
    sm = saved_model(tmp_path / "export" / "sm")
    m1 = models.add(conn, "cnn", "ann", str(sm), dataset="train", tf_version="2.15.1",
                    store_dir=tmp_path / "home" / "catalog" / "models", copy=True)
    m2 = models.add(conn, "cnn", "ann", str(sm), format="savedmodel")
    assert (m1["ref"], m1["format"], m2["ref"]) == ("cnn:1", "savedmodel", "cnn:2")
    assert m1["artifact_uri"].startswith(str(tmp_path / "home"))  # the catalog's copy
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"x")
    child = models.add(conn, "cnn-onnx", "ann", str(onnx), parent="cnn:1",
                       validation={"passed": True})
    assert child["parent"] == "cnn:1" and child["validation"] == {"passed": True}
    assert models.get(conn, "cnn")["version"] == 2
    assert models.get(conn, "cnn:1")["derived"] == ["cnn-onnx:1"]
    assert models.get(conn, "cnn:1")["dataset"] == "train"
    with pytest.raises(NotFound, match=r"versions: 1, 2"):
        models.get(conn, "cnn:7")
    with pytest.raises(InvalidInput, match="cannot tell the model format"):
        models.add(conn, "x", "ann", str(data))
    assert [m["ref"] for m in models.list_(conn, format="onnx")] == ["cnn-onnx:1"]


def test_deleting_a_model_removes_its_artifacts(conn, tmp_path):
    home = tmp_path / "home"
    outside = saved_model(tmp_path / "users" / "sm")
    m = models.add(conn, "cnn", "ann", str(outside), store_dir=home / "catalog" / "models",
                   copy=True)
    models.add(conn, "ref-only", "ann", str(outside))
    out = models.delete(conn, "cnn:1", store_dir=home / "catalog" / "models")
    assert out["artifacts_removed"] == [m["artifact_uri"]]
    assert not (home / "catalog" / "models" / "cnn").joinpath("1").exists()
    out = models.delete(conn, "ref-only", store_dir=home / "catalog" / "models")
    assert out["artifacts_kept"] == [str(outside)] and outside.exists()  # the user's files
    with pytest.raises(NotFound):
        models.get(conn, "cnn")


def test_model_used_by_running_work_is_not_deleted(conn, tmp_path):
    from catalog import entries
    m = models.add(conn, "cnn", "ann", str(saved_model(tmp_path / "sm")))
    entries.mark_use(conn, "model", m["id"], "job j-7")
    with pytest.raises(HasDependants) as info:
        models.delete(conn, "cnn")
    assert info.value.dependants == ["job j-7"] and "--force" in str(info.value)
    entries.release_uses(conn, "job j-7")
    models.delete(conn, "cnn")


def test_failed_copy_leaves_nothing(conn, tmp_path):
    sm = saved_model(tmp_path / "sm")
    store = tmp_path / "store"
    with pytest.raises(NotFound):  # the parent does not exist: checked inside the transaction
        models.add(conn, "cnn", "ann", str(sm), parent="ghost", store_dir=store, copy=True)
    assert conn.execute("SELECT COUNT(*) FROM catalog_models").fetchone()[0] == 0
    assert not (store / "cnn").exists() or not any((store / "cnn").rglob("*.pb"))


def test_environments_default_and_match(conn):
    environments.ensure_default(conn, "/opt/runner/bin/python")
    environments.ensure_default(conn, "/opt/runner/bin/python")  # idempotent
    assert environments.match(conn, tf="2.15", horovod=True)["name"] == "runner"
    environments.add(conn, "tf217-gpu", "ann", image="tensorflow/tensorflow:2.17.0-gpu",
                     tf_version="2.17.0")
    assert environments.match(conn, tf=">=2.16")["name"] == "tf217-gpu"
    with pytest.raises(NotFound, match="no environment has TensorFlow >=2.16, Horovod"):
        environments.match(conn, tf=">=2.16", horovod=True)
    with pytest.raises(InvalidInput, match="not a valid container image"):
        environments.add(conn, "bad", "ann", image="Not An Image")
    with pytest.raises(InvalidInput, match="not a version"):
        environments.add(conn, "bad", "ann", image="x/y:1", tf_version="latest")
    with pytest.raises(HasDependants, match="default environment"):
        environments.delete(conn, "runner")
    environments.set_default(conn, "tf217-gpu")  # the default for Kubernetes jobs
    assert environments.get(conn, "runner")["default"]  # local jobs keep theirs
    with pytest.raises(HasDependants, match="default environment"):
        environments.delete(conn, "runner")
    environments.delete(conn, "runner", force=True)


def test_components_are_versioned(conn):
    c1 = components.add(conn, "hvd-train", "train", "ann", params={"workers": 2})
    c2 = components.add(conn, "hvd-train", "train", "ann", params={"workers": 4})
    assert (c1["ref"], c2["ref"]) == ("hvd-train:1", "hvd-train:2")
    assert components.get(conn, "hvd-train:1")["params"] == {"workers": 2}
    with pytest.raises(InvalidInput, match="cannot change it to infer"):
        components.add(conn, "hvd-train", "infer", "ann")
    with pytest.raises(InvalidInput, match="unknown step kind"):
        components.add(conn, "x", "dance", "ann")


def test_projects_group_and_refuse_delete(conn, data):
    projects.add(conn, "vision", "ann", "image models")
    datasets.add(conn, "train", str(data), "ann", project="vision")
    projects.set_channel_default(conn, "C123", "vision")
    assert projects.channel_default(conn, "C123") == "vision"
    assert [d["name"] for d in datasets.list_(conn, project="vision")] == ["train"]
    with pytest.raises(HasDependants, match="dataset train"):
        projects.delete(conn, "vision")
    projects.delete(conn, "vision", force=True)
    assert datasets.get(conn, "train")["project"] is None
    assert projects.channel_default(conn, "C123") is None


def test_export_import_round_trip_and_all_or_nothing(tmp_path, data):
    a = open_db(tmp_path / "a.sqlite")
    environments.ensure_default(a, "/py")
    projects.add(a, "vision", "ann")
    datasets.add(a, "train", str(data), "ann", project="vision", tags=["t1"])
    sm = saved_model(tmp_path / "sm")
    models.add(a, "cnn", "ann", str(sm), dataset="train", project="vision")
    models.add(a, "cnn-onnx", "ann", str(data), format="onnx", parent="cnn")
    components.add(a, "c", "train", "ann", params={"epochs": 1})
    transfer.export_file(a, tmp_path / "backup.json")

    b = open_db(tmp_path / "b.sqlite")
    environments.ensure_default(b, "/other/py")
    counts = transfer.import_file(b, tmp_path / "backup.json")
    assert counts["models"] == 2 and counts["datasets"] == 1
    assert models.get(b, "cnn-onnx")["parent"] == "cnn:1"
    assert models.get(b, "cnn")["dataset"] == "train"
    assert datasets.get(b, "train")["tags"] == ["t1"]
    assert datasets.get(b, "train")["project"] == "vision"
    assert environments.get(b, "runner")["python"] == "/other/py"

    # Importing again clashes: refused, and nothing at all was added.
    before = b.execute("SELECT COUNT(*) FROM catalog_tags").fetchone()[0]
    with pytest.raises(Duplicate, match="nothing was imported"):
        transfer.import_file(b, tmp_path / "backup.json")
    assert b.execute("SELECT COUNT(*) FROM catalog_models").fetchone()[0] == 2
    assert b.execute("SELECT COUNT(*) FROM catalog_tags").fetchone()[0] == before

    c = open_db(tmp_path / "c.sqlite")
    doc = json.loads((tmp_path / "backup.json").read_text())
    doc["tables"]["catalog_models"][1]["bogus"] = 1  # a bad row late in the document
    with pytest.raises(InvalidInput, match="unknown columns bogus"):
        transfer.import_doc(c, doc)
    assert c.execute("SELECT COUNT(*) FROM catalog_datasets").fetchone()[0] == 0
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        transfer.import_file(c, tmp_path / "junk.json")
    with pytest.raises(InvalidInput, match="not a tfdesk catalog export"):
        transfer.import_doc(c, {"format": "other"})


def test_a_second_connection_sees_committed_work_only(tmp_path, data):
    path = tmp_path / "s.sqlite"
    a = open_db(path)
    b = sqlite3.connect(path)
    from catalog.store import transaction
    with pytest.raises(RuntimeError):
        with transaction(a):
            datasets.add(a, "train", str(data), "ann")  # nested: a savepoint
            raise RuntimeError("crash mid-way")
    assert b.execute("SELECT COUNT(*) FROM catalog_datasets").fetchone()[0] == 0
