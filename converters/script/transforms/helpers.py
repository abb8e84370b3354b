"""Small runtime helpers a Horovod conversion writes into the script, only when a rule uses
them: what a rewrite needs to know about the data at run time (an array or a dataset, sharded
or not, a file or a checkpoint prefix) cannot be read from the source."""
from __future__ import annotations

from converters.script.transforms import file_sync

# Each helper: the code written into the script ({hvd} and {tf} are filled in). Written in the
# order of this table, after Horovod's setup.
HELPERS = {
    "same_random": '''
# Horovod: NumPy shuffles of the data draw from one generator seeded alike on every worker, so
# every worker shuffles in the same order and the shards split that one order.
_hvd_same_random = __import__("numpy").random.RandomState(1337)
''',
    "tape_module": None,  # an import only (see imports() below)
    "shard": '''
def _hvd_shard_arrays(data):
    # Horovod: each rank trains on its own 1/size of in-memory arrays (every rank the same
    # number of samples, so all ranks run the same number of steps); datasets pass through.
    if isinstance(data, dict):
        return {{key: _hvd_shard_arrays(value) for key, value in data.items()}}
    if isinstance(data, (list, tuple)):
        return type(data)(_hvd_shard_arrays(value) for value in data)
    if isinstance(data, {tf}.data.Dataset) or not hasattr(data, "shape") or not hasattr(data, "__len__"):
        return data
    end = len(data) // {hvd}.size() * {hvd}.size()
    return data[{hvd}.rank():end:{hvd}.size()]
''',
    "shard_dataset": '''
_hvd_whole = None  # set while adapt() reads its data (_hvd_unsharded): every element passes


def _hvd_shard(dataset):
    # Horovod: each rank reads every size-th element (or batch) of the input. When the input's
    # length is known, the last few that would leave ranks with unequal counts are dropped: a
    # rank with one step more than the others would wait for them forever.
    global _hvd_whole
    size, rank = {hvd}.size(), {hvd}.rank()
    if not {tf}.executing_eagerly():  # TF1 graph code
        return dataset.shard(size, rank)
    if _hvd_whole is None:
        _hvd_whole = {tf}.Variable(False, trainable=False)
    count = int(dataset.cardinality())
    keep = count // size * size if count > 0 else -1

    def mine(index, element):
        return _hvd_whole | ((index % size == rank) & ((keep < 0) | (index < keep)))

    out = dataset.enumerate().filter(mine).map(lambda index, element: element)
    out._hvd_sharded = True
    return out
''',
    "distributed_optimizer": '''
def _hvd_distributed(optimizer):
    # Horovod: an optimizer built where tfdesk could not follow. The global batch is hvd.size()
    # times one worker's, so its learning rate is scaled, and it is wrapped so gradients are
    # averaged; one that already is (built by a class tfdesk wrapped) is left as it is.
    optimizer = {keras}.optimizers.get(optimizer)
    if hasattr(optimizer, "_allreduce_grads"):  # already a hvd.DistributedOptimizer
        return optimizer
    rate = optimizer.learning_rate
    if isinstance(rate, {keras}.optimizers.schedules.LearningRateSchedule):
        raise SystemExit("tfdesk: this optimizer's learning rate is a schedule built where "
                         "tfdesk could not scale it; multiply its rates by hvd.size()")
    optimizer.learning_rate = float({keras}.backend.get_value(rate)) * {hvd}.size()
    return {hvd}.DistributedOptimizer(optimizer)
''',
    "log_dir": '''
def _hvd_log_dir(path):
    # Horovod: rank 0 writes the summaries to the real folder, the others to a scratch one.
    import tempfile
    return path if {hvd}.rank() == 0 else tempfile.mkdtemp(prefix="hvd-logs-")
''',
    "unsharded": '''
def _hvd_unsharded(data):
    # Horovod: adapt() must learn from all the data, the same on every rank, as in one process:
    # a dataset sharded by rank (_hvd_shard) is read here with every element let through.
    import numpy as np
    whole = globals().get("_hvd_whole")
    if whole is None or not isinstance(data, {tf}.data.Dataset):
        return data
    todo, sharded = [data], False
    while todo:
        ds = todo.pop()
        sharded = sharded or getattr(ds, "_hvd_sharded", False)
        todo.extend(ds._inputs())
    if not sharded:
        return data
    whole.assign(True)
    try:
        parts = list(data.as_numpy_iterator())
    finally:
        whole.assign(False)
    spec = {tf}.nest.flatten(data.element_spec)[0]
    batched = spec.shape.rank and spec.shape[0] is None
    stacked = {tf}.nest.map_structure(lambda *xs: np.concatenate(xs) if batched else np.stack(xs), *parts)
    out = {tf}.data.Dataset.from_tensor_slices(stacked)
    return out.batch(len({tf}.nest.flatten(parts[0])[0])) if batched else out
''',
    "sync_from_rank0": file_sync.HOROVOD,
    "variables": '''
def _hvd_variables(variables):
    # Horovod broadcasts variables only: lookup layers (StringLookup, TextVectorization) list
    # their vocabulary handlers among a model's variables; every rank adapted the same ones.
    return [v for v in variables if isinstance(v, {tf}.Variable)]
''',
    "broadcast_callback": '''
class _HvdBroadcastVariables({keras}.callbacks.Callback):
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
        hvd_tf.broadcast_variables([v for v in self.model.variables if isinstance(v, {tf}.Variable)], root_rank=0)
        slots = self.model.optimizer.variables
        hvd_tf.broadcast_variables(slots() if callable(slots) else slots, root_rank=0)
        self._done = True
''',
}


def imports(ctx) -> list[str]:
    """Import lines the helpers need beside Horovod's own."""
    if "tape_module" in ctx.helpers:
        return [f"import horovod.tensorflow as {ctx.hvd}_tf"]
    return []


def code_for(ctx) -> str:
    out = []
    for name, text in HELPERS.items():
        if name in ctx.helpers and text:
            out.append(text.format(hvd=ctx.hvd, tf=ctx.tf, keras=ctx.keras))
    return "".join("\n" + t for t in out)
