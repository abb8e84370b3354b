"""tf.distribute: batch sizes in the script become per-worker; the global batch is scaled."""
from __future__ import annotations

import libcst as cst

from converters.script.names import code, find_arg, replace_arg, times
from converters.script.transforms.base import RuleTransform


class GlobalBatch(RuleTransform):
    def leave_Call(self, original, updated):
        if not isinstance(updated.func, cst.Attribute):
            return updated
        method = updated.func.attr.value
        if self.a.not_keras(updated.func.value):
            return updated
        if method == "batch":
            found = find_arg(updated, "batch_size", 0)
        elif method == "fit":
            found = find_arg(updated, "batch_size", None)
        else:
            return updated
        if found is None or self.ctx.replicas in code(found[1].value):
            return updated
        value = found[1].value
        if isinstance(value, cst.Name) and value.value == "None":
            return updated
        self.note(original, f"batch size {code(value).strip()} is per worker: global batch = "
                            f"{code(value).strip()} * {self.ctx.replicas}")
        return replace_arg(updated, found[0], times(value, self.ctx.replicas))
