"""Findings: what the converter changed and what it left for a human, tf_upgrade_v2 style."""
from __future__ import annotations

from dataclasses import asdict, dataclass

# info: a change was made; warning: check this by hand; error: could not be converted.
SEVERITIES = ("info", "warning", "error")


@dataclass(frozen=True)
class Finding:
    rule_id: str
    line: int
    col: int
    severity: str
    message: str

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self, filename: str = "script.py") -> str:
        return f"{filename}:{self.line}:{self.col}: {self.severity}: [{self.rule_id}] {self.message}"


def format_report(findings: list[Finding], filename: str = "script.py") -> str:
    return "\n".join(f.format(filename) for f in sorted(findings, key=lambda f: (f.line, f.col)))
