"""The proof harness names the cause of a crash: a worker's exception, not horovodrun's own
closing traceback (which only says that some process exited)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from convert_corpus import _last_error  # noqa: E402

HOROVODRUN_LOG = """\
[1]<stderr>:Traceback (most recent call last):
[1]<stderr>:  File "train.py", line 47, in compile
[1]<stderr>:RecursionError: maximum recursion depth exceeded in comparison
[0]<stderr>:RecursionError: maximum recursion depth exceeded in comparison
Process 0 exit with status code 1.
Traceback (most recent call last):
  File "/venv/bin/horovodrun", line 8, in <module>
    raise RuntimeError('Horovod detected that one or more processes exited with non-zero '
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job to be terminated. The first process to do so was:
"""


def test_a_horovod_crash_is_named_by_the_workers_exception():
    assert _last_error(HOROVODRUN_LOG) == \
        "[0]<stderr>:RecursionError: maximum recursion depth exceeded in comparison"


def test_a_plain_log_still_gives_its_last_error():
    log = "step 1\nValueError: bad shape\nWARNING: something else\n"
    assert _last_error(log) == "ValueError: bad shape"


def test_the_judge_holds_only_equivalent_or_explained_outcomes():
    from convert_corpus import Row, holds

    def row(**kw):
        return Row("s.py", "horovod", **kw)

    assert holds(row(conversion="converted", run="agree", equivalence="equivalent"))
    assert holds(row(conversion="converted", run="agree", equivalence="not comparable",
                     equivalence_detail="random numbers drawn in the training step (line 9)"))
    assert holds(row(conversion="refused", reason="[TFD006] ... keras-team/keras#20585"))
    assert not holds(row(conversion="refused"))  # a refusal must say why
    assert not holds(row(conversion="converted", run="agree", equivalence="not equivalent"))
    assert not holds(row(conversion="converted", run="agree", equivalence="not comparable"))
    for run in ("crash", "diverged", "timeout"):
        assert not holds(row(conversion="converted", run=run))
    assert not holds(row(conversion="converter crash", reason="KeyError"))
