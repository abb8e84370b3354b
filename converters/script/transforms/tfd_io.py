"""tf.distribute inputs and files: batches of Keras dataset builders and of arrays given to fit()
become per-worker (the global batch is that times the replicas); summary writers, image dumps,
plots and rmtree run on the chief only; weights loaded from a file the chief alone wrote are
taken from the chief."""
from __future__ import annotations

import libcst as cst

from converters.script import tables as T
from converters.script.names import (add_kwarg, call, code, dotted, expr, find_arg, operand,
                                     replace_arg, times)
from converters.script.transforms.base import RuleTransform, guard
from converters.script.transforms.callbacks import is_fit
from converters.script.transforms.saving import save_call

CHIEF = "_is_chief()"
# What writes files beside the model: Horovod's table, plus tf.io.write_file (an image dump when
# it runs in a function or after training starts; before training it prepares data every worker
# needs, and stays).
WRITE_FUNCTIONS = T.RANK0_WRITE_FUNCTIONS | {"tf.io.write_file"}
# Keras' default batch sizes of the builders (and of fit() on arrays).
DEFAULT_BATCH = {"timeseries_dataset_from_array": "128"}
FIT_DEFAULT_BATCH = "32"


class _ChiefGuarded(RuleTransform):
    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.guards: list[bool] = []
        self.functions = 0

    @property
    def guarded(self) -> bool:
        return any(self.guards)

    def visit_If(self, node):
        self.guards.append(CHIEF in code(node.test))

    def leave_If(self, original, updated):
        self.guards.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.functions += 1

    def leave_FunctionDef(self, original, updated):
        self.functions -= 1
        return updated

    def after_training(self, node) -> bool:
        """Inside a function (a callback, a helper the loop calls), or after training starts."""
        if self.functions:
            return True
        line = self.ctx.positions.get(node, (0, 0))[0]
        starts = [v for k, v in self.a.evidence.items() if k.endswith(":training")]
        return bool(starts) and line > min(starts)


class ChiefWrites(_ChiefGuarded):
    """Summary writers (a no-op writer elsewhere), image dumps, plots and rmtree on the chief."""

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if q in T.SUMMARY_WRITERS and not self.guarded:
            other = T.SUMMARY_WRITERS[q].replace("tf.", f"{self.ctx.tf}.", 1)
            self.note(original, f"summaries written by the chief only ({other} on the other workers)")
            return operand(cst.IfExp(test=expr(CHIEF), body=updated, orelse=expr(other)))
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or self.guarded or not isinstance(updated.body[0], cst.Expr):
            return updated
        value = updated.body[0].value
        if not isinstance(value, cst.Call):
            return updated
        q = self.q(value.func)
        method = value.func.attr.value if isinstance(value.func, cst.Attribute) else None
        image_save = method == "save" and self._image(value.func.value)
        if not (q in WRITE_FUNCTIONS or method in T.RANK0_WRITE_METHODS or image_save):
            return updated
        if not (q and q.endswith("rmtree")) and not self.after_training(original):
            return updated  # data written before training: every worker needs its copy
        name = dotted(value.func) or code(value.func).strip()
        what = "deletes files" if q and q.endswith("rmtree") else "writes a file"
        self.note(original, f"{name}(...) {what}: the chief only (every worker would write the same)")
        return guard(updated, CHIEF)


    def _image(self, receiver) -> bool:
        """An image object: array_to_img(...) itself, or a name assigned from it."""
        if isinstance(receiver, cst.Call):
            return self.q(receiver.func) in T.IMAGE_MAKERS
        return any(c in T.IMAGE_MAKERS for c in self.a.assigned_from.get(dotted(receiver) or "", []))


class LoadFromChief(_ChiefGuarded):
    """After training, a file only the chief can be sure to have (ModelCheckpoint and saves land
    at the real path on the chief alone): every worker reads the chief's copy, sent to it by
    _tfd_from_chief (loading is collective, so every worker must load). A model saved with
    model.save is read back from each worker's own copy (_chief_path)."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.saved: set[str] = set()        # paths model.save / save_weights wrote

    def visit_Call(self, node):
        spec = save_call(self, node)
        if spec is not None:
            found = find_arg(node, *spec)
            if found is not None:
                self.saved.add(code(found[1].value).strip())

    def leave_Call(self, original, updated):
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "load_weights" \
                and not self.a.not_keras(updated.func.value):
            found = find_arg(updated, "filepath", 0)
        elif isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "restore" \
                and "tf.train.Checkpoint" in self.a.assigned_from.get(dotted(updated.func.value) or "", []):
            found = find_arg(updated, "save_path", 0)  # a tf.train.Checkpoint restored after training
        elif self.q(updated.func) in T.LOAD_FUNCTIONS:
            found = find_arg(updated, *T.LOAD_FUNCTIONS[self.q(updated.func)])
        else:
            return updated
        if found is None or self.guarded or not self.after_training(original):
            return updated
        path = code(found[1].value).strip()
        if "_tfd_from_chief" in path or "_chief_path" in path:
            return updated
        if path in self.saved:
            self.note(original, f"every worker reads back its own copy of {path} "
                                "(_chief_path: the chief's is the real file)")
            return replace_arg(updated, found[0], call("_chief_path", found[1].value))
        self.ctx.helpers.add("tfd_from_chief")
        self.note(original, f"{path} is read after training: every worker reads the chief's copy "
                            "(_tfd_from_chief sends it; files written during training are the chief's)")
        updated = replace_arg(updated, found[0], call("_tfd_from_chief", found[1].value))
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "load_weights":
            # model.load_weights(p) -> _tfd_load_weights(model, p): .weights.h5 files need it
            self.ctx.helpers.add("tfd_load_weights")
            first = cst.Arg(value=updated.func.value,
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            updated = updated.with_changes(func=cst.Name("_tfd_load_weights"),
                                           args=[first, *updated.args])
        return updated


class CollectiveSaves(RuleTransform):
    """A save the script makes on one worker only (``if current_host == hosts[0]:``): saving is
    collective under MultiWorkerMirroredStrategy (every worker must take part, and only the
    chief's copy lands at the real path), so one worker alone waits for the others for ever."""

    WORKER_WORDS = ("host", "rank", "chief", "task", "worker", "index")

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.tests: list[str] = []

    def visit_If(self, node):
        self.tests.append(code(node.test))

    def leave_If(self, original, updated):
        self.tests.pop()
        return updated

    def visit_Call(self, node):
        if save_call(self, node) is None or not self.tests:
            return
        test = next((t for t in reversed(self.tests)
                     if CHIEF not in t and any(w in t.lower() for w in self.WORKER_WORDS)), None)
        if test is None:
            return
        self.note(node, severity="error", col=1, message=(
            f"this save runs only where 'if {test.strip()}' holds, but saving is collective under "
            f"MultiWorkerMirroredStrategy: every worker must save (tfdesk sends the copies of "
            f"the others to a scratch directory). Save on every worker, without the test, and "
            f"convert again"))


class LocalPredict(_ChiefGuarded):
    """model.predict(...) after training: every worker predicts all of it by itself
    (_tfd_predict); the strategy would split it, and a single example leaves the other workers
    an empty batch, which fails."""

    def leave_Call(self, original, updated):
        if not (isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "predict"
                and updated.args and not self.a.not_keras(updated.func.value)):
            return updated
        if not self.after_training(original):
            return updated
        self.ctx.helpers.add("tfd_predict")
        model = code(updated.func.value).strip()
        self.note(original, f"{model}.predict(...) after training: each worker predicts all of its "
                            "input by itself (_tfd_predict; the strategy would split it across workers, "
                            "and one example leaves the others an empty batch, which fails)")
        first = cst.Arg(value=updated.func.value,
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(func=cst.Name("_tfd_predict"), args=[first, *updated.args])


# Dataset methods: a name assigned from a chain ending in one of them holds a dataset.
DATASET_METHODS = {"batch", "padded_batch", "prefetch", "shuffle", "map", "cache", "repeat",
                   "take", "skip", "filter", "unbatch", "rebatch", "with_options", "apply"}


class WorkerBatches(RuleTransform):
    """Keras dataset builders and fit() on arrays: their batch is one worker's; the global
    batch is that times the replicas (builders read the folder on every worker and each takes
    its share of every global batch by auto-sharding)."""

    def __init__(self, ctx, rule_id=""):
        super().__init__(ctx, rule_id)
        self.datasets: set[str] = set()

    def visit_Assign(self, node):
        value = node.value
        if isinstance(value, cst.Call) and (
                (isinstance(value.func, cst.Attribute) and value.func.attr.value in DATASET_METHODS)
                or (self.q(value.func) or "").startswith("tf.data.")
                or self.q(value.func) in T.DATASET_BUILDERS):
            self.datasets.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def leave_Call(self, original, updated):
        q = self.q(updated.func)
        if q in T.DATASET_BUILDERS:
            return self._builder(original, updated, q)
        if is_fit(updated, self.a) and find_arg(updated, "batch_size", None) is None:
            return self._fit(original, updated)
        return updated

    def _builder(self, original, updated, q):
        found = find_arg(updated, "batch_size", None)
        default = DEFAULT_BATCH.get(q.split(".")[-1], FIT_DEFAULT_BATCH)
        if found is None:
            self.note(original, f"{q.split('.')[-1]} batches by {default} (Keras' default) per worker: "
                                f"global batch = {default} * {self.ctx.replicas}")
            return add_kwarg(updated, "batch_size", expr(f"{default} * {self.ctx.replicas}"))
        value = found[1].value
        if (isinstance(value, cst.Name) and value.value == "None") or self.ctx.replicas in code(value):
            return updated
        self.note(original, f"batch size {code(value).strip()} is per worker: global batch = "
                            f"{code(value).strip()} * {self.ctx.replicas}")
        return replace_arg(updated, found[0], times(value, self.ctx.replicas))

    def _fit(self, original, updated):
        x = find_arg(updated, "x", 0)
        if x is None or isinstance(x[1].value, cst.Call) or "steps_per_epoch" in code(updated):
            return updated
        value = x[1].value
        if dotted(value) in self.datasets:
            return updated
        built = self.a.assigned_from.get(dotted(value) or "", [])
        if any(c and (c.startswith("tf.data.") or c in T.DATASET_BUILDERS) for c in built):
            return updated
        if built and all(c and c.split(".")[0] in ("np", "numpy") for c in built):
            batch = expr(f"{FIT_DEFAULT_BATCH} * {self.ctx.replicas}")
        else:
            self.ctx.helpers.add("tfd_batch")
            batch = call("_tfd_batch", value, expr(FIT_DEFAULT_BATCH))
        self.note(original, f"fit() without batch_size reads arrays {FIT_DEFAULT_BATCH} at a time "
                            f"(Keras' default) per worker: global batch = {FIT_DEFAULT_BATCH} * "
                            f"{self.ctx.replicas} (datasets keep their own batches)")
        return add_kwarg(updated, "batch_size", batch)


class ElementShards(RuleTransform):
    """Datasets read from files: MultiWorkerMirroredStrategy shards them by file by default, so
    each worker reads whole files of its own and a global batch is not the batch one process
    would read (with fewer files than workers, some workers get none). Split by element, the
    workers share every global batch as one process reads them."""

    def leave_Call(self, original, updated):
        if self.q(updated.func) not in T.FILE_DATASETS:
            return updated
        self.ctx.helpers.add("tfd_by_element")
        self.note(original, "read by every worker and split by element (AutoShardPolicy.DATA): the "
                            "workers share each global batch in the order one process reads it")
        return call("_tfd_by_element", updated)
