"""Equivalence, not only agreement (issue 16): the first step of a converted script on two
workers equals ONE single-process step of the original script on the union of both workers'
batches, with the documented scaling (global batch = per-worker batch x 2; learning rate x 2 for
Horovod, unchanged for tf.distribute), within float32 tolerance. Agreement alone misses a loss
scaled twice or gradients that are never averaged; this check does not, as the tampered control
below shows. A representative sample; the whole corpus runs in benchmarks/convert_corpus.py.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.convert_runs import runner_ready

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not runner_ready(), reason="runner environment not built (make runner-env)"),
]


def _harness():
    spec = importlib.util.spec_from_file_location("convert_corpus", REPO / "benchmarks" / "convert_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("convert_corpus", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# (script, target): compiled_loss inside train_step (not divided twice), a custom loop reading
# the data through enumerate() with an evaluation step, and Horovod's custom loop.
SAMPLE = [("train_step_compiled_loss.py", "tf-distribute"),
          ("tf_function_steps_enumerate.py", "tf-distribute"),
          ("custom_loop.py", "horovod")]


@pytest.mark.parametrize("name,target", SAMPLE)
def test_first_distributed_step_equals_one_step_on_the_union_of_batches(name, target, tmp_path):
    # combined: one probed two-worker run gives both verdicts (plus one single-process reference)
    row = _harness().check(SCRIPTS / name, target, tmp_path, 300, True, {}, combined=True)
    assert row.conversion == "converted", row.reason
    assert row.run == "agree", row.run_detail
    assert row.equivalence == "equivalent", row.equivalence_detail


def test_a_loss_scaled_twice_is_caught(tmp_path):
    """Control: the same conversion with the loss divided by the replicas once more still
    trains identically on both workers, but its gradients are half the single-process ones."""
    harness = _harness()
    from converters.script import convert

    source = (SCRIPTS / "tf_function_steps_enumerate.py").read_text()
    code = convert(source, "tf-distribute", "tampered.py").code
    scaled = "loss_value = tf.nn.compute_average_loss(loss_value)"
    assert scaled in code
    tampered = tmp_path / "src" / "tampered.py"
    tampered.parent.mkdir()
    tampered.write_text(source)
    converted = tmp_path / "tampered_converted.py"
    converted.write_text(code.replace(scaled, scaled + " / strategy.num_replicas_in_sync"))
    run = tmp_path / "run"
    ok, log, weights = harness._two_workers("tf-distribute", converted, run, 300,
                                            env={"TFDESK_PROBE_OUT": str(run / "probe")})
    assert ok, log[-3000:]
    assert harness._agreement(weights)[0] == "agree"  # agreement alone does not see it
    verdict, detail = harness._equivalence(tampered, "tf-distribute", converted, tmp_path / "tfd" / "x",
                                           300, {}, probed=run)
    assert verdict == "not equivalent", detail
    assert "x0.5" in detail, detail
