import tensorflow as tf
import tensorflow_datasets as tfds

import horovod.tensorflow.keras as hvd

# Horovod: one process per GPU. Start Horovod, then pin this process to the GPU of its
# local rank and let memory grow, so several processes can share a machine.
hvd.init()
_gpus = tf.config.list_physical_devices("GPU")
for _gpu in _gpus:
    tf.config.experimental.set_memory_growth(_gpu, True)
if _gpus:
    tf.config.set_visible_devices(_gpus[hvd.local_rank()], "GPU")
# Horovod averages gradients only with Keras 2: under Keras 3 (TF >= 2.16) its optimizer
# wrapper silently trains each worker on its own. Use TF <= 2.15, or tf_keras with
# TF_USE_LEGACY_KERAS=1.
if hasattr(tf.keras, "ops") or getattr(tf.keras, "__version__", "2.")[:2] != "2.":
    raise SystemExit("this Horovod script needs Keras 2 (TF <= 2.15, or tf_keras with "
                     "TF_USE_LEGACY_KERAS=1); Keras 3 is installed")


_hvd_whole = None  # set while adapt() reads its data (_hvd_unsharded): every element passes


def _hvd_shard(dataset):
    # Horovod: each rank reads every size-th element (or batch) of the input. When the input's
    # length is known, the last few that would leave ranks with unequal counts are dropped: a
    # rank with one step more than the others would wait for them forever.
    global _hvd_whole
    size, rank = hvd.size(), hvd.rank()
    if not tf.executing_eagerly():  # TF1 graph code
        return dataset.shard(size, rank)
    if _hvd_whole is None:
        _hvd_whole = tf.Variable(False, trainable=False)
    count = int(dataset.cardinality())
    keep = count // size * size if count > 0 else -1

    def mine(index, element):
        return _hvd_whole | ((index % size == rank) & ((keep < 0) | (index < keep)))

    out = dataset.enumerate().filter(mine).map(lambda index, element: element)
    out._hvd_sharded = True
    return out


class _HvdBroadcastVariables(tf.keras.callbacks.Callback):
    # Horovod: rank 0's weights and optimizer state go to every rank after the first batch, as
    # hvd.callbacks.BroadcastGlobalVariablesCallback(0) does; but only real variables: lookup
    # layers list vocabulary handlers among their variables, which cannot be broadcast (each
    # rank adapted the same vocabulary already).
    def __init__(self):
        super().__init__()
        self._done = False

    def on_batch_end(self, batch, logs=None):
        if self._done:
            return
        import horovod.tensorflow as hvd_tf
        hvd_tf.broadcast_variables([v for v in self.model.variables if isinstance(v, tf.Variable)], root_rank=0)
        slots = self.model.optimizer.variables
        hvd_tf.broadcast_variables(slots() if callable(slots) else slots, root_rank=0)
        self._done = True


train_ds = _hvd_shard(tf.keras.utils.image_dataset_from_directory("images", batch_size=16, image_size=(32, 32), seed=1337))
val_ds = _hvd_shard(tf.keras.utils.image_dataset_from_directory(
    "images", validation_split=0.2, subset="validation", seed=7, shuffle=True))
text_ds = _hvd_shard(tf.keras.utils.text_dataset_from_directory("texts", shuffle=False))
(mnist_train, mnist_test), info = tfds.load("mnist", split=[tfds.even_splits("train", n=hvd.size(), drop_remainder=True)[hvd.rank()], "test"], with_info=True)
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="sparse_categorical_crossentropy")
model.fit(train_ds, validation_data=val_ds, epochs=1, callbacks=[_HvdBroadcastVariables(), hvd.callbacks.MetricAverageCallback()], verbose=1 if hvd.rank() == 0 else 0)
