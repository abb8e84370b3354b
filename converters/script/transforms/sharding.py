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
        if self.q(updated.func) not in T.DATASET_SOURCES or id(original) in self.sharded:
            return updated
        msg = f"dataset sharded with .shard({self.ctx.size}, {self.ctx.hvd}.rank()): each worker reads 1/size of it"
        if not self.a.has_steps_per_epoch and "keras_fit" in self.a.styles:
            msg += ("; every worker must run the same number of steps, so keep the dataset size "
                    "divisible by the number of workers or pass steps_per_epoch")
            self.note(original, msg, "warning")
        else:
            self.note(original, msg)
        shard = cst.Attribute(value=operand(updated), attr=cst.Name("shard"))
        return call(shard, expr(self.ctx.size), expr(f"{self.ctx.hvd}.rank()"))
