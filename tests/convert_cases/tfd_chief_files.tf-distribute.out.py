import shutil

import matplotlib.pyplot as plt
import tensorflow as tf
from tensorflow import keras

# tf.distribute: one replica per worker; the cluster comes from TF_CONFIG. The strategy
# must exist before any other TensorFlow work.
strategy = tf.distribute.MultiWorkerMirroredStrategy()


def _is_chief():
    resolver = strategy.cluster_resolver
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and "chief" not in resolver.cluster_spec().as_dict()


def _chief_path(path):
    # Saving is collective under MultiWorkerMirroredStrategy: every worker saves, and only
    # the chief's copy lands at the real path; the others write to a scratch directory (the
    # same one for the same path, so a worker reads back what it saved).
    if _is_chief():
        return path
    import os, tempfile
    scratch = _chief_path.__dict__.setdefault("paths", {})
    if str(path) not in scratch:
        scratch[str(path)] = os.path.join(tempfile.mkdtemp(prefix="tfdesk-worker-"), os.path.basename(str(path)))
    return scratch[str(path)]


def _tfd_from_chief(path):
    # tf.distribute: only the chief is sure to have this file (checkpoints land at the real path
    # on the chief alone, maybe on another machine). Every worker must still load it (loading
    # into the strategy's variables is collective): the chief packs the file (or a checkpoint's
    # files) and every worker unpacks the same bytes, sent by all-reduce; the path to read back.
    import glob, io, os, tarfile, tempfile
    import numpy as np

    def total(value):
        per_replica = strategy.run(lambda v: v, args=(value,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    payload = b""
    if _is_chief():
        name = "" if path is None else str(path)  # latest_checkpoint() found none: None for all
        found = [] if not name else [name] if os.path.exists(name) else glob.glob(glob.escape(name) + ".*")
        index = os.path.join(os.path.dirname(name) or ".", "checkpoint")
        if name and os.path.exists(index) and not os.path.exists(name):
            found.append(index)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for found_name in found:
                tar.add(found_name, arcname=os.path.basename(os.path.normpath(found_name)))
            base = os.path.basename(os.path.normpath(name)).encode()
            info = tarfile.TarInfo("_tfdesk_name")
            info.size = len(base)
            tar.addfile(info, io.BytesIO(base))
        payload = buffer.getvalue()
    size = int(total(tf.constant(len(payload), tf.int64)))
    data = np.zeros(size, np.int32)
    data[:len(payload)] = np.frombuffer(payload, np.uint8)
    data = total(tf.constant(data)).numpy().astype(np.uint8).tobytes()
    if _is_chief():
        return path
    local = tempfile.mkdtemp(prefix="tfdesk-from-chief-")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(local)
    with open(os.path.join(local, "_tfdesk_name")) as f:
        name = f.read()
    return os.path.join(local, name) if name else None


def _tfd_load_weights(model, filepath, *args, **kwargs):
    # tf.distribute: Keras 2 loads a .weights.h5 file's arrays into the compiled metrics'
    # sync-on-read variables unconverted, which fails under the strategy; the weights go through
    # an uncompiled copy of the model instead (a subclassed model, which cannot be copied, loads
    # as before).
    if str(filepath).endswith(".weights.h5"):
        try:
            copy = tf.keras.models.clone_model(model)
        except Exception:  # noqa: BLE001 - not a functional or Sequential model
            copy = None
        if copy is not None:
            copy.load_weights(filepath, *args, **kwargs)
            model.set_weights(copy.get_weights())
            return None
    return model.load_weights(filepath, *args, **kwargs)


if _is_chief():
    shutil.rmtree("logs", ignore_errors=True)
writer = (tf.summary.create_file_writer("logs/train") if _is_chief() else tf.summary.create_noop_writer())
train_ds = keras.utils.image_dataset_from_directory("images", image_size=(32, 32), batch_size=32 * strategy.num_replicas_in_sync)
val_ds = keras.utils.image_dataset_from_directory("images", image_size=(32, 32), batch_size=8 * strategy.num_replicas_in_sync)
# tf.distribute: variables (model, optimizer) must be created in the strategy's scope.
with strategy.scope():
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")


    def plot(history):
        plt.plot(history.history["loss"])
        if _is_chief():
            plt.savefig("loss.png")


    best = keras.callbacks.ModelCheckpoint(_chief_path("best.h5"), save_best_only=True)
    history = model.fit(train_ds, validation_data=val_ds, epochs=2, callbacks=[best], verbose=1 if _is_chief() else 0)
    plot(history)
    _tfd_load_weights(model, _tfd_from_chief("best.h5"))
    model.save(_chief_path("final.keras"))
    reloaded = keras.models.load_model(_chief_path("final.keras"))
