"""--search through the FTS5 trigram index: substring meaning, any case, kept current by
triggers, combined with filters; and an older state database gains the index on open."""
import sqlite3

import pytest

from catalog import datasets, models, open_db, projects
from catalog.store import SCHEMA


@pytest.fixture
def conn(tmp_path):
    c = open_db(tmp_path / "state.sqlite")
    projects.add(c, "vision", "ann")
    for i, (name, desc) in enumerate([("resnet50", "ImageNet classifier"),
                                      ("bert-base", "text encoder, 100% fine-tuned"),
                                      ("resnet18", "small \"quoted\" net"),
                                      ("mobilenet", "edge model")]):
        uri = tmp_path / f"{name}.onnx"
        uri.write_bytes(b"onnx")
        models.add(c, name, "ann" if i % 2 == 0 else "bob", str(uri), description=desc,
                   project="vision" if i < 2 else None, tags=["cv"] if "net" in name else [])
    yield c
    c.close()


def names(rows):
    return [r["name"] for r in rows]


def test_search_is_a_substring_match_in_name_or_description_any_case(conn):
    assert names(models.list_(conn, search="resnet")) == ["resnet18", "resnet50"]
    assert names(models.list_(conn, search="IMAGENET")) == ["resnet50"]
    assert names(models.list_(conn, search="esne")) == ["resnet18", "resnet50"]  # mid-word
    assert names(models.list_(conn, search="100% fine")) == ["bert-base"]
    assert names(models.list_(conn, search='"quoted"')) == ["resnet18"]
    assert names(models.list_(conn, search="et")) == ["mobilenet", "resnet18", "resnet50"]
    assert models.list_(conn, search="nothing like it") == []


def test_search_combines_with_filters(conn):
    assert names(models.list_(conn, search="resnet", project="vision")) == ["resnet50"]
    assert names(models.list_(conn, search="net", owner="ann")) == ["resnet18", "resnet50"]
    assert names(models.list_(conn, search="net", tag="cv", owner="bob")) == ["mobilenet"]
    assert names(models.list_(conn, tag="cv", project="vision")) == ["resnet50"]


def test_the_index_follows_updates_and_deletes(conn):
    conn.execute("UPDATE catalog_models SET description = 'retrained' WHERE name = 'bert-base'")
    assert names(models.list_(conn, search="retrained")) == ["bert-base"]
    assert models.list_(conn, search="encoder") == []
    models.delete(conn, "resnet50", force=True)
    assert names(models.list_(conn, search="resnet")) == ["resnet18"]


def test_datasets_search_too(conn, tmp_path):
    datasets.add(conn, "cifar10", "s3://bucket-a/cifar", "ann", description="tiny images")
    assert names(datasets.list_(conn, search="TINY")) == ["cifar10"]


def test_a_version_1_database_gains_the_index_and_run_drivers(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    v1 = SCHEMA.replace(",\n    driver TEXT  -- the process driving the run (JSON pid/start/host): "
                        "a restart reconciles\n", "\n")
    assert "driver" not in v1
    old.executescript(v1)
    old.execute("INSERT INTO catalog_meta VALUES ('schema_version', '1')")
    old.execute("INSERT INTO catalog_datasets (name, uri, owner, description, created) "
                "VALUES ('legacy', 's3://x', 'ann', 'from before', 0)")
    old.commit()
    old.close()
    c = open_db(path)
    assert names(datasets.list_(c, search="before")) == ["legacy"]
    assert "driver" in [r[1] for r in c.execute("PRAGMA table_info(catalog_runs)")]
    assert c.execute("SELECT value FROM catalog_meta").fetchone()[0] == "2"
    c.close()
