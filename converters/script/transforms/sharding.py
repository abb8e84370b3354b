"""Horovod: each worker reads its own shard of the input, right where the pipeline starts."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call
from converters.script.transforms.base import RuleTransform


class ShardDatasets(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.sharded: set[int] = set()

    def visit_Call(self, node: cst.Call):
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value == "shard" and isinstance(f.value, cst.Call):
            self.sharded.add(id(f.value))

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if id(original) in self.sharded:
            return updated
        if q not in T.DATASET_SOURCES:
            if q in T.UNSHARDED_DATASET_SOURCES or (
                    q and q.startswith(("tf.data.", "tf1.data.")) and q.endswith("Dataset")
                    and q.split(".")[-1][0].isupper() and q not in T.BATCHING_READERS):
                # Safety net: a source no rule shards must not reach training silently.
                self.note(original, f"{q}() is a source tfdesk does not shard: if it feeds "
                                    f"training, every worker reads all of it while the learning "
                                    f"rate is scaled by {self.ctx.size} for a global batch of "
                                    f"{self.ctx.size} batches, so each epoch trains on the data "
                                    f"{self.ctx.size} times; shard it where it is built "
                                    f"(.shard({self.ctx.size}, {self.ctx.hvd}.rank()))", "warning")
            return updated
        self.ctx.helpers.add("shard_dataset")
        msg = "dataset sharded by rank (_hvd_shard: each worker reads 1/size of it"
        if q in T.IN_MEMORY_SOURCES or self.a.has_steps_per_epoch:
            # In memory, its length is known when the script runs: equal counts per rank.
            self.note(original, msg + ", every worker the same number of elements)")
        else:
            self.note(original, msg + "); its length is not known before it is read, and every "
                                      "worker must run the same number of steps, so keep the "
                                      "number of records divisible by the number of workers or "
                                      "pass steps_per_epoch", "warning")
        return call("_hvd_shard", updated)
