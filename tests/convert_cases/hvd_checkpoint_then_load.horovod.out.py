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


def _tfdesk_where(base):
    # The machine and the folder itself (device, inode): the same on workers sharing it.
    import os, socket
    if base in ("", ".") or not os.path.exists(base):
        return ""
    st = os.stat(base)
    return f"{socket.gethostname()}:{st.st_dev}:{st.st_ino}"


def _hvd_sync_from_rank0(path):
    # rank 0 alone wrote the files at this path (checkpoints, logs, saves, data files): every
    # worker waits here until rank 0 is done, and the others get rank 0's files at the same
    # path. Returns the path.
    import io, os, tarfile, tempfile
    if isinstance(path, (list, tuple)):
        return type(path)(_hvd_sync_from_rank0(p) for p in path)
    payload = b""
    if hvd.rank() == 0:
        base = str(path)
        while base not in ("", ".") and not os.path.exists(base):  # a pattern: its folder
            base = os.path.dirname(base)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            if base not in ("", "."):
                tar.add(base, arcname="_tfdesk_root")
            for key, text in (("_tfdesk_base", base), ("_tfdesk_where", _tfdesk_where(base))):
                info = tarfile.TarInfo(key)
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))
        payload = buffer.getvalue()
    payload = __import__("horovod.tensorflow", fromlist=["x"]).broadcast_object(payload, root_rank=0)
    if hvd.rank() == 0:
        return path
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        base = tar.extractfile("_tfdesk_base").read().decode()
        if tar.extractfile("_tfdesk_where").read().decode() == _tfdesk_where(base):
            return path  # this worker shares rank 0's folder: the files are there already
        # In the chief's order of modification (code picking the newest file agrees).
        for member in sorted(tar.getmembers(), key=lambda m: m.mtime):
            if not member.name.startswith("_tfdesk_root"):
                continue
            rel = os.path.relpath(member.name, "_tfdesk_root")
            target = base if rel == "." else os.path.join(base, rel)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            data = tar.extractfile(member).read()
            if os.path.isfile(target):
                with open(target, "rb") as f:
                    if f.read() == data:
                        continue
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            fd, scratch = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".tfdesk-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.utime(scratch, (member.mtime, member.mtime))
            os.replace(scratch, target)
    return path


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


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())), loss="mse")
path_checkpoint = "best.weights.h5"
checkpoint = tf.keras.callbacks.ModelCheckpoint(path_checkpoint, save_best_only=True,
                                                save_weights_only=True)
model.fit(_hvd_shard_arrays(dataset), validation_data=val_dataset, epochs=3, callbacks=[_HvdBroadcastVariables(), hvd.callbacks.MetricAverageCallback()] + ([checkpoint] if hvd.rank() == 0 else []), verbose=1 if hvd.rank() == 0 else 0)
_hvd_sync_from_rank0(path_checkpoint)
model.load_weights(path_checkpoint)
if hvd.rank() == 0:
    model.save("final.keras")
_hvd_sync_from_rank0("final.keras")
restored = hvd.load_model("final.keras")
MODEL_PATH = "final.keras"
_hvd_sync_from_rank0(MODEL_PATH)
again = hvd.load_model(MODEL_PATH)
