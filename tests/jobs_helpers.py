"""Shared bits for the jobs tests: an engine on a temporary TFDESK_HOME, and small scripts.

Fast tests run their "training" scripts with this interpreter (they print what Keras prints);
the slow ones use the real runner environment with TensorFlow and Horovod."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from runners.engine import Engine, EngineConfig

REPO = Path(__file__).resolve().parents[1]


def runner_python() -> Path:
    return Path(os.environ.get("TFDESK_RUNNER_PYTHON") or REPO / ".venv-runner" / "bin" / "python")


def make_engine(home: Path, python: Path | None = None, start: bool = True, **kw) -> Engine:
    """A started engine (the scheduler when no other engine on ``home`` is)."""
    kw.setdefault("grace_s", 2.0)
    engine = Engine(EngineConfig(state_path=home / "state.sqlite", jobs_dir=home / "jobs",
                                 runner_python=python or Path(sys.executable), **kw))
    return engine.start() if start else engine


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source))
    return path


# Prints what model.fit(verbose=2) prints, writes a model file and a CSVLogger file.
FAKE_KERAS = """
import os, sys, time
n = int(os.environ.get("TFDESK_EPOCHS", "3"))
pause = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
for e in range(1, n + 1):
    print(f"Epoch {e}/{n}")
    time.sleep(pause)
    print(f"4/4 - 0s - loss: {1.0 / e:.4f} - accuracy: {0.5 + e / 10:.4f} - 251ms/epoch - 63ms/step")
import zipfile  # a .keras file as Keras writes it: a zip holding config.json
zipfile.ZipFile("model.keras", "w").writestr("config.json", "{}")
with open("metrics.csv", "w") as f:
    f.write("epoch,accuracy,loss\\n")
    for e in range(1, n + 1):
        f.write(f"{e - 1},{0.5 + e / 10},{1.0 / e}\\n")
"""

SLEEPER = """
import time
print("Epoch 1/1", flush=True)
time.sleep(60)
"""
