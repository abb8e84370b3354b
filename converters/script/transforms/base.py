"""What every rule transform shares: its context, positions for findings, statement helpers."""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from converters.script.analysis import Analysis
from converters.script.findings import Finding
from converters.script.names import calls, code, dotted, expr
from converters.script.positions import ANCHORS
from converters.script.walk import TRIVIA, children_of, walked


@dataclass
class RuleContext:
    analysis: Analysis
    target: str
    hvd: str = "hvd"                 # the name Horovod is imported as
    tf: str = "tf"                   # the name TensorFlow is imported as
    keras: str = "tf.keras"          # how the script spells Keras
    strategy: str = "strategy"       # the tf.distribute strategy variable
    hvd_module: str = "horovod.tensorflow.keras"
    warmup_epochs: int | None = None  # Horovod + fit(): ramp the learning rate up over these
    # ids of statements inserted by rules in this run, so later rules can line the rest of a
    # block up with the original statements (and their line numbers).
    inserted: set = field(default_factory=set)
    # original node -> (line, column): a converters.script.positions.Positions (or a dict)
    positions: dict = field(default_factory=dict)
    # Runtime helpers rules asked for (Horovod: converters.script.transforms.helpers); the
    # module setup, which runs last, writes them into the script.
    helpers: set = field(default_factory=set)

    @property
    def rank0(self) -> str:
        return f"{self.hvd}.rank() == 0"

    @property
    def size(self) -> str:
        return f"{self.hvd}.size()"

    def scaled(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` already holds ``hvd.size()`` (converted before)."""
        return calls(node, f"{self.hvd}.size")

    @property
    def tape_hvd(self) -> str:
        """Where DistributedGradientTape lives: horovod.tensorflow (imported as ``hvd`` for
        custom loops, or next to horovod.tensorflow.keras for a fit() with a custom step)."""
        if self.hvd_module == "horovod.tensorflow":
            return self.hvd
        self.helpers.add("tape_module")
        return f"{self.hvd}_tf"

    @property
    def replicas(self) -> str:
        return f"{self.strategy}.num_replicas_in_sync"


class RuleTransform(cst.CSTTransformer):
    rule_id = ""

    def __init__(self, ctx: RuleContext, rule_id: str = ""):
        super().__init__()
        self.ctx = ctx
        self.a = ctx.analysis
        self.rule_id = rule_id or self.rule_id
        self.findings: list[Finding] = []

    def note(self, node: cst.CSTNode, message: str, severity: str = "info",
             rule_id: str | None = None, col: int | None = None) -> None:
        """A finding at ``node``'s line; at its column unless ``col`` is given (1: the line)."""
        line, at = self.ctx.positions.get(node, (0, -1))  # (0, 0): a node a rule made
        self.findings.append(Finding(rule_id or self.rule_id, line,
                                     at + 1 if col is None else col, severity, message))

    def q(self, node: cst.BaseExpression) -> str | None:
        return self.a.q(node)

    def assignment(self, value: cst.CSTNode) -> cst.Assign | None:
        """The statement being visited, when it is ``target = value`` (``value`` original)."""
        owner = next((s for s in reversed(self.ctx.positions.stack)
                      if isinstance(s, cst.BaseSmallStatement)), None)
        return owner if isinstance(owner, cst.Assign) and owner.value is value else None


def guard(stmt: cst.BaseStatement, test: str, why: str = "") -> cst.If:
    """``if test:`` around one statement, keeping its leading comments above the ``if``."""
    return guard_all([stmt], test, why)


def guard_all(stmts: list, test: str, why: str = "") -> cst.If:
    """``if test:`` around statements, keeping the first one's leading comments above it."""
    first = stmts[0]
    leading = getattr(first, "leading_lines", ())
    inner = [first.with_changes(leading_lines=()) if leading else first, *stmts[1:]]
    comment = [cst.EmptyLine(comment=cst.Comment(f"# {why}"))] if why else []
    return cst.If(test=expr(test), body=cst.IndentedBlock(body=inner),
                  leading_lines=[*leading, *comment])


class Rank0Guarded(RuleTransform):
    """A rule that leaves alone what already runs under ``if hvd.rank() == 0:``."""

    def __init__(self, ctx: RuleContext, rule_id: str = ""):
        super().__init__(ctx, rule_id)
        self.guards: list[bool] = []  # one per enclosing if: is it the rank-0 test?

    @property
    def guarded(self) -> bool:
        return any(self.guards)

    def visit_If(self, node: cst.If) -> None:
        self.guards.append(self.ctx.rank0 in code(node.test))

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        self.guards.pop()
        return updated


def align(original_body, body, inserted: set) -> list:
    """Pair each statement of ``body`` with its original (None for statements rules inserted)."""
    originals = iter(original_body)
    return [(stmt, None if id(stmt) in inserted else next(originals, None)) for stmt in body]


# Not walked: nothing a rule rewrites lives inside. (f-strings are walked: a print(f"{int(v)}")
# may hold a call a rule must see.)
_LEAVES = {cst.Import, cst.ImportFrom, cst.SimpleString, cst.Integer, cst.Float, cst.Name,
           cst.Comment, cst.Decorator, cst.Parameters}


# Which rules hook which node types depends only on the rule classes: worked out once per
# process, not once per conversion (it was a fifth of a small script's time).
_SHAPES: dict = {}
_HOOKS_TRIVIA: dict = {}


def _hooked(kinds: tuple, prefix: str, node_type: type) -> tuple:
    """Indexes of the rule classes that really define ``prefix_NodeType`` (the base class has
    a no-op for every node type)."""
    name = f"{prefix}_{node_type.__name__}"
    base = getattr(cst.CSTTransformer, name, None)
    return tuple(i for i, k in enumerate(kinds) if getattr(k, name, base) is not base)


class Combined:
    """Runs every rule transform in one traversal, in rule order at each node.

    Each rule still sees the true original node (so findings carry original line numbers) and
    the node as the rules before it left it. When a rule changes a node's type (a statement
    wrapped in an ``if``), later rules do not see that node again.

    A node whose subtree no rule changed comes out as the original object, so code generation
    can copy its original text. The walk is tfdesk's own for that: LibCST's traversal rebuilds
    every node it passes (and was most of a conversion's time); this one rebuilds only the nodes
    on the way to a change, and never enters trivia (whitespace, commas, operators).
    """

    def __init__(self, rules: list[RuleTransform], stack: list | None = None):
        self.rules = rules
        self._kinds = tuple(type(r) for r in rules)
        # node type -> (visit hooks, leave hooks, walk its children?, is a statement)
        self._plans: dict = {}
        # The statements being visited, innermost last: Positions generates only those.
        self.stack = [] if stack is None else stack
        trivia = _HOOKS_TRIVIA.get(self._kinds)
        if trivia is None:  # worked out once per set of rule classes, not once per conversion
            trivia = _HOOKS_TRIVIA[self._kinds] = any(
                _hooked(self._kinds, p, t) for t in TRIVIA for p in ("visit", "leave"))
        if trivia:
            raise TypeError("a rule hooks whitespace or punctuation nodes, which this "
                            "traversal skips; hook the node that holds them")

    def _plan(self, node_type: type) -> tuple:
        shape = _SHAPES.get((self._kinds, node_type))
        if shape is None:
            # Nothing a rule rewrites lives inside an import, a string or trivia: not walking
            # them is most of the speed of a conversion.
            walk = node_type not in _LEAVES and node_type not in TRIVIA
            shape = _SHAPES[(self._kinds, node_type)] = (
                _hooked(self._kinds, "visit", node_type), _hooked(self._kinds, "leave", node_type),
                walk, node_type in ANCHORS)
        name = node_type.__name__
        plan = (tuple(getattr(self.rules[i], f"visit_{name}") for i in shape[0]),
                tuple(getattr(self.rules[i], f"leave_{name}") for i in shape[1]), shape[2], shape[3])
        self._plans[node_type] = plan
        return plan

    def transform(self, module: cst.Module) -> cst.Module:
        return self._walk(module)

    def _walk(self, node):
        cls = type(node)
        plan = self._plans.get(cls) or self._plan(cls)
        if plan[3]:
            self.stack.append(node)
        for method in plan[0]:
            method(node)
        updated = node
        # ... nor inside a plain dotted name (tf.keras.layers.Dense).
        if plan[2] and not (cls is cst.Attribute and dotted(node) is not None):
            changes = None
            for name in children_of(cls):
                value = getattr(node, name)
                if type(value) is list or type(value) is tuple:
                    new = None
                    for i, child in enumerate(value):
                        if not walked(child):
                            continue
                        got = self._walk(child)
                        if got is not child:
                            if new is None:
                                new = list(value)
                            new[i] = got
                    if new is not None:
                        changes = changes or {}
                        changes[name] = new
                elif walked(value):
                    got = self._walk(value)
                    if got is not value:
                        changes = changes or {}
                        changes[name] = got
            if changes:
                updated = node.with_changes(**changes)
        for method in plan[1]:
            if type(updated) is not cls:
                break
            updated = method(node, updated)
        if plan[3]:
            self.stack.pop()
        return updated

