"""Small runtime helpers a tf.distribute conversion writes into the script, only when a rule uses
them (the Horovod ones are in helpers.py): what a rewrite needs to know at run time (a Keras loss
object or a plain function, a scalar mean or per-example values, arrays or a dataset) cannot be
read from the source. Each is written after the strategy and the chief helpers."""
from __future__ import annotations

from converters.script.transforms import file_sync

# name -> code ({tf}, {keras} and {strategy} are filled in); written in this order.
HELPERS = {
    "same_random": '''
# tf.distribute: NumPy shuffles of the data draw from one generator seeded alike on every worker, so
# every worker shuffles in the same order and the shards split that one order.
_tfd_same_random = __import__("numpy").random.RandomState(1337)
''',
    "tfd_weights": '''
def _tfd_weights(weights, values):
    # Sample weights shaped like the per-example losses, as Keras' reduction shapes them ((n, 1)
    # weights for (n,) losses would otherwise broadcast to (n, n)).
    weights = {tf}.cast(weights, values.dtype)
    while (weights.shape.rank is not None and values.shape.rank is not None
           and weights.shape.rank > values.shape.rank and weights.shape[-1] == 1):
        weights = {tf}.squeeze(weights, -1)
    return weights
''',
    "tfd_loss": '''
def _tfd_loss(loss, *args, **kwargs):
    # tf.distribute: this replica's share of the loss over the GLOBAL batch. Gradients are summed
    # over the replicas, so a batch mean is divided by their number, and per-example values (or
    # sums) add up as they did in one process. A Keras loss object with its default reduction
    # (refused under a strategy outside compile()) is reduced here over the global batch.
    if callable(loss) and not isinstance(loss, {tf}.Tensor):
        reduction = getattr(loss, "reduction", None)
        if isinstance(loss, {keras}.losses.Loss) and reduction in ("auto", "sum_over_batch_size"):
            weights = kwargs.pop("sample_weight", args[2] if len(args) > 2 else None)
            values = loss.call(*args[:2], **kwargs)
            if weights is not None:
                values = values * _tfd_weights(weights, values)
            count = {tf}.cast({tf}.size(values) * {strategy}.num_replicas_in_sync, values.dtype)
            return {tf}.reduce_sum(values) / count
        value = loss(*args, **kwargs)
        if reduction in ("sum", "none"):
            return value
    else:
        value = {tf}.convert_to_tensor(loss)
    return value / {strategy}.num_replicas_in_sync if value.shape.rank == 0 else value
''',
    "tfd_mean_loss": '''
def _tfd_mean_loss(loss, *args, **kwargs):
    # tf.distribute: a Keras loss object with its default reduction, evaluated on this replica's
    # part of the batch (a metric of it is averaged over the replicas as before).
    if isinstance(loss, {keras}.losses.Loss) and loss.reduction in ("auto", "sum_over_batch_size"):
        weights = kwargs.pop("sample_weight", args[2] if len(args) > 2 else None)
        values = loss.call(*args[:2], **kwargs)
        if weights is not None:
            values = values * _tfd_weights(weights, values)
        return {tf}.reduce_mean(values)
    return loss(*args, **kwargs)
''',
    "tfd_batch": '''
def _tfd_batch(data, per_worker):
    # tf.distribute: fit() reads arrays in batches of the GLOBAL batch size (this script's batch
    # is one worker's); datasets and generators bring their own batches (and refuse batch_size).
    if isinstance(data, ({tf}.data.Dataset, {keras}.utils.Sequence)) or hasattr(data, "__next__"):
        return None
    return per_worker * {strategy}.num_replicas_in_sync
''',
    "tfd_from_chief": '''
def _tfd_from_chief(path):
    # tf.distribute: only the chief is sure to have this file (checkpoints land at the real path
    # on the chief alone, maybe on another machine). Every worker must still load it (loading
    # into the strategy's variables is collective): the chief packs the file (or a checkpoint's
    # files) and every worker unpacks the same bytes, sent by all-reduce; the path to read back.
    import glob, io, os, tarfile, tempfile
    import numpy as np

    def total(value):
        per_replica = {strategy}.run(lambda v: v, args=(value,))
        return {strategy}.reduce({tf}.distribute.ReduceOp.SUM, per_replica, axis=None)

    payload = b""
    if _is_chief():
        name = "" if path is None else str(path)  # latest_checkpoint() found none: None for all
        found = [] if not name else [name] if os.path.exists(name) else glob.glob(glob.escape(name) + ".*")
        index = os.path.join(os.path.dirname(name) or ".", "checkpoint")
        if name and os.path.exists(index) and not os.path.exists(name):
            found.append(index)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for found_name in found:
                tar.add(found_name, arcname=os.path.basename(os.path.normpath(found_name)))
            base = os.path.basename(os.path.normpath(name)).encode()
            info = tarfile.TarInfo("_tfdesk_name")
            info.size = len(base)
            tar.addfile(info, io.BytesIO(base))
        payload = buffer.getvalue()
    size = int(total({tf}.constant(len(payload), {tf}.int64)))
    data = np.zeros(size, np.int32)
    data[:len(payload)] = np.frombuffer(payload, np.uint8)
    data = total({tf}.constant(data)).numpy().astype(np.uint8).tobytes()
    if _is_chief():
        return path
    local = tempfile.mkdtemp(prefix="tfdesk-from-chief-")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(local)
    with open(os.path.join(local, "_tfdesk_name")) as f:
        name = f.read()
    return os.path.join(local, name) if name else None
''',
    "tfd_sync_from_chief": file_sync.TF_DISTRIBUTE_SEND + file_sync.TF_DISTRIBUTE,
    "tfd_by_element": '''
def _tfd_by_element(dataset):
    # tf.distribute: every worker reads the files and keeps its share of each global batch
    # (sharding by file would give each worker other examples than one process reads together).
    options = {tf}.data.Options()
    options.experimental_distribute.auto_shard_policy = {tf}.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)
''',
    "tfd_local": '''
def _tfd_local(value):
    # tf.distribute: a batch of the distributed dataset used outside strategy.run (to log a
    # prediction on it): this worker's part of it, as plain tensors.
    def local(part):
        parts = {strategy}.experimental_local_results(part)
        return parts[0] if len(parts) == 1 else {tf}.concat(parts, axis=0)
    return {tf}.nest.map_structure(local, value)
''',
    "tfd_load_weights": '''
def _tfd_load_weights(model, filepath, *args, **kwargs):
    # tf.distribute: Keras 2 loads a .weights.h5 file's arrays into the compiled metrics'
    # sync-on-read variables unconverted, which fails under the strategy; the weights go through
    # an uncompiled copy of the model instead (a subclassed model, which cannot be copied, loads
    # as before).
    if str(filepath).endswith(".weights.h5"):
        try:
            copy = {keras}.models.clone_model(model)
        except Exception:  # noqa: BLE001 - not a functional or Sequential model
            copy = None
        if copy is not None:
            copy.load_weights(filepath, *args, **kwargs)
            model.set_weights(copy.get_weights())
            return None
    return model.load_weights(filepath, *args, **kwargs)
''',
    "tfd_predict": '''
def _tfd_predict(model, x, batch_size=None, verbose="auto", steps=None, **kwargs):
    # tf.distribute: predict() splits its input across the workers (a single example leaves the
    # others an empty batch, which fails); each worker predicts all of it by itself, in batches,
    # as the one process did.
    import numpy as np
    if isinstance(x, {tf}.data.Dataset):
        batches = x.take(steps) if steps else x
    else:
        size = batch_size or 32
        count = len({tf}.nest.flatten(x)[0])
        batches = ({tf}.nest.map_structure(lambda a: a[i:i + size], x) for i in range(0, count, size))
    outputs = []
    for batch in batches:
        if isinstance(batch, tuple) and isinstance(x, {tf}.data.Dataset):
            batch = batch[0]  # (inputs, targets[, weights])
        outputs.append(model(batch, training=False))
    return {tf}.nest.map_structure(lambda *parts: np.concatenate([np.asarray(p) for p in parts]), *outputs)
''',
}


# Helpers other helpers call.
NEEDS = {"tfd_loss": {"tfd_weights"}, "tfd_mean_loss": {"tfd_weights"}}


def code_for(ctx) -> str:
    wanted = set(ctx.helpers).union(*(NEEDS.get(h, set()) for h in ctx.helpers))
    out = [text.format(tf=ctx.tf, keras=ctx.keras, strategy=ctx.strategy)
           for name, text in HELPERS.items() if name in wanted]
    return "".join("\n" + t for t in out)
