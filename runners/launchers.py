"""How a training script is launched: what it already does to distribute itself, and what
``--convert auto`` makes of a single-process one. Read statically, by the script converter's
own analysis; shared by the job kind (training.prepare) and its needs (needs.train_launcher)."""
from __future__ import annotations

import re
from pathlib import Path

from runners.models import FAILED, JobError

# Strategies that train on one machine in one process: a script using one is not yet
# multi-worker (the converter makes it so, or says why not).
SINGLE_MACHINE_STRATEGIES = ("tf.distribute.MirroredStrategy",)


def detect_target(source: str) -> str | None:
    """How the script already distributes itself ("horovod", "tf-distribute"), or None: the
    script converter's own analysis (calls and imports, never comments or strings)."""
    try:
        from converters.script.analysis import analyze
    except ImportError:
        raise JobError("the script converter is not installed, so tfdesk cannot tell whether "
                       "this script is already distributed") from None
    try:
        a = analyze(source)
    except SyntaxError:
        return None  # prepare reports the syntax error
    if a.already_distributed == "horovod":
        return "horovod"
    if a.already_distributed == "tf.distribute" and \
            a.strategy_class not in SINGLE_MACHINE_STRATEGIES:
        return "tf-distribute"
    return None


def auto_target(source: str) -> str:
    """What --convert auto makes of a single-process script for several workers: Horovod,
    unless the script uses Keras 3, whose gradients Horovod does not average; then tf.distribute."""
    try:
        from converters.script.analysis import analyze
        keras = analyze(source).keras
    except Exception:  # noqa: BLE001 - no converter or unreadable: the conversion says why
        return "horovod"
    return "tf-distribute" if keras == "keras3" else "horovod"


# A worker's line in a multi-process job's log: "[1]<stderr>:ValueError: ..." (horovodrun) or
# "[1] ValueError: ..." (tfdesk's own prefix for tf.distribute workers).
WORKER_ERROR = re.compile(r"^\[(\d+)\](?:<std\w+>)?:?\s?(\w+(?:Error|Exception)\b.*)$")


def worker_error(log_text: str) -> str:
    """The first exception a worker raised ("worker 1: FileNotFoundError: ..."): the cause,
    where the launcher's own last line only says that a worker failed."""
    for line in log_text.splitlines():
        m = WORKER_ERROR.match(line.strip())
        if m:
            return f"worker {m.group(1)}: {m.group(2)[:300]}"
    return ""


def settle(workdir: Path, log: Path | None, state: str, reason: str) -> tuple[str, str]:
    """A failed multi-worker training keeps the first worker's exception in its record, not
    the launcher's "one or more processes exited with non-zero status"."""
    if state != FAILED or log is None:
        return state, reason
    try:
        with open(log, "rb") as f:  # the job's log, in tfdesk's own records folder
            text = f.read(4 << 20).decode("utf-8", errors="replace")
    except OSError:
        return state, reason
    cause = worker_error(text)
    if not cause:
        return state, reason
    status = reason.split(":", 1)[0].strip()
    return FAILED, cause + (f" ({status})" if status else "")
