"""Horovod: each worker reads its own shard of the input, right where the pipeline starts."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import call, expr, operand
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
        if q not in T.DATASET_SOURCES or id(original) in self.sharded:
            return updated
        if q in T.IN_MEMORY_SOURCES:
            # Its length is known when the script runs: every rank gets the same count.
            self.ctx.helpers.add("shard_dataset")
            self.note(original, "dataset sharded by rank (_hvd_shard: each worker reads 1/size "
                                "of it, every worker the same number of elements)")
            return call("_hvd_shard", updated)
        msg = f"dataset sharded with .shard({self.ctx.size}, {self.ctx.hvd}.rank()): each worker reads 1/size of it"
        if not self.a.has_steps_per_epoch:
            msg += ("; its length is not known before it is read, and every worker must run the "
                    "same number of steps, so keep the number of records divisible by the number "
                    "of workers or pass steps_per_epoch")
            self.note(original, msg, "warning")
        else:
            self.note(original, msg)
        shard = cst.Attribute(value=operand(updated), attr=cst.Name("shard"))
        return call(shard, expr(self.ctx.size), expr(f"{self.ctx.hvd}.rank()"))
