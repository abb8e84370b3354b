"""How a training script is launched: what it already does to distribute itself, and what
``--convert auto`` makes of a single-process one. Read statically, by the script converter's
own analysis; shared by the job kind (training.prepare) and its needs (needs.train_launcher)."""
from __future__ import annotations

from runners.models import JobError

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
