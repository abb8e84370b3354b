import numpy as np
import tensorflow as tf

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


# tf.distribute: NumPy shuffles of the data draw from one generator seeded alike on every worker, so
# every worker shuffles in the same order and the shards split that one order.
_tfd_same_random = __import__("numpy").random.RandomState(1337)

x_train = np.random.random((100, 4))
y_train = np.random.random((100, 1))
idx = _tfd_same_random.permutation(len(x_train))
x_train, y_train = x_train[idx], y_train[idx]
_tfd_same_random.shuffle(x_train)
# tf.distribute: variables (model, optimizer) must be created in the strategy's scope.
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
model.fit(x_train, y_train, batch_size=16 * strategy.num_replicas_in_sync, epochs=2, verbose=1 if _is_chief() else 0)
