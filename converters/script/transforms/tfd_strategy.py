"""tf.distribute: a script written for MirroredStrategy (the GPUs of one machine, one process)
runs on several workers with MultiWorkerMirroredStrategy. It already builds its model in the
strategy's scope, sizes its batch from num_replicas_in_sync and steps through strategy.run, so
only the strategy changes (created first, as MultiWorkerMirroredStrategy must be) plus the
chief-only files; the rules that add scope, batch and loss scaling stay out (rules.py)."""
from __future__ import annotations

from converters.script.names import expr
from converters.script.transforms.base import RuleTransform

SINGLE_MACHINE = {"tf.distribute.MirroredStrategy"}


class MultiWorkerStrategy(RuleTransform):
    def leave_Call(self, original, updated):
        if self.q(updated.func) not in SINGLE_MACHINE:
            return updated
        dropped = " (its device list and cross-device options do not apply across workers)" \
            if updated.args else ""
        self.note(original, f"MirroredStrategy (one machine) replaced by the "
                            f"MultiWorkerMirroredStrategy created at start ({self.ctx.strategy}){dropped}; "
                            f"the batch it sizes from num_replicas_in_sync is global across workers")
        return expr(self.ctx.strategy)
