"""The one error the script converter raises: bad input, or a script it refuses to convert."""
from __future__ import annotations


class ConversionError(Exception):
    """A problem with the script itself; the message names it and, where there is one, the line."""

    user_facing = True

    def __init__(self, message: str, line: int | None = None, rule_id: str = "input",
                 findings: list | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.rule_id = rule_id
        # When the conversion ran but found errors: every finding (errors and the rest), so a
        # caller can show them all; the converted script is not given out (use force=True).
        self.findings = list(findings or [])
