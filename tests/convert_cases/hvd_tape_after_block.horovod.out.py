import tensorflow as tf

import horovod.tensorflow as hvd

# Horovod: one process per GPU. Start Horovod, then pin this process to the GPU of its
# local rank and let memory grow, so several processes can share a machine.
hvd.init()
_gpus = tf.config.list_physical_devices("GPU")
for _gpu in _gpus:
    tf.config.experimental.set_memory_growth(_gpu, True)
if _gpus:
    tf.config.set_visible_devices(_gpus[hvd.local_rank()], "GPU")


def _hvd_variables(variables):
    # Horovod broadcasts variables only: lookup layers (StringLookup, TextVectorization) list
    # their vocabulary handlers among a model's variables; every rank adapted the same ones.
    return [v for v in variables if isinstance(v, tf.Variable)]


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    # Horovod: start every worker from rank 0's state once the first step has created the
    # optimizer's slots.
    if optimizer.iterations == 1:
        hvd.broadcast_variables(_hvd_variables(model.variables), root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)
    return loss


for x, y in dataset:
    train_step(x, y)
