"""tfdesk's run tracking inside a training job: a Keras callback added to every ``fit``.

No code in the user's script: an import hook waits for the module that defines Keras'
``fit`` (Keras 2, tf_keras, Keras 3 on any backend) and wraps ``fit`` so that it adds one
callback. The callback prints what tfdesk stores, on the job's own output, which tfdesk
already reads (rank 0 only):

    TFDESK_METRIC {"epoch": 3, "loss": 0.41, "val_loss": 0.47}     every epoch, exact values
    TFDESK_STEP {"step": 120, "loss": 0.43}                         every TFDESK_TRACK_EVERY steps

Batch logs are read only on the steps that are printed, so a GPU is not synchronised on
every step. A script that trains without ``fit`` (a custom loop) and writes TensorBoard
summaries is read at its exit with TensorBoard's own reader, when the runner has it: each
scalar becomes a ``TFDESK_STEP`` line at its step. Standard library only otherwise;
``TFDESK_TRACK=0`` turns it all off.
"""
from __future__ import annotations

import atexit
import importlib.abc
import json
import math
import os
import sys

# module defining fit -> (class with fit, module with the Callback base class)
TARGETS = {
    "keras.src.engine.training": ("Model", "keras.src.callbacks"),
    "tf_keras.src.engine.training": ("Model", "tf_keras.src.callbacks"),
    "keras.engine.training": ("Model", "keras.callbacks"),
    "keras.src.backend.tensorflow.trainer": ("TensorFlowTrainer", "keras.src.callbacks"),
    "keras.src.backend.jax.trainer": ("JAXTrainer", "keras.src.callbacks"),
    "keras.src.backend.torch.trainer": ("TorchTrainer", "keras.src.callbacks"),
}
CALLBACKS_ARG = 5  # fit(x, y, batch_size, epochs, verbose, callbacks, ...)
MARK = "_tfdesk_tracked"
FIT_RAN: list[bool] = []
MAX_EVENT_FILES = 50
MAX_STEPS = 5000  # steps printed from event files (evenly thinned beyond)


def _floats(logs) -> dict:
    out = {}
    for key, value in (logs or {}).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[str(key)] = number
    return out


def _emit(tag: str, data: dict) -> None:
    sys.stdout.write(f"{tag} {json.dumps(data)}\n")
    sys.stdout.flush()


def callback_class(base):
    class TfdeskTracker(base):
        """Prints epoch and (every ``every`` steps) batch metrics for tfdesk."""

        def __init__(self, every: int):
            super().__init__()
            self.every = max(1, every)
            self.step = 0
            # Keras 2: hand us the batch logs as tensors; we convert only those we print.
            self._supports_tf_logs = True

        def on_train_batch_end(self, batch, logs=None):
            self.step += 1
            if self.step % self.every == 0:
                values = _floats(logs)
                if values:
                    _emit("TFDESK_STEP", {"step": self.step, **values})

        def on_epoch_end(self, epoch, logs=None):
            values = _floats(logs)
            if values:
                _emit("TFDESK_METRIC", {"epoch": int(epoch) + 1, **values})

    return TfdeskTracker


def _wrap(cls, callbacks_module: str) -> None:
    fit = cls.__dict__.get("fit")
    if fit is None or getattr(fit, MARK, False):
        return
    every = int(os.environ.get("TFDESK_TRACK_EVERY", "10") or 10)
    made: dict = {}

    def tracked_fit(self, *args, **kwargs):
        FIT_RAN.append(True)
        if "tracker" not in made:
            base = getattr(importlib.import_module(callbacks_module), "Callback")
            made["tracker"] = callback_class(base)
        tracker_cls = made["tracker"]
        if len(args) > CALLBACKS_ARG:
            args = list(args)
            args[CALLBACKS_ARG] = _with(args[CALLBACKS_ARG], tracker_cls, every)
        else:
            kwargs["callbacks"] = _with(kwargs.get("callbacks"), tracker_cls, every)
        return fit(self, *args, **kwargs)

    setattr(tracked_fit, MARK, True)
    tracked_fit.__wrapped__ = fit
    tracked_fit.__name__, tracked_fit.__doc__ = fit.__name__, fit.__doc__
    cls.fit = tracked_fit


def _with(callbacks, tracker_cls, every):
    if callbacks is None:
        return [tracker_cls(every)]
    if not isinstance(callbacks, (list, tuple)):
        return callbacks  # a CallbackList the script built itself: left as it is
    if any(isinstance(c, tracker_cls) for c in callbacks):
        return callbacks
    return [*callbacks, tracker_cls(every)]


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in TARGETS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module
        cls_name, callbacks_module = TARGETS[name]

        def exec_module(module):
            original(module)
            cls = getattr(module, cls_name, None)
            if cls is not None:
                _wrap(cls, callbacks_module)

        loader.exec_module = exec_module
        return spec


def rank() -> int:
    """This process's worker rank: Horovod's (gloo or MPI), else tf.distribute's TF_CONFIG
    task index; 0 for a single process."""
    for key in ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    try:
        task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {}
        return int(task.get("index", 0)) if task.get("type", "worker") in ("worker", "chief") \
            and not (task.get("type") == "worker" and _has_chief()) else 1
    except (ValueError, TypeError, AttributeError):
        return 0


def _has_chief() -> bool:
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster") or {}
    return bool(cluster.get("chief"))


# Set by the runner when a launcher starts the workers (horovodrun: HOROVOD_RANK): the hook
# acts only in a process that has that variable, i.e. a worker running the user's script. The
# launcher and its helpers (horovodrun's spawned middlemen) load this hook too, from the same
# PYTHONPATH; reading TensorBoard files at their exit imported TensorFlow while they shut
# down and crashed them (signal 11) after the workers had finished.
WORKER_MARK = "TFDESK_TRACK_WORKER_VAR"
INSTALLED_IN: list[int] = []


def install() -> None:
    """Wrap ``fit`` in the first worker only: the others' figures are the same run's, and
    tfdesk reads rank 0 alone. Nothing in a launcher or its helpers."""
    mark = os.environ.get(WORKER_MARK, "")
    if os.environ.get("TFDESK_TRACK", "1") == "0" or rank() != 0 or \
            (mark and mark not in os.environ):
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
        INSTALLED_IN.append(os.getpid())
        atexit.register(_summaries_at_exit)


def _event_dirs(root: str) -> list[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if any(f.startswith("events.out.tfevents.") for f in filenames):
            found.add(dirpath)
        if len(found) >= MAX_EVENT_FILES:
            break
    return sorted(found)


def _summaries_at_exit() -> None:
    """A custom loop's TensorBoard scalars, read with TensorBoard's reader (no fit ran), in
    the process that ran the script (never in a child it forked)."""
    if FIT_RAN or INSTALLED_IN != [os.getpid()]:
        return
    try:
        dirs = _event_dirs(os.getcwd())
        if not dirs:
            return
        from tensorboard.backend.event_processing import event_accumulator as ea
        from tensorboard.util import tensor_util
    except Exception:  # noqa: BLE001 - no TensorBoard in this runner: nothing to read
        return
    steps: dict[int, dict] = {}
    for d in dirs:
        try:
            acc = ea.EventAccumulator(d, size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
            acc.Reload()
            rel = os.path.relpath(d, os.getcwd())
            prefix = "" if len(dirs) == 1 else rel.replace(os.sep, "/") + "/"
            for tag in acc.Tags().get("scalars", []):
                for e in acc.Scalars(tag):
                    steps.setdefault(int(e.step), {})[prefix + tag] = float(e.value)
            for tag in acc.Tags().get("tensors", []):
                for e in acc.Tensors(tag):
                    value = tensor_util.make_ndarray(e.tensor_proto)
                    if value.size == 1:
                        steps.setdefault(int(e.step), {})[prefix + tag] = float(value.item())
        except Exception:  # noqa: BLE001 - one unreadable folder leaves the others
            continue
    keys = sorted(steps)
    if len(keys) > MAX_STEPS:
        keys = keys[::-(-len(keys) // MAX_STEPS)]
    for step in keys:
        values = {k: v for k, v in steps[step].items() if math.isfinite(v)}
        if values:
            _emit("TFDESK_STEP", {"step": step, **values})
