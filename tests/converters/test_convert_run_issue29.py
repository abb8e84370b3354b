"""Issue 29 by running (slow): a few of the new corpus patterns converted and trained on two
workers, each one's first distributed step equal to one single-process step of the original on
the union of both workers' batches. The whole corpus, both targets, is
benchmarks/convert_corpus.py (8 new scripts: 14 conversions equivalent, 2 refused)."""
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

# the checkpoint folder listed and restored on every worker (the other worker had no folder),
# and a loss object inside a layer (it failed as soon as the model was built): the two issue-29
# crashes. The other patterns (TFRecord files every rank wrote, the batch logged outside
# strategy.run, ...) are in benchmarks/convert_corpus.py.
SAMPLE = [("checkpoint_dir_listdir.py", "tf-distribute"), ("endpoint_layer_loss.py", "tf-distribute")]


def _harness():
    spec = importlib.util.spec_from_file_location("convert_corpus", REPO / "benchmarks" / "convert_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("convert_corpus", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name,target", SAMPLE)
def test_the_pattern_trains_as_one_process_would(name, target, tmp_path):
    row = _harness().check(SCRIPTS / name, target, tmp_path, 300, True, {}, combined=True)
    assert row.conversion == "converted", row.reason
    assert row.run == "agree", row.run_detail
    assert row.equivalence == "equivalent", row.equivalence_detail
