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


def _tfd_batch(data, per_worker):
    # tf.distribute: fit() reads arrays in batches of the GLOBAL batch size (this script's batch
    # is one worker's); datasets and generators bring their own batches (and refuse batch_size).
    if isinstance(data, (tf.data.Dataset, tf.keras.utils.Sequence)) or hasattr(data, "__next__"):
        return None
    return per_worker * strategy.num_replicas_in_sync


class Model(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


x = np.random.random((64, 4)).astype("float32")
y = np.random.random((64, 1)).astype("float32")
# tf.distribute: variables (model, optimizer) must be created in the strategy's scope.
with strategy.scope():
    inputs = tf.keras.Input((4,))
    model = Model(inputs, tf.keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, batch_size=_tfd_batch(x, 32), verbose=1 if _is_chief() else 0)
