"""Small runtime helpers a tf.distribute conversion writes into the script, only when a rule uses
them (the Horovod ones are in helpers.py): what a rewrite needs to know at run time (a Keras loss
object or a plain function, a scalar mean or per-example values, arrays or a dataset) cannot be
read from the source. Each is written after the strategy and the chief helpers."""
from __future__ import annotations

# name -> code ({tf}, {keras} and {strategy} are filled in); written in this order.
HELPERS = {
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
                values = values * {tf}.cast(weights, values.dtype)
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
            values = values * {tf}.cast(weights, values.dtype)
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
def _tfd_load_weights(model, *args, **kwargs):
    # tf.distribute: only the chief is sure to have this file (checkpoints go to the real path
    # on the chief alone): the chief loads it, and every worker takes the chief's values, in one
    # all-reduce per weight (the others add zeros).
    if _is_chief():
        model.load_weights(*args, **kwargs)
    for weight in model.weights:
        local = {tf}.identity(weight) if _is_chief() else {tf}.zeros_like(weight)
        total = {strategy}.reduce({tf}.distribute.ReduceOp.SUM,
                                  {strategy}.run(lambda value: value, args=(local,)), axis=None)
        weight.assign(total)
''',
}


def code_for(ctx) -> str:
    out = [text.format(tf=ctx.tf, keras=ctx.keras, strategy=ctx.strategy)
           for name, text in HELPERS.items() if name in ctx.helpers]
    return "".join("\n" + t for t in out)
