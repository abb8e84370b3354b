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


# tf.distribute: variables (model, optimizer) must be created in the strategy's scope.
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    val_acc = tf.keras.metrics.SparseCategoricalAccuracy()
train_ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(16 * strategy.num_replicas_in_sync)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
        # tf.distribute sums gradients over replicas: average over the global batch.
        loss = tf.nn.compute_average_loss(loss)
        grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    return loss


@tf.function
def test_step(x, y):
    val_acc.update_state(y, model(x, training=False))


for step, (x, y) in enumerate(strategy.experimental_distribute_dataset(train_ds)):
    loss = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(train_step, args=(x, y)), axis=None)
for x, y in strategy.experimental_distribute_dataset(train_ds):
    strategy.run(test_step, args=(x, y))
print(float(val_acc.result()))
