"""Module-level setup right after the imports: Horovod init + GPU pinning, or the strategy."""
from __future__ import annotations

import libcst as cst

from converters.script.names import statements
from converters.script.transforms import distribute_helpers, helpers
from converters.script.transforms.tfd_strategy import SINGLE_MACHINE
from converters.script.transforms.base import RuleTransform


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_import_try(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.Try) and all(_is_import_line(s) for s in stmt.body.body)


def insertion_index(body) -> int:
    """Just after the last top-level import that comes before the first def/class/loop."""
    index = 0
    for i, stmt in enumerate(body):
        if _is_import_line(stmt) or _is_import_try(stmt):
            index = i + 1
        elif isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, cst.If):
            break
    return index


class _ModuleSetup(RuleTransform):
    def block(self) -> str:
        raise NotImplementedError

    def present(self, module: cst.Module) -> bool:
        raise NotImplementedError

    def message(self) -> str:
        raise NotImplementedError

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if self.present(updated):
            return updated
        body = list(updated.body)
        i = insertion_index(body)
        new = statements("\n" + self.block())  # a blank line before the setup
        if i < len(body):  # keep a blank line between the setup and what follows
            follow = body[i]
            # two after helper functions (PEP 8)
            want = 2 if isinstance(new[-1], (cst.FunctionDef, cst.ClassDef)) else 1
            have = 0
            for line in follow.leading_lines:
                if line.comment is not None:
                    break
                have += 1
            if have < want:
                body[i] = follow.with_changes(
                    leading_lines=[*[cst.EmptyLine()] * (want - have), *follow.leading_lines])
        j = insertion_index(original.body)
        self.note(original.body[j - 1] if j else original.body[0], self.message())
        self.ctx.inserted.update(id(n) for n in new)
        return updated.with_changes(body=[*body[:i], *new, *body[i:]])


class HorovodSetup(_ModuleSetup):
    """import horovod; hvd.init(); one GPU per local rank with memory growth; Keras 2 check."""

    def present(self, module):
        return any(_is_import_line(s) and "horovod" in module.code_for_node(s) for s in module.body)

    def message(self):
        return (f"added 'import {self.ctx.hvd_module} as {self.ctx.hvd}', {self.ctx.hvd}.init() and "
                f"GPU pinning: one GPU per local rank, with memory growth")

    def block(self) -> str:
        c = self.ctx
        lines = []
        if not self.a.tf_alias:
            lines.append(f"import tensorflow as {c.tf}")
        lines.append(f"import {c.hvd_module} as {c.hvd}")
        lines += helpers.imports(c)
        lines += [
            "",
            "# Horovod: one process per GPU. Start Horovod, then pin this process to the GPU of its",
            "# local rank and let memory grow, so several processes can share a machine.",
            f"{c.hvd}.init()",
            f"_gpus = {c.tf}.config.list_physical_devices(\"GPU\")",
            "for _gpu in _gpus:",
            f"    {c.tf}.config.experimental.set_memory_growth(_gpu, True)",
            "if _gpus:",
            f"    {c.tf}.config.set_visible_devices(_gpus[{c.hvd}.local_rank()], \"GPU\")",
        ]
        if c.hvd_module == "horovod.tensorflow.keras":
            lines += [
                "# Horovod averages gradients only with Keras 2: under Keras 3 (TF >= 2.16) its optimizer",
                "# wrapper silently trains each worker on its own. Use TF <= 2.15, or tf_keras with",
                "# TF_USE_LEGACY_KERAS=1.",
                f"if hasattr({c.keras}, \"ops\") or getattr({c.keras}, \"__version__\", \"2.\")[:2] != \"2.\":",
                "    raise SystemExit(\"this Horovod script needs Keras 2 (TF <= 2.15, or tf_keras with \"",
                "                     \"TF_USE_LEGACY_KERAS=1); Keras 3 is installed\")",
            ]
        return "\n".join(lines) + "\n" + helpers.code_for(c)


class StrategySetup(_ModuleSetup):
    """MultiWorkerMirroredStrategy created first, plus chief helpers for saving and logging."""

    def present(self, module):
        # convert() leaves already-distributed scripts alone, so this is only a safety net;
        # checking the analysis avoids generating the whole module's code again.
        return self.a.already_distributed == "tf.distribute" and \
            self.a.strategy_class not in SINGLE_MACHINE

    def message(self):
        return (f"added {self.ctx.strategy} = tf.distribute.MultiWorkerMirroredStrategy() (reads "
                f"TF_CONFIG) and _is_chief()/_chief_path() helpers for saving")

    def block(self) -> str:
        c = self.ctx
        lines = []
        if not self.a.tf_alias:
            lines.append(f"import tensorflow as {c.tf}")
        lines += [
            "# tf.distribute: one replica per worker; the cluster comes from TF_CONFIG. The strategy",
            "# must exist before any other TensorFlow work.",
            f"{c.strategy} = {c.tf}.distribute.MultiWorkerMirroredStrategy()",
            "",
            "",
            "def _is_chief():",
            "    resolver = " + c.strategy + ".cluster_resolver",
            "    task_type, task_id = resolver.task_type, resolver.task_id",
            "    if task_type is None or task_type == \"chief\":",
            "        return True",
            "    return task_type == \"worker\" and task_id == 0 and \"chief\" not in resolver.cluster_spec().as_dict()",
            "",
            "",
            "def _chief_path(path):",
            "    # Saving is collective under MultiWorkerMirroredStrategy: every worker saves, and only",
            "    # the chief's copy lands at the real path; the others write to a scratch directory (the",
            "    # same one for the same path, so a worker reads back what it saved).",
            "    if _is_chief():",
            "        return path",
            "    import os, tempfile",
            "    scratch = _chief_path.__dict__.setdefault(\"paths\", {})",
            "    if str(path) not in scratch:",
            "        scratch[str(path)] = os.path.join(tempfile.mkdtemp(prefix=\"tfdesk-worker-\"), os.path.basename(str(path)))",
            "    return scratch[str(path)]",
        ]
        return "\n".join(lines) + "\n" + distribute_helpers.code_for(c)
