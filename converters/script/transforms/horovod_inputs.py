"""Horovod input rules beyond tf.data sources: arrays given to fit(), dataset builders that read
folders or TFDS, and adapt() of preprocessing layers (which must see all the data on every rank).

The documented semantics: the batch a script gives is the batch of ONE worker; the global batch
is that times hvd.size(), and the learning rate is scaled by hvd.size() to match (HVD010).
"""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import add_kwarg, call, code, dotted, expr, find_arg, replace_arg
from converters.script.transforms.base import RuleTransform
from converters.script.transforms.callbacks import is_fit
from converters.script.transforms.tfd_io import DATASET_METHODS


class ShardArrays(RuleTransform):
    """fit(x, y, ...) with in-memory arrays: each rank trains on its own 1/size of them. A
    ``fit(data)`` without y may be a dict of arrays as well as a dataset: unless the data is
    surely a dataset (built here, sharded where it is built), _hvd_shard_arrays decides when
    the script runs (datasets and generators pass through)."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.datasets: set[str] = set()

    def _dataset(self, value) -> bool:
        if isinstance(value, cst.Call):
            q = self.q(value.func) or ""
            return q.startswith("tf.data.") or q in T.DATASET_BUILDERS or q in T.BATCHING_READERS \
                or (isinstance(value.func, cst.Attribute) and value.func.attr.value in DATASET_METHODS) \
                or dotted(value.func) in ("_hvd_shard", "_hvd_unsharded")
        return dotted(value) in self.datasets

    def visit_Assign(self, node):
        if self._dataset(node.value):
            self.datasets.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def leave_Call(self, original, updated):
        if not is_fit(updated, self.a):
            return updated
        x = find_arg(updated, "x", 0)
        y = find_arg(updated, "y", 1)
        batch = find_arg(updated, "batch_size", None)
        if x is None or (y is None and batch is None and self._dataset(x[1].value)):
            return updated  # a dataset: sharded where built
        if "_hvd_shard_arrays" in code(x[1].value):
            return updated
        self.ctx.helpers.add("shard")
        for found in (x, y, find_arg(updated, "sample_weight", None)):
            if found is not None:
                updated = replace_arg(updated, found[0], call("_hvd_shard_arrays", found[1].value))
        per = code(batch[1].value).strip() if batch else "32 (Keras's default)"
        what = "arrays given to fit() are" if y is not None or batch is not None else \
            "what fit() is given is, when it holds arrays (a dict of them),"
        self.note(original, f"{what} split by rank (_hvd_shard_arrays: every rank "
                            f"the same number of samples, datasets pass through); the batch of "
                            f"one worker is {per}, the global batch {self.ctx.size} times that")
        return updated


class ShardBuilders(RuleTransform):
    """image_dataset_from_directory() & co. and tfds.load(): sharded by rank."""

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if q in T.DATASET_BUILDERS:
            return self._builder(original, updated, T.DATASET_BUILDERS[q])
        if q in T.BATCHING_READERS:
            return self._builder(original, updated, True, *T.BATCHING_READERS[q])
        if q in T.TFDS_LOADS:
            return self._tfds(original, updated)
        return updated

    def _builder(self, original, updated, shuffles, seed="seed", batch_at=None):
        size = self.ctx.size
        seeded = ""
        shuffle = find_arg(updated, "shuffle", None)
        off = shuffle is not None and code(shuffle[1].value).strip() in ("False", "0")
        if shuffles and not off and find_arg(updated, seed, None) is None:
            updated = add_kwarg(updated, seed, expr(T.SEED_FOR_SHARDS))
            what = "files" if batch_at is None else "records"
            seeded = (f"; {seed}={T.SEED_FOR_SHARDS} added so every rank shuffles the {what} "
                      f"in the same order and the shards split one order")
        batch = find_arg(updated, "batch_size", batch_at)
        per = code(batch[1].value).strip() if batch else "32 (the default)"
        self.ctx.helpers.add("shard_dataset")
        if batch_at is None or self.a.has_steps_per_epoch:  # folders: counted when built
            self.note(original, f"batches sharded by rank (_hvd_shard: every rank the same "
                                f"number of batches): one worker's batch is {per}, the global "
                                f"batch {size} times that{seeded}")
        else:  # records read from files: their number is not known before they are read
            self.note(original, f"batches sharded by rank (_hvd_shard): one worker's batch is "
                                f"{per}, the global batch {size} times that{seeded}; the number "
                                f"of batches is not known before they are read, and every worker "
                                f"must run the same number of steps, so keep it divisible by the "
                                f"number of workers or pass steps_per_epoch", "warning")
        return call("_hvd_shard", updated)

    def _tfds(self, original, updated):
        found = find_arg(updated, "split", 1)
        size, rank = self.ctx.size, f"{self.ctx.hvd}.rank()"
        if found is None:
            self.note(original, "tfds.load() without split= returns every split: give split= "
                                "so tfdesk can shard the training split by rank", "error")
            return updated
        value = found[1].value
        if isinstance(value, cst.List):
            elements = []
            for el in value.elements:
                text = code(el.value).strip().strip("'\"")
                if text.startswith("train"):
                    el = el.with_changes(value=self._even(el.value))
                elements.append(el)
            new = value.with_changes(elements=elements)
        else:
            new = self._even(value)
        self.note(original, f"split sharded with tfds.even_splits(..., n={size}, "
                            f"drop_remainder=True)[{rank}]: every rank reads its own equal part")
        return replace_arg(updated, found[0], new)

    def _even(self, split):
        tfds = next((k for k, v in self.a.aliases.items() if v == "tensorflow_datasets"), "tfds")
        return expr(f"{tfds}.even_splits({code(split).strip()}, n={self.ctx.size}, "
                    f"drop_remainder=True)[{self.ctx.hvd}.rank()]")


class AdaptWholeData(RuleTransform):
    """layer.adapt(data): on a sharded dataset, gathered back from all ranks first."""

    def leave_Call(self, original, updated):
        f = updated.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "adapt" and updated.args):
            return updated
        found = find_arg(updated, "data", 0)
        if found is None or "_hvd_unsharded" in code(found[1].value):
            return updated
        self.ctx.helpers.add("unsharded")
        self.note(original, "adapt() learns from all the data on every rank: a dataset sharded "
                            "by rank is read whole for it (_hvd_unsharded)")
        return replace_arg(updated, found[0], call("_hvd_unsharded", found[1].value))
