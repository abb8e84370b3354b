"""tf.distribute: a script written for MirroredStrategy (the GPUs of one machine, one process)
runs on several workers with MultiWorkerMirroredStrategy. It already builds its model in the
strategy's scope, sizes its batch from num_replicas_in_sync and steps through strategy.run, so
only the strategy changes (created first, as MultiWorkerMirroredStrategy must be) plus the
chief-only files; the rules that add scope, batch and loss scaling stay out (rules.py)."""
from __future__ import annotations

from converters.script.names import dotted, expr
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


# Strategy factories of model gardens: the script makes its own strategy from a flag.
STRATEGY_FACTORIES = ("get_distribution_strategy", "get_strategy_scope")


class OwnStrategy(RuleTransform):
    """A script that picks its tf.distribute strategy through a helper (tensorflow/models'
    distribute_utils.get_distribution_strategy(flag)): a second strategy on top would make two
    sets of replicas; it is refused with how to run it multi-worker itself."""

    def leave_Call(self, original, updated):
        name = dotted(updated.func) or ""
        if name.split(".")[-1] not in STRATEGY_FACTORIES:
            return updated
        if not self.findings:  # once: the factory and its scope helper come together
            self.note(original, severity="error", col=1, message=(
                f"the script makes its own tf.distribute strategy ({name}): a second one would "
                f"train two sets of replicas. Choose its multi-worker strategy with its own "
                f"setting (tensorflow/models: --distribution_strategy=multi_worker_mirrored, "
                f"with TF_CONFIG set on each worker) and run it unconverted"))
        return updated
