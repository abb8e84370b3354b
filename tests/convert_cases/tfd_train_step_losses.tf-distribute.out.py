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


def _tfd_weights(weights, values):
    # Sample weights shaped like the per-example losses, as Keras' reduction shapes them ((n, 1)
    # weights for (n,) losses would otherwise broadcast to (n, n)).
    weights = tf.cast(weights, values.dtype)
    while (weights.shape.rank is not None and values.shape.rank is not None
           and weights.shape.rank > values.shape.rank and weights.shape[-1] == 1):
        weights = tf.squeeze(weights, -1)
    return weights


def _tfd_loss(loss, *args, **kwargs):
    # tf.distribute: this replica's share of the loss over the GLOBAL batch. Gradients are summed
    # over the replicas, so a batch mean is divided by their number, and per-example values (or
    # sums) add up as they did in one process. A Keras loss object with its default reduction
    # (refused under a strategy outside compile()) is reduced here over the global batch.
    if callable(loss) and not isinstance(loss, tf.Tensor):
        reduction = getattr(loss, "reduction", None)
        if isinstance(loss, tf.keras.losses.Loss) and reduction in ("auto", "sum_over_batch_size"):
            weights = kwargs.pop("sample_weight", args[2] if len(args) > 2 else None)
            values = loss.call(*args[:2], **kwargs)
            if weights is not None:
                values = values * _tfd_weights(weights, values)
            count = tf.cast(tf.size(values) * strategy.num_replicas_in_sync, values.dtype)
            return tf.reduce_sum(values) / count
        value = loss(*args, **kwargs)
        if reduction in ("sum", "none"):
            return value
    else:
        value = tf.convert_to_tensor(loss)
    return value / strategy.num_replicas_in_sync if value.shape.rank == 0 else value


def _tfd_mean_loss(loss, *args, **kwargs):
    # tf.distribute: a Keras loss object with its default reduction, evaluated on this replica's
    # part of the batch (a metric of it is averaged over the replicas as before).
    if isinstance(loss, tf.keras.losses.Loss) and loss.reduction in ("auto", "sum_over_batch_size"):
        weights = kwargs.pop("sample_weight", args[2] if len(args) > 2 else None)
        values = loss.call(*args[:2], **kwargs)
        if weights is not None:
            values = values * _tfd_weights(weights, values)
        return tf.reduce_mean(values)
    return loss(*args, **kwargs)


def _tfd_batch(data, per_worker):
    # tf.distribute: fit() reads arrays in batches of the GLOBAL batch size (this script's batch
    # is one worker's); datasets and generators bring their own batches (and refuse batch_size).
    if isinstance(data, (tf.data.Dataset, tf.keras.utils.Sequence)) or hasattr(data, "__next__"):
        return None
    return per_worker * strategy.num_replicas_in_sync


class GAN(keras.Model):
    def compile(self, d_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.loss_fn = loss_fn

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            p = self(x, training=True)
            d_loss = _tfd_loss(self.loss_fn, y, p)
        grads = tape.gradient(d_loss, self.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.trainable_weights))
        with tf.GradientTape() as tape:
            p = self(x, training=True)
            mse = _tfd_loss(tf.reduce_mean(tf.square(y - p)))
        grads = tape.gradient(mse, self.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"d_loss": d_loss}

    def test_step(self, data):
        x, y = data
        return {"loss": _tfd_mean_loss(self.loss_fn, y, self(x, training=False))}


# tf.distribute: variables (model, optimizer) must be created in the strategy's scope.
with strategy.scope():
    model = GAN()
    model.compile(d_optimizer=keras.optimizers.SGD(0.1), loss_fn=keras.losses.BinaryCrossentropy())
model.fit(dataset, epochs=1, batch_size=_tfd_batch(dataset, 32), verbose=1 if _is_chief() else 0)
