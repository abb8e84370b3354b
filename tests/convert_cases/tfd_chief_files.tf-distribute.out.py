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


def _tfd_load_weights(model, *args, **kwargs):
    # tf.distribute: only the chief is sure to have this file (checkpoints go to the real path
    # on the chief alone): the chief loads it, and every worker takes the chief's values, in one
    # all-reduce per weight (the others add zeros).
    if _is_chief():
        model.load_weights(*args, **kwargs)
    for weight in model.weights:
        local = tf.identity(weight) if _is_chief() else tf.zeros_like(weight)
        total = strategy.reduce(tf.distribute.ReduceOp.SUM,
                                  strategy.run(lambda value: value, args=(local,)), axis=None)
        weight.assign(total)


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
    _tfd_load_weights(model, "best.h5")
    model.save(_chief_path("final.keras"))
    reloaded = keras.models.load_model(_chief_path("final.keras"))
