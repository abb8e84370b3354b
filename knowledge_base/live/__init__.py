"""What a live TensorFlow runtime says exists: the oracle the KB's facts are checked against.

:func:`probe` runs ``probe.py`` with the runtime's own interpreter (a subprocess: TensorFlow
is never imported into tfdesk) and returns what resolves there, what resolves but raises on
use, and the public names a walk of the runtime's API finds. :func:`raise_errors` runs short
user scripts there (``raise_probe.py``) and returns the errors they raise, as Python prints
them: the real messages pasted errors are checked against.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from knowledge_base.errors import KBError

PROBE = Path(__file__).with_name("probe.py")
RAISE_PROBE = Path(__file__).with_name("raise_probe.py")
OK, ABSENT, UNUSABLE = "ok", "absent", "unusable"


@dataclass
class LiveAPI:
    tf_version: str
    keras_version: str | None
    states: dict[str, str] = field(default_factory=dict)   # name -> ok | absent | unusable: ...
    walked: list[str] = field(default_factory=list)
    packages: dict[str, bool] = field(default_factory=dict)  # companion -> installed there

    def state(self, name: str) -> str:
        """ok, absent or unusable (the message dropped)."""
        return self.states.get(name, ABSENT).split(":", 1)[0]

    @property
    def minor(self) -> str:
        return ".".join(self.tf_version.split(".")[:2])


def _ask(python: Path, script: Path, request: dict, timeout: float) -> dict:
    """Run ``script`` with the runtime's interpreter on ``request``; its one JSON answer."""
    try:
        done = subprocess.run([str(python), str(script)], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout,
                              env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
                                   "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KBError(f"{python}: the runtime probe did not finish ({exc})") from None
    if done.returncode != 0:
        raise KBError(f"{python}: the runtime probe failed: {done.stderr.strip()[-800:]}")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise KBError(f"{python}: the runtime probe wrote no answer") from None


def probe(python: Path, names: list[str] = (), walk: list[str] = (),
          timeout: float = 900) -> LiveAPI:
    """Ask the runtime whose interpreter is ``python`` about ``names`` and walk ``walk``."""
    d = _ask(python, PROBE, {"names": list(names), "walk": list(walk)}, timeout)
    return LiveAPI(d["tf_version"], d.get("keras_version"), d["states"], d["walked"],
                   d.get("packages", {}))


@dataclass
class Raised:
    """What one user script did in a live runtime: the error as Python prints it, if any."""
    raised: bool
    type: str = ""
    message: str = ""     # the traceback's last lines: "AttributeError: module ..."
    traceback: str = ""   # the whole traceback, as the user would paste it


def raise_errors(python: Path, scripts: dict[str, str],
                 timeout: float = 900) -> tuple[str, dict[str, Raised]]:
    """Run each script (``id -> code``, after ``import tensorflow as tf``) in the runtime whose
    interpreter is ``python``; its TensorFlow version, and what each raised there."""
    d = _ask(python, RAISE_PROBE,
             {"scripts": [{"id": k, "code": v} for k, v in scripts.items()]}, timeout)
    return d["tf_version"], {k: Raised(**v) for k, v in d["results"].items()}
