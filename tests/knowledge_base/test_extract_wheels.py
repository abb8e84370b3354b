"""Finding, checking and (re)using release wheels; errors name the offending file."""
from __future__ import annotations

import zipfile

import pytest

from knowledge_base.errors import WheelError
from knowledge_base.extract import extract_release
from knowledge_base.wheels import (download_release_wheels, find_release_wheels,
                                   parse_index_versions)
from tests.wheelfactory import api_file, make_estimator_wheel, make_keras_wheel, make_tf_wheel, make_wheel


def _tf(tmp_path, version, dist="tensorflow_cpu"):
    root = api_file([("tensorflow.python.ops.nn_ops", "relu")], package="tensorflow")
    return make_tf_wheel(tmp_path, version, {"": root, "nn": api_file([], package="x")},
                         {"tensorflow.python.ops.nn_ops": "def relu(x):\n    pass\n"}, dist=dist)


def test_find_newest_patch_of_either_distribution(tmp_path):
    _tf(tmp_path, "2.9.1")
    newest = _tf(tmp_path, "2.9.3", dist="tensorflow")
    _tf(tmp_path, "2.10.0")
    make_keras_wheel(tmp_path, "2.9.0", {"": ""})
    make_keras_wheel(tmp_path, "2.10.0", {"": ""})
    make_estimator_wheel(tmp_path, "2.9.0", {"": ""})
    w = find_release_wheels("2.9", tmp_path)
    assert w.tf == newest and w.version == "2.9"
    assert w.keras.name.startswith("keras-2.9.0") and w.estimator.name.startswith(
        "tensorflow_estimator-2.9.0")
    # 2.2-2.5 have no keras wheel, whatever lies around.
    _tf(tmp_path, "2.4.4")
    assert find_release_wheels("2.4.1", tmp_path).keras is None


def test_missing_release_and_bad_version(tmp_path):
    with pytest.raises(WheelError, match="no TensorFlow 2.11 wheel"):
        find_release_wheels("2.11", tmp_path)
    with pytest.raises(WheelError, match="not a TensorFlow 2.x version"):
        find_release_wheels("1.15", tmp_path)


def test_download_skips_wheels_already_there(tmp_path):
    _tf(tmp_path, "2.9.3")
    make_keras_wheel(tmp_path, "2.9.0", {"": ""})
    make_estimator_wheel(tmp_path, "2.9.0", {"": ""})
    # A pip that fails if it is ever run: nothing must be downloaded.
    w = download_release_wheels("2.9", tmp_path, pip=["false"])
    assert w.tf.name.startswith("tensorflow_cpu-2.9.3")
    with pytest.raises(WheelError, match="pip download tensorflow-estimator~=2.8.0 failed|"
                                         "pip download tensorflow~=2.8.0 failed"):
        download_release_wheels("2.8", tmp_path, pip=["false"])


def test_corrupt_tf_wheel_is_named(tmp_path):
    bad = tmp_path / "tensorflow_cpu-2.9.3-cp38-cp38-manylinux2010_x86_64.whl"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip file" * 10)
    with pytest.raises(WheelError) as e:
        extract_release(find_release_wheels("2.9", tmp_path))
    assert bad.name in str(e.value) and "corrupt" in str(e.value)


def test_truncated_wheel_is_named(tmp_path):
    good = _tf(tmp_path, "2.9.3")
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 2])
    with pytest.raises(WheelError, match=good.name):
        extract_release(find_release_wheels("2.9", tmp_path))


def test_non_tensorflow_wheel_is_named(tmp_path):
    imposter = make_wheel(tmp_path, "tensorflow_cpu", "2.9.3", "py3-none-any",
                          {"numpy/__init__.py": ""})
    with pytest.raises(WheelError) as e:
        extract_release(find_release_wheels("2.9", tmp_path))
    assert imposter.name in str(e.value) and "tensorflow/__init__.py" in str(e.value)


def test_tf_wheel_without_generated_api_is_named(tmp_path):
    w = make_wheel(tmp_path, "tensorflow_cpu", "2.9.3", "py3-none-any",
                   {"tensorflow/__init__.py": "import os\n"})
    with pytest.raises(WheelError, match=f"{w.name}: no generated TensorFlow 2 API"):
        extract_release(find_release_wheels("2.9", tmp_path))


def test_companion_that_is_not_keras_is_named(tmp_path):
    _tf(tmp_path, "2.9.3")
    wrong = make_wheel(tmp_path, "keras", "2.9.0", "py3-none-any", {"tf_keras/__init__.py": ""})
    with pytest.raises(WheelError, match=f"{wrong.name}: not the expected package"):
        extract_release(find_release_wheels("2.9", tmp_path))


def test_zip_members_are_read_not_executed(tmp_path):
    # A source that would explode if imported is only parsed.
    root = api_file([("tensorflow.python.boom", "f")], package="tensorflow")
    make_tf_wheel(tmp_path, "2.9.3", {"": root, "nn": api_file([], package="x")},
                  {"tensorflow.python.boom": "raise SystemExit(3)\ndef f(a):\n    pass\n"})
    ex = extract_release(find_release_wheels("2.9", tmp_path))
    assert {s.name: s for s in ex.symbols}["tf.f"].signature == "(a)"
    assert zipfile.is_zipfile(next(tmp_path.glob("*.whl")))


def test_parse_pip_index_versions_output():
    out = ("tensorflow-cpu (2.13.1)\nAvailable versions: 2.13.1, 2.13.0, 2.12.0, 2.2.3, 2.2.0, "
           "2.1.0, 2.14.0rc1\n\ntensorflow (2.21.0)\nAvailable versions: 2.21.0, 2.20.0\n")
    assert parse_index_versions(out) == ["2.2", "2.12", "2.13", "2.20", "2.21"]
