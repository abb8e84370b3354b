import shutil

import matplotlib.pyplot as plt
import tensorflow as tf

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


def _hvd_shard_arrays(data):
    # Horovod: each rank trains on its own 1/size of in-memory arrays (every rank the same
    # number of samples, so all ranks run the same number of steps); datasets pass through.
    if isinstance(data, dict):
        return {key: _hvd_shard_arrays(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_hvd_shard_arrays(value) for value in data)
    if isinstance(data, tf.data.Dataset) or not hasattr(data, "shape") or not hasattr(data, "__len__"):
        return data
    end = len(data) // hvd.size() * hvd.size()
    return data[hvd.rank():end:hvd.size()]


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


if hvd.rank() == 0:
    shutil.rmtree("logs", ignore_errors=True)
writer = (tf.summary.create_file_writer("logs/train") if hvd.rank() == 0 else tf.summary.create_noop_writer())
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="mse")
history = model.fit(_hvd_shard_arrays(dataset), epochs=2, callbacks=[_HvdBroadcastVariables(), hvd.callbacks.MetricAverageCallback()], verbose=1 if hvd.rank() == 0 else 0)
with writer.as_default():
    tf.summary.scalar("final_loss", history.history["loss"][-1], step=0)
plt.plot(history.history["loss"])
if hvd.rank() == 0:
    plt.savefig("loss.png")
