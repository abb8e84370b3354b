import tensorflow as tf

# tf.distribute: one replica per worker; the cluster comes from TF_CONFIG. The strategy
# must exist before any other TensorFlow work.
dist_strategy = tf.distribute.MultiWorkerMirroredStrategy()


def _is_chief():
    resolver = dist_strategy.cluster_resolver
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


strategy = dist_strategy
GLOBAL_BATCH = 32 * strategy.num_replicas_in_sync
dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(GLOBAL_BATCH)
dist_dataset = strategy.experimental_distribute_dataset(dataset)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        loss = tf.nn.compute_average_loss(tf.square(model(x) - y), global_batch_size=GLOBAL_BATCH)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


@tf.function
def distributed_step(inputs):
    return strategy.run(train_step, args=(inputs,))


for x in dist_dataset:
    distributed_step(x)
checkpoint.save(_chief_path("./ckpt/ckpt"))
