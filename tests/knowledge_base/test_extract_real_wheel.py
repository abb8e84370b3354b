"""One real release from the registry, downloaded with the project's own download function."""
from __future__ import annotations

import time

import pytest

from knowledge_base.extract import extract_release
from knowledge_base.wheels import download_release_wheels


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_real_tf_2_3_release(request):
    # 2.3 has the smallest CPU wheel (about 140 MB); it is kept in pytest's cache dir.
    cache = request.config.cache.mkdir("tfdesk-wheels")
    wheels = download_release_wheels("2.3", cache)
    assert wheels.tf.name.startswith("tensorflow_cpu-2.3.")
    assert wheels.estimator.name.startswith("tensorflow_estimator-2.3.")
    assert wheels.keras is None  # 2.3 still has Keras in-tree

    t0 = time.process_time()
    ex = extract_release(wheels)
    cpu = time.process_time() - t0
    by = {s.name: s for s in ex.symbols}

    assert ex.info.version == "2.3" and ex.info.keras_source == "tensorflow (in-tree)"
    assert by["tf.nn.softmax"].signature == "(logits, axis=None, name=None)"
    assert by["tf.nn.softmax"].object == "tensorflow.python.ops.nn_ops.softmax_v2"
    assert by["tf.compat.v1.nn.softmax"].signature == "(logits, axis=None, name=None, dim=None)"
    assert by["tf.estimator.Estimator"].kind == "class"
    assert by["tf.estimator.Estimator.train"].kind == "method"
    assert by["tf.keras.Model.fit"].kind == "method"
    assert by["tf.data.Dataset.from_tensor_slices"].kind == "method"
    assert by["tf.pad"].signature.startswith("(tensor, paddings, mode='CONSTANT'")
    assert by["tf.compat.v1.to_float"].deprecation.instructions == "Use `tf.cast` instead."
    assert "tf.keras.layers.experimental.preprocessing.RandomFlip" in by
    assert "tf.keras.layers.RandomFlip" not in by  # promoted out of experimental in 2.6
    assert not any(n.startswith(("tf.compat.v2", "tf.compat.v1.compat")) for n in by)
    assert len(ex.symbols) > 8000
    renames = {r.old: r for r in ex.renames}
    assert renames["tf.Session"].new == "tf.compat.v1.Session"
    assert renames["tf.contrib.layers.xavier_initializer"].new
    assert cpu < 20, f"extraction took {cpu:.1f} s of CPU"
