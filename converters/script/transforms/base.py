"""What every rule transform shares: its context, positions for findings, statement helpers."""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import PositionProvider

from converters.script.analysis import Analysis
from converters.script.findings import Finding
from converters.script.names import code


@dataclass
class RuleContext:
    analysis: Analysis
    target: str
    hvd: str = "hvd"                 # the name Horovod is imported as
    tf: str = "tf"                   # the name TensorFlow is imported as
    keras: str = "tf.keras"          # how the script spells Keras
    strategy: str = "strategy"       # the tf.distribute strategy variable
    hvd_module: str = "horovod.tensorflow.keras"

    @property
    def rank0(self) -> str:
        return f"{self.hvd}.rank() == 0"

    @property
    def size(self) -> str:
        return f"{self.hvd}.size()"

    @property
    def replicas(self) -> str:
        return f"{self.strategy}.num_replicas_in_sync"


class RuleTransform(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)
    rule_id = ""

    def __init__(self, ctx: RuleContext, rule_id: str = ""):
        super().__init__()
        self.ctx = ctx
        self.a = ctx.analysis
        self.rule_id = rule_id or self.rule_id
        self.findings: list[Finding] = []

    def note(self, node: cst.CSTNode, message: str, severity: str = "info") -> None:
        try:
            pos = self.get_metadata(PositionProvider, node)
            line, col = pos.start.line, pos.start.column + 1
        except KeyError:  # a node made by an earlier step of this transform
            line, col = 0, 0
        self.findings.append(Finding(self.rule_id, line, col, severity, message))

    def q(self, node: cst.BaseExpression) -> str | None:
        return self.a.q(node)


def mentions(node: cst.CSTNode, text: str) -> bool:
    return text in code(node)


def guard(stmt: cst.BaseStatement, test: str, why: str = "") -> cst.If:
    """``if test:`` around one statement, keeping its leading comments above the ``if``."""
    leading = getattr(stmt, "leading_lines", ())
    inner = stmt.with_changes(leading_lines=()) if leading else stmt
    comment = [cst.EmptyLine(comment=cst.Comment(f"# {why}"))] if why else []
    return cst.If(test=cst.parse_expression(test),
                  body=cst.IndentedBlock(body=[inner]),
                  leading_lines=[*leading, *comment])


def is_guarded_by(stack: list[cst.CSTNode], text: str) -> bool:
    return any(isinstance(n, cst.If) and text in code(n.test) for n in stack)
