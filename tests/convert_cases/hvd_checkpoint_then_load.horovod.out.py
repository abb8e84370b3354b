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


def _hvd_from_rank0(path):
    # Horovod: only rank 0 wrote this file (checkpoints and saves are rank 0's); every rank
    # reads rank 0's copy, sent over Horovod once rank 0 has finished writing it.
    import glob, io, os, tarfile, tempfile
    import horovod.tensorflow as hvd_tf
    payload = None
    if hvd.rank() == 0:
        found = [path] if os.path.exists(path) else glob.glob(glob.escape(path) + ".*")
        index = os.path.join(os.path.dirname(path) or ".", "checkpoint")
        if os.path.exists(index) and not os.path.exists(path):
            found.append(index)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name in found:
                tar.add(name, arcname=os.path.basename(os.path.normpath(name)))
        payload = buffer.getvalue()
    payload = hvd_tf.broadcast_object(payload, root_rank=0)
    if hvd.rank() == 0:
        return path
    local = tempfile.mkdtemp(prefix="hvd-rank0-")
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        tar.extractall(local)
    return os.path.join(local, os.path.basename(os.path.normpath(path)))


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="mse")
path_checkpoint = "best.weights.h5"
checkpoint = tf.keras.callbacks.ModelCheckpoint(path_checkpoint, save_best_only=True,
                                                save_weights_only=True)
model.fit(dataset, validation_data=val_dataset, epochs=3, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()] + ([checkpoint] if hvd.rank() == 0 else []), verbose=1 if hvd.rank() == 0 else 0)
model.load_weights(_hvd_from_rank0(path_checkpoint))
if hvd.rank() == 0:
    model.save("final.keras")
restored = tf.keras.models.load_model(_hvd_from_rank0("final.keras"))
MODEL_PATH = "final.keras"
again = tf.keras.models.load_model(_hvd_from_rank0(MODEL_PATH))
