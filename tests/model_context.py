"""What the model-conversion tests share: the runner environment's Python, and a tfdesk context
that converts with it, timed for few iterations (these tests check the plumbing;
benchmarks/models.py measures speed)."""
from __future__ import annotations

import os
from pathlib import Path

from bot.config import load_config
from bot.context import Context

REPO = Path(__file__).resolve().parents[1]
RUNNER = os.environ.get("TFDESK_RUNNER_PYTHON") or str(REPO / ".venv-runner" / "bin" / "python")


def model_context(tmp_path: Path) -> Context:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text("[models]\niterations = 5\nwarmup = 1\nbudget_s = 1.0\n"
                                      f"[runner]\npython = \"{RUNNER}\"\n")
    return Context(load_config({"TFDESK_HOME": str(home)}))
