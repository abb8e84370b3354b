"""Both targets: arrays shuffled with NumPy's global generator before they are sharded. Unseeded,
each worker draws its own order and then takes its share of it, so the shards overlap (some
samples twice, some never): the draws come from one generator seeded alike on every worker."""
from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from converters.script import tables as T
from converters.script.names import expr
from converters.script.transforms.base import RuleTransform


class SameShuffle(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.seeded = False

    def visit_Module(self, node: cst.Module):
        # A script that seeds NumPy itself already draws the same order on every worker.
        self.seeded = any(self.q(c.func) in T.NUMPY_SEEDS for c in m.findall(node, m.Call()))

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if self.seeded or q not in T.NUMPY_SHUFFLES:
            return updated
        prefix = "_hvd" if self.ctx.target == "horovod" else "_tfd"
        self.ctx.helpers.add("same_random")
        method = q.split(".")[-1]
        self.note(original, f"np.random.{method} draws from {prefix}_same_random, seeded "
                            f"{T.SEED_FOR_SHARDS} on every worker: the workers shuffle the data in "
                            f"the same order, so their shards split one order (unseeded, each "
                            f"drew its own and the shards overlapped)")
        return updated.with_changes(func=expr(f"{prefix}_same_random.{method}"))
