# tfdesk's own case: a critic step with a gradient penalty, whose inner tape watches the
# interpolated images and differentiates with respect to them (pattern seen in keras-team/keras-io
# examples/generative/wgan_gp.py). Only the outer tape's weight gradients are averaged.
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


def _hvd_variables(variables):
    # Horovod broadcasts variables only: lookup layers (StringLookup, TextVectorization) list
    # their vocabulary handlers among a model's variables; every rank adapted the same ones.
    return [v for v in variables if isinstance(v, tf.Variable)]


critic = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(1e-3 * hvd.size())
images = _hvd_shard(tf.data.Dataset.from_tensor_slices(tf.random.uniform((64, 8, 8, 1)))).batch(16)


def penalty(real, fake):
    alpha = tf.random.uniform([tf.shape(real)[0], 1, 1, 1])
    mixed = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(mixed)
        pred = critic(mixed, training=True)
    grads = gp_tape.gradient(pred, [mixed])[0]
    norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1, 2, 3]))
    return tf.reduce_mean((norm - 1.0) ** 2)


@tf.function
def train_step(real):
    fake = tf.random.normal(tf.shape(real))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(critic(fake)) - tf.reduce_mean(critic(real)) + 10.0 * penalty(real, fake)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, critic.trainable_variables)
    opt.apply_gradients(zip(grads, critic.trainable_variables))
    # Horovod: start every worker from rank 0's state once the first step has created the
    # optimizer's slots.
    if opt.iterations == 1:
        hvd.broadcast_variables(_hvd_variables(critic.variables), root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)


for batch in images:
    train_step(batch)
