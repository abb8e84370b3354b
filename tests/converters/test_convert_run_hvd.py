"""Issue 16, Horovod, by running: a representative sample of the public-pattern corpus
(tests/scripts/ORIGINS.md), converted and trained on two workers (Gloo), both exit 0 with the
same weights; and the script whose gradients are taken inside the tape block (a silent
divergence before) takes a first step equal to one single-process step on the union of both
workers' batches. The whole corpus runs in benchmarks/convert_corpus.py."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.convert_runs import load_weights, run_horovod_batch, runner_ready
from converters.script import convert

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
# lookup/normalization layers adapted on a sharded pipeline; fit() with a custom train_step on
# arrays without batch_size; a best checkpoint loaded back after fit(); gradients inside the
# tape block; TF1 initializer .run() in an InteractiveSession.
EAGER = ["structured_lookup_adapt.py", "fit_train_step_numpy.py", "timeseries_best_checkpoint.py",
         "grads_inside_tape.py"]
GRAPH = ["tf1_interactive_init_run.py"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not runner_ready(), reason="runner environment not built (make runner-env)"),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hvd16")
    out = {}
    for group in (EAGER, GRAPH):  # graph-mode scripts switch eager off: their own process pair
        paths = []
        for name in group:
            path = root / "scripts" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(convert((SCRIPTS / name).read_text(), "horovod", name).code)
            paths.append(path)
        proc = run_horovod_batch(paths, root)
        out.update({name: (proc, root / Path(name).stem / "_shim_weights") for name in group})
    return out


@pytest.mark.parametrize("name", EAGER + GRAPH)
def test_two_workers_train_the_same_model(runs, name):
    proc, weights = runs[name]
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert log.count(f"shim: {name} rank") == 2, log[-4000:]
    rank0, rank1 = load_weights(weights)
    assert rank0 and sorted(rank0) == sorted(rank1)
    for key in rank0:
        assert np.array_equal(rank0[key], rank1[key]), f"{key} differs between workers"


def test_gradients_inside_the_tape_block_are_averaged(tmp_path):
    spec = importlib.util.spec_from_file_location("convert_corpus", REPO / "benchmarks" / "convert_corpus.py")
    harness = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("convert_corpus", harness)  # dataclasses look their module up there
    spec.loader.exec_module(harness)
    row = harness.check(SCRIPTS / "grads_inside_tape.py", "horovod", tmp_path, 300, True, {})
    assert (row.conversion, row.run) == ("converted", "agree"), row.run_detail or row.reason
    assert row.equivalence == "equivalent", row.equivalence_detail
