"""Runner-side shim for the converter's proof-by-running tests (runs under .venv-runner).

Usage: python convert_shim.py OUT_DIR SCRIPT [ARGS...]
       python convert_shim.py --batch ROOT SCRIPT...   (each script in ROOT/<stem>/, one after
       another in this process, to share TensorFlow's and Horovod's start-up between scripts)

Runs SCRIPT unmodified as __main__ (runpy) and, when it ends, writes this worker's trained
variables to OUT_DIR/rank<N>.npz so the test can compare workers. It only observes: it keeps a
reference to each Keras model / Estimator / TF1 session it sees and reads their variables at the
end; it changes no argument, no value, and no control flow of the script.
"""
import json
import os
import runpy
import sys

import numpy as np
import tensorflow as tf

MODELS, ESTIMATORS, GRAPH_VALUES = [], [], {}


def _rank() -> int:
    if "HOROVOD_RANK" in os.environ:
        return int(os.environ["HOROVOD_RANK"])
    if "TF_CONFIG" in os.environ:
        return int(json.loads(os.environ["TF_CONFIG"])["task"]["index"])
    return 0


_model_init = tf.keras.Model.__init__


def _track_model(self, *args, **kwargs):
    _model_init(self, *args, **kwargs)
    MODELS.append(self)


tf.keras.Model.__init__ = _track_model

_est_train = tf.estimator.Estimator.train


def _track_estimator(self, *args, **kwargs):
    result = _est_train(self, *args, **kwargs)
    ESTIMATORS.append(self)
    return result


tf.estimator.Estimator.train = _track_estimator


def _read_graph_variables(sess):
    variables = sess.graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
    if variables:
        for v, value in zip(variables, sess.run(variables)):
            GRAPH_VALUES[f"graph/{v.name}"] = value


from tensorflow.python.training import monitored_session  # noqa: E402

_close_internal = monitored_session._MonitoredSession._close_internal


def _track_monitored(self, exception_type=None):
    if exception_type is None and self._sess is not None:
        _read_graph_variables(self._tf_sess())
    return _close_internal(self, exception_type)


monitored_session._MonitoredSession._close_internal = _track_monitored

_session_close = tf.compat.v1.Session.close


def _track_session(self):
    if not getattr(self, "_closed", False):
        try:
            _read_graph_variables(self)
        except Exception:  # noqa: BLE001 - a session without our variables
            pass
    return _session_close(self)


tf.compat.v1.Session.close = _track_session
_interactive_close = tf.compat.v1.InteractiveSession.close


def _track_interactive(self):
    try:
        _read_graph_variables(self)
    except Exception:  # noqa: BLE001 - a session without our variables
        pass
    return _interactive_close(self)


tf.compat.v1.InteractiveSession.close = _track_interactive


def run(script: str, out: str, argv: list[str]) -> None:
    MODELS.clear(), ESTIMATORS.clear(), GRAPH_VALUES.clear()
    script = os.path.abspath(script)
    probe = None
    if os.environ.get("TFDESK_PROBE_OUT"):  # the equivalence check (see convert_probe.py)
        import convert_probe as probe
        probe.install(script)
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    if probe is not None:
        probe.dump()
    weights = dict(GRAPH_VALUES)
    for i, model in enumerate(MODELS):
        # Metric state (a loss tracker's total and count) is each worker's own running average
        # by design, like batch-norm statistics: not part of the trained model.
        metric_vars = {id(v) for m in getattr(model, "metrics", []) for v in m.variables}
        for j, v in enumerate(model.weights):
            if not isinstance(v, tf.Variable) or id(v) in metric_vars:
                continue  # a lookup layer's vocabulary handler (not a variable), or a metric's
            if "moving_" not in v.name:  # batch-norm statistics are per worker by design
                weights[f"model{i}/{j}/{v.name}"] = v.numpy()
    for i, est in enumerate(ESTIMATORS):
        for name in est.get_variable_names():
            if "Adam" not in name:  # optimizer slots: the weights are what we compare
                weights[f"estimator{i}/{name}"] = est.get_variable_value(name)
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, f"rank{_rank()}.npz"), **weights)
    print(f"shim: {os.path.basename(script)} rank {_rank()} saved {len(weights)} arrays", flush=True)


if sys.argv[1] == "--batch":
    root = os.path.abspath(sys.argv[2])
    for script in [os.path.abspath(s) for s in sys.argv[3:]]:
        stem = os.path.splitext(os.path.basename(script))[0]
        os.makedirs(os.path.join(root, stem), exist_ok=True)
        os.chdir(os.path.join(root, stem))
        print(f"shim: running {script}", flush=True)
        run(script, os.path.join(root, stem, "_shim_weights"), [])
        tf.keras.backend.clear_session()
        tf.compat.v1.reset_default_graph()
else:
    run(sys.argv[2], sys.argv[1], sys.argv[3:])
