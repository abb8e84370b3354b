"""What a live TensorFlow runtime says exists: the oracle the KB's facts are checked against.

:func:`probe` runs ``probe.py`` with the runtime's own interpreter (a subprocess: TensorFlow
is never imported into tfdesk) and returns what resolves there, what resolves but raises on
use, and the public names a walk of the runtime's API finds.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from knowledge_base.errors import KBError

PROBE = Path(__file__).with_name("probe.py")
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


def probe(python: Path, names: list[str] = (), walk: list[str] = (),
          timeout: float = 900) -> LiveAPI:
    """Ask the runtime whose interpreter is ``python`` about ``names`` and walk ``walk``."""
    request = json.dumps({"names": list(names), "walk": list(walk)})
    try:
        done = subprocess.run([str(python), str(PROBE)], input=request, capture_output=True,
                              text=True, timeout=timeout,
                              env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
                                   "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KBError(f"{python}: the runtime probe did not finish ({exc})") from None
    if done.returncode != 0:
        raise KBError(f"{python}: the runtime probe failed: {done.stderr.strip()[-800:]}")
    try:
        d = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise KBError(f"{python}: the runtime probe wrote no answer") from None
    return LiveAPI(d["tf_version"], d.get("keras_version"), d["states"], d["walked"],
                   d.get("packages", {}))
