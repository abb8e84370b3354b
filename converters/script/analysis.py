"""The analysis pass: what kind of training script this is, before anything is rewritten."""
from __future__ import annotations

from dataclasses import dataclass, field

import ast
import copy

import libcst as cst

from converters.script import tables as T
from converters.script.names import canonical, dotted, qualified
from converters.script.names import ast_dotted as _dotted

STYLES = ("keras_fit", "custom_loop", "tf1_session", "estimator")


@dataclass
class Analysis:
    styles: list[str] = field(default_factory=list)
    # Which Keras the script uses: "tf.keras", "keras" (standalone; 2.x or 3 by install),
    # "tf_keras", "keras3" (uses Keras 3-only APIs), or None.
    keras: str | None = None
    keras3_evidence: list[tuple[int, str]] = field(default_factory=list)
    already_distributed: str | None = None  # "horovod" or "tf.distribute"
    distributed_line: int | None = None
    has_training: bool = False
    evidence: dict[str, int] = field(default_factory=dict)  # style -> first line seen
    # For the transforms (not part of the public dict):
    aliases: dict[str, str] = field(default_factory=dict)
    tf_alias: str | None = None
    keras_alias: str | None = None
    names: set[str] = field(default_factory=set)
    model_classes: set[str] = field(default_factory=set)
    builders: set[str] = field(default_factory=set)
    step_functions: set[str] = field(default_factory=set)
    eager_step_functions: set[str] = field(default_factory=set)  # no @tf.function
    schedule_names: set[str] = field(default_factory=set)
    file_callback_names: set[str] = field(default_factory=set)
    estimator_names: set[str] = field(default_factory=set)
    loss_object_names: set[str] = field(default_factory=set)
    # Loss objects kept on an object (self.loss_fn = keras.losses.X()): attribute names.
    loss_object_attributes: set[str] = field(default_factory=set)
    # Layer subclasses of the script (model classes are layers too): an "endpoint" layer may
    # compute a loss in call() and add_loss() it.
    layer_classes: set[str] = field(default_factory=set)
    metric_names: set[str] = field(default_factory=set)  # train_loss = tf.keras.metrics.Mean()
    non_keras_names: set[str] = field(default_factory=set)  # e.g. scaler = StandardScaler()
    # name -> what each assignment to it calls (canonical name, or None for anything else)
    assigned_from: dict[str, list] = field(default_factory=dict)
    variable_names: set[str] = field(default_factory=set)  # step = tf.Variable(0); ckpt.step
    has_steps_per_epoch: bool = False
    first_import_line: int = 1
    # The tf.distribute strategy class the script creates (canonical name), if any.
    strategy_class: str | None = None
    # Keras fit() with a custom step: Model subclasses whose train_step takes gradients with a
    # tape (line of each); they train through fit(), not a custom loop.
    train_steps: dict[str, int] = field(default_factory=dict)
    # Layers with vocabulary state (StringLookup, ...): class name -> first line.
    lookup_layers: dict[str, int] = field(default_factory=dict)
    # init = tf.compat.v1.global_variables_initializer(): names of initializer ops.
    initializer_names: set[str] = field(default_factory=set)
    # Optimizers whose Keras 3 apply()/stateless_apply() the script calls (dotted receivers).
    keras3_appliers: set[str] = field(default_factory=set)
    _q_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict:
        keep = ("styles", "keras", "already_distributed", "distributed_line", "has_training",
                "evidence", "strategy_class", "train_steps")
        # Copied field by field: asdict() would deep-copy every field, syntax nodes included.
        out = {k: copy.deepcopy(getattr(self, k)) for k in keep}
        out["keras3_evidence"] = [{"line": ln, "api": api} for ln, api in self.keras3_evidence]
        return out

    def q(self, node: cst.BaseExpression) -> str | None:
        # Every rule asks this of the calls it sees, so it is kept per node for the conversion
        # (the node is kept with it: an id is only unique while its object lives).
        hit = self._q_cache.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        name = canonical(qualified(node, self.aliases))
        self._q_cache[id(node)] = (node, name)
        return name

    def not_keras(self, receiver: cst.BaseExpression) -> bool:
        """True when ``receiver.fit()`` / ``.save()`` is surely not Keras (numpy, sklearn...)."""
        if isinstance(receiver, cst.Call):
            full = qualified(receiver.func, self.aliases)
            return bool(full) and full.split(".")[0] in T.NON_KERAS_LIBRARIES
        name = dotted(receiver)
        if not name:
            return False
        head = name.split(".")[0]
        return head in T.NON_TF_RECEIVERS or head in self.non_keras_names or \
            (self.aliases.get(head, "").split(".")[0] in T.NON_KERAS_LIBRARIES)


class _Visitor(ast.NodeVisitor):
    """Reads the ``ast`` tree (already parsed for the syntax check): several times faster than
    walking the LibCST tree, and the analysis needs no formatting."""

    def __init__(self, a: Analysis):
        self.a = a
        self.funcs: list[dict] = []  # stack of {"name", "creates", "trains", "returns", "calls"}
        self.all_funcs: list[dict] = []
        self.classes: list[str] = []  # enclosing class names, innermost last

    def in_train_step(self) -> str | None:
        """The model class when the code being read is its train_step method (a fit() step)."""
        if self.funcs and self.classes and self.funcs[-1]["name"] == "train_step" \
                and self.classes[-1] in self.a.model_classes:
            return self.classes[-1]
        return None

    def qualified(self, node) -> str | None:
        name = _dotted(node)
        if not name:
            return None
        head, _, rest = name.partition(".")
        head = self.a.aliases.get(head, head)
        return f"{head}.{rest}" if rest else head

    def q(self, node) -> str | None:
        return canonical(self.qualified(node))

    def not_keras(self, receiver) -> bool:
        if isinstance(receiver, ast.Call):
            full = self.qualified(receiver.func)
            return bool(full) and full.split(".")[0] in T.NON_KERAS_LIBRARIES
        name = _dotted(receiver)
        if not name:
            return False
        head = name.split(".")[0]
        return head in T.NON_TF_RECEIVERS or head in self.a.non_keras_names or \
            (self.a.aliases.get(head, "").split(".")[0] in T.NON_KERAS_LIBRARIES)

    def style(self, style: str, node, training: bool = False):
        if style not in self.a.styles:
            self.a.styles.append(style)
            self.a.evidence[style] = node.lineno
        if training:
            self.a.has_training = True
            self.a.evidence.setdefault(f"{style}:training", node.lineno)
        if self.funcs:
            self.funcs[-1]["trains"] = True

    # imports -------------------------------------------------------------------------
    def _alias(self, local: str, full: str, node):
        self.a.aliases[local] = full
        self.a.names.add(local)
        if full == "tensorflow" or full == "tensorflow.compat.v2":
            self.a.tf_alias = self.a.tf_alias or local
        if full.startswith("horovod"):
            self._distributed("horovod", node)
        top = full.split(".")[0]
        if top == "keras":
            self.a.keras = self.a.keras if self.a.keras == "keras3" else "keras"
            if full == "keras":
                self.a.keras_alias = local
        elif top == "tf_keras":
            self.a.keras = "tf_keras"
            if full == "tf_keras":
                self.a.keras_alias = local
        elif full.startswith("tensorflow.keras") and self.a.keras is None:
            self.a.keras = "tf.keras"
        self._keras3(full, node)

    def visit_Import(self, node: ast.Import):
        for n in node.names:
            if n.asname:
                self._alias(n.asname, n.name, node)
            else:
                top = n.name.split(".")[0]
                self._alias(top, top, node)
                if n.name != top:
                    self._alias(n.name, n.name, node)
        if not self.funcs:
            self.a.first_import_line = min(self.a.first_import_line, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom):
        if not node.module or node.level:
            return
        for n in node.names:
            if n.name != "*":
                self._alias(n.asname or n.name, f"{node.module}.{n.name}", node)

    # code --------------------------------------------------------------------------
    def _distributed(self, kind: str, node):
        if not self.a.already_distributed:
            self.a.already_distributed = kind
            self.a.distributed_line = node.lineno

    def _keras3(self, full: str, node):
        if any(full == p or full.startswith(p + ".") for p in T.KERAS3_ONLY_PREFIXES) \
                or canonical(full) in T.KERAS3_ONLY_NAMES:
            self.a.keras3_evidence.append((node.lineno, full))
            self.a.keras = "keras3"

    def visit_Name(self, node: ast.Name):
        self.a.names.add(node.id)

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, str) and "KERAS_BACKEND" in node.value:
            self.a.keras3_evidence.append((node.lineno, "KERAS_BACKEND"))
            self.a.keras = "keras3"

    def visit_Attribute(self, node: ast.Attribute):
        name = _dotted(node)
        if name is None:
            self.generic_visit(node)
            return
        self.a.names.add(name.split(".")[0])
        full = self.qualified(node)
        if full:
            self._keras3(full, node)
        if full and full.startswith("tensorflow.keras") and self.a.keras is None:
            self.a.keras = "tf.keras"

    def visit_ClassDef(self, node: ast.ClassDef):
        for b in node.bases:
            if self.q(b) in T.MODEL_CONSTRUCTORS or (isinstance(b, ast.Name)
                                                     and b.id in self.a.model_classes):
                self.a.model_classes.add(node.name)
            if self.q(b) in T.LAYER_BASES or (isinstance(b, ast.Name) and b.id in self.a.layer_classes):
                self.a.layer_classes.add(node.name)
        if node.name in self.a.model_classes:
            self.a.layer_classes.add(node.name)
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef):
        f = {"name": node.name, "creates": False, "trains": False, "returns": False,
             "tape": False, "calls": set(), "cls": self.classes[-1] if self.classes else None,
             "compiled": any("function" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
                             for d in node.decorator_list)}
        self.a.names.add(node.name)
        self.funcs.append(f)
        self.all_funcs.append(f)
        self.generic_visit(node)
        self.funcs.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Return(self, node: ast.Return):
        if self.funcs and node.value is not None:
            self.funcs[-1]["returns"] = True
            if isinstance(node.value, ast.Call):  # a loss factory: def make_loss(): return X()
                q = self.q(node.value.func)
                if q and q.startswith(T.LOSS_PREFIX) and q.split(".")[-1][:1].isupper():
                    self.funcs[-1]["returns_loss"] = True
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign):
        callee = self.q(node.value.func) if isinstance(node.value, ast.Call) else None
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.a.assigned_from.setdefault(t.id, []).append(callee)
        if isinstance(node.value, ast.Call):
            q = self.q(node.value.func)
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if q in T.SCHEDULES:
                self.a.schedule_names.update(targets)
            if q in T.TF1_INITIALIZERS:
                self.a.initializer_names.update(targets)
            full = self.qualified(node.value.func)
            if full and full.split(".")[0] in T.NON_KERAS_LIBRARIES:
                self.a.non_keras_names.update(targets)
            if q in T.FILE_CALLBACKS:
                self.a.file_callback_names.update(targets)
            self._variables(node)
            if q and q.startswith(T.LOSS_PREFIX) and q.split(".")[-1][:1].isupper():
                self.a.loss_object_names.update(targets)
                self.a.loss_object_attributes.update(
                    t.attr for t in node.targets if isinstance(t, ast.Attribute))
            if q and q.startswith(T.METRIC_PREFIX) and q.split(".")[-1][:1].isupper():
                self.a.metric_names.update(targets)
                self.a.metric_names.update(_dotted(t) for t in node.targets
                                           if isinstance(t, ast.Attribute) and _dotted(t))
            if q and (q.startswith("tf.estimator.") or q.startswith("tf1.estimator.")) \
                    and q.split(".")[-1].endswith(("Estimator", "Classifier", "Regressor")):
                self.a.estimator_names.update(targets)
        self.generic_visit(node)

    def _optimizer(self, receiver) -> bool:
        """Whether ``receiver`` is an optimizer: built from a Keras optimizer class here, or
        named like one (``self.optimizer``, ``opt``)."""
        name = _dotted(receiver)
        if not name:
            return False
        built = self.a.assigned_from.get(name, [])
        return any(c in T.KERAS_OPTIMIZERS for c in built) or \
            name.split(".")[-1] in ("optimizer", "opt", "optim") or name.endswith("_optimizer")

    def _is_variable(self, call) -> bool:
        return isinstance(call, ast.Call) and (self.qualified(call.func) or "").endswith(".Variable")

    def _variables(self, node: ast.Assign):
        """``step = tf.Variable(0)`` and ``ckpt = tf.train.Checkpoint(step=tf.Variable(1))``."""
        target = _dotted(node.targets[0]) if len(node.targets) == 1 else None
        if not target:
            return
        if self._is_variable(node.value):
            self.a.variable_names.add(target)
        elif (self.qualified(node.value.func) or "").endswith("train.Checkpoint"):
            self.a.variable_names.update(f"{target}.{kw.arg}" for kw in node.value.keywords
                                         if kw.arg and self._is_variable(kw.value))

    def visit_With(self, node: ast.With):
        for item in node.items:
            if isinstance(item.context_expr, ast.Call):
                q = self.q(item.context_expr.func)
                if q and q.endswith("GradientTape"):
                    model = self.in_train_step()
                    if model:
                        self.a.train_steps.setdefault(model, node.lineno)
                    else:
                        self.style("custom_loop", node)
                    if self.funcs:
                        self.funcs[-1]["tape"] = True
                if q in T.TF1_SESSIONS:
                    self.style("tf1_session", node, training=True)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        func = node.func
        q = self.q(func)
        keywords = {k.arg for k in node.keywords}
        if self.funcs and isinstance(func, ast.Name):
            self.funcs[-1]["calls"].add(func.id)
        if q:
            if q.startswith("horovod"):
                self._distributed("horovod", node)
            if q in T.STRATEGIES:
                self._distributed("tf.distribute", node)
                self.a.strategy_class = self.a.strategy_class or q
            if q in T.LOOKUP_LAYERS:
                self.a.lookup_layers.setdefault(q.split(".")[-1], node.lineno)
            if q in T.MODEL_CONSTRUCTORS or q in T.KERAS_OPTIMIZERS or q in T.TF1_OPTIMIZERS:
                if self.funcs:
                    self.funcs[-1]["creates"] = True
            if q.endswith("GradientTape") and not self.in_train_step():
                self.style("custom_loop", node)
            if q in T.TF1_SESSIONS:
                self.style("tf1_session", node, training=True)
            if (q.startswith("tf.estimator.") or q.startswith("tf1.estimator.")) \
                    and q.split(".")[-1].endswith(("Estimator", "Classifier", "Regressor")):
                self.style("estimator", node)
        if isinstance(func, ast.Name) and func.id in self.a.model_classes and self.funcs:
            self.funcs[-1]["creates"] = True
        if isinstance(func, ast.Attribute):
            attr = func.attr
            recv = _dotted(func.value)
            if attr == "fit" and not self.not_keras(func.value):
                self.style("keras_fit", node, training=True)
                if "steps_per_epoch" in keywords:
                    self.a.has_steps_per_epoch = True
            elif attr == "compile" and self.funcs:
                self.funcs[-1]["creates"] = True
            elif attr == "apply_gradients":
                if not self.in_train_step():
                    self.style("custom_loop", node, training=True)
            elif attr in T.KERAS3_OPTIMIZER_METHODS and self._optimizer(func.value):
                # optimizer.apply(grads, variables): a Keras 3 training step
                self.a.keras3_evidence.append((node.lineno, f"optimizer.{attr}"))
                self.a.keras = "keras3"
                self.a.keras3_appliers.add(recv)
                model = self.in_train_step()
                if model:  # a Keras 3 train_step: fit() trains, not a loop of the script's own
                    self.a.train_steps.setdefault(model, node.lineno)
                else:
                    self.style("custom_loop", node, training=True)
            elif attr == "minimize" and ("tf1_session" in self.a.styles or "estimator" in self.a.styles
                                         or (isinstance(func.value, ast.Call)
                                             and self.q(func.value.func) in T.TF1_OPTIMIZERS)):
                style = "estimator" if "estimator" in self.a.styles else "tf1_session"
                self.style(style, node, training=True)
            elif attr == "train" and (recv in self.a.estimator_names or "input_fn" in keywords):
                self.style("estimator", node, training=True)
        self.generic_visit(node)


def analyze(source: str | ast.AST) -> Analysis:
    """Analyse a script (its text, or the ``ast`` tree of it); nothing is executed."""
    a = Analysis()
    v = _Visitor(a)
    v.visit(ast.parse(source) if isinstance(source, str) else source)
    # Builders: functions that create a model or optimizer and return it, without training.
    # Their call sites are where tf.distribute needs its scope.
    funcs = v.all_funcs
    changed = True
    while changed:
        changed = False
        for f in funcs:
            if f["name"] in a.builders or not f["returns"] or f["trains"] or f["tape"]:
                continue
            if f["creates"] or f["calls"] & (a.builders | a.model_classes):
                a.builders.add(f["name"])
                changed = True
    # A class whose __init__ builds a model or optimizer (a trainer object): building it
    # creates variables, so its call sites need the strategy's scope like a builder's.
    a.builders |= {f["cls"] for f in funcs if f["name"] == "__init__" and f["creates"]
                   and f["cls"] and f["cls"] not in a.model_classes}
    a.step_functions = {f["name"] for f in funcs if f["tape"]}
    # Names assigned from a loss factory of the script hold loss objects too.
    factories = {f["name"] for f in funcs if f.get("returns_loss")}
    a.loss_object_names |= {name for name, callees in a.assigned_from.items()
                            if factories & set(callees)}
    a.eager_step_functions = {f["name"] for f in funcs if f["tape"] and not f["compiled"]}
    if "custom_loop" in a.styles and "custom_loop:training" not in a.evidence:
        a.styles.remove("custom_loop")  # a tape without apply_gradients is not training
        a.evidence.pop("custom_loop", None)
    if "estimator" in a.styles and "estimator:training" not in a.evidence:
        a.has_training = a.has_training or False
    return a
