"""What the job commands promise, checked against real jobs (this Python as the runner):
``train SCRIPT -- ARGS`` hands the arguments to the script as given; a model's validation
says how many inputs it used and whether they were real."""
import json
import sys

from hypothesis import given, settings, strategies as st

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.parser import parse
from converters.model.report import summary

ECHO = "import json, sys\nprint('ARGV=' + json.dumps(sys.argv[1:]))\n"
# Arguments as a user types them after `--`: options, values, spaces, quotes, unicode.
words = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(words, max_size=5))
def test_everything_after_the_double_dash_is_the_scripts(args):
    cmd = parse(["train", "s.py", "--workers", "2", "--", *args])
    assert cmd.args["script_args"] == args and cmd.args["workers"] == 2


def test_train_passes_arguments_to_the_script(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n')
    (tmp_path / "echo.py").write_text(ECHO)
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}), owner="ann")
    try:
        args = ["--lr", "0.5", "two words", "--epochs=3"]
        _, reply = run_line(ctx, ["train", str(tmp_path / "echo.py"), "--wait", "--", *args])
        assert reply.ok, reply.text
        log = ctx.services.engine.read_log(reply.job.id, None)
        line = next(x for x in log.splitlines() if x.startswith("ARGV="))
        assert json.loads(line[len("ARGV="):]) == args
    finally:
        ctx.services.close()


def _report(source: str | None, int8: bool) -> dict:
    val = {"passed": True, "samples": 8, "tolerance": {"atol": 1e-3, "rtol": 1e-3},
           "outputs": {"probs": {"max_abs_error": 1e-5, "passed": True}}}
    if source is not None:
        val["inputs"] = source
    if int8:
        val["int8"] = {"samples": 8, "passed": True, "min_agreement": 0.99,
                       "outputs": {"probs": {"task": "classification", "passed": True,
                                             "int8": {"agreement": 1.0, "max_abs_diff": 0.0}}}}
        if source is not None:
            val["int8"]["inputs"] = source
    return {"mode": "convert", "status": "succeeded", "model": {"name": "m"},
            "conversion": {"target": "onnx", "precision": "int8" if int8 else "fp32"},
            "validation": val}


def test_validation_says_how_many_inputs_and_whether_real():
    for int8 in (False, True):
        generated = summary(_report("generated", int8))
        assert "8 generated inputs (random, not your data" in generated, generated
        assert "8 of your samples" in summary(_report("user samples", int8))
    assert "held-out samples of your calibration file" in summary(_report("calibration", True))


def test_a_model_job_settles_by_its_workers_report(tmp_path):
    """The worker's report, not the exit status, says how a model job ended."""
    from runners.model_jobs import settle
    (tmp_path / "report.json").write_text(json.dumps(
        {"status": "failed", "error": {"code": "bad_input",
                                       "error": "calib.npz lacks input 'features'"}}))
    state, reason = settle(tmp_path, None, "failed", 'exit status 3: {"progress": "done"}')
    assert state == "failed" and reason == "calib.npz lacks input 'features' (exit status 3)"
    (tmp_path / "report.json").write_text(json.dumps(
        {"status": "needs_gpu", "needs_gpu": {"message": "no GPU here"}}))
    state, reason = settle(tmp_path, None, "succeeded", "")
    assert state == "waiting_gpu" and "no GPU here" in reason
    (tmp_path / "report.json").write_text(json.dumps({"status": "succeeded"}))
    assert settle(tmp_path, None, "succeeded", "") == ("succeeded", "")


def test_a_job_waiting_for_a_gpu_holds_no_slot_and_cancel_ends_the_wait(tmp_path):
    from tests.jobs_helpers import make_engine
    engine = make_engine(tmp_path / "home", start=False)
    try:
        job, _ = engine.store.create("convert-model", {}, "ann", {"kind": "terminal"}, "local",
                                     engine.jobs_dir)
        for state in ("starting", "running", "waiting_gpu"):
            engine.store.transition(job.id, state)
        assert engine.list(states=["queued", "starting", "running"]) == []
        assert engine.wait(job.id, timeout=1).state == "waiting_gpu"  # ended here
        assert engine.cancel(job.id).state == "cancelled"
    finally:
        engine.close()


HOROVOD_TAIL = """\
[1]<stderr>:Traceback (most recent call last):
[1]<stderr>:  File "script.py", line 9, in <module>
[1]<stderr>:FileNotFoundError: [Errno 2] No such file or directory: 'toy.npz'
[0]<stderr>:FileNotFoundError: [Errno 2] No such file or directory: 'toy.npz'
Traceback (most recent call last):
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus \
causing the job to be terminated. The first process to do so was:
"""


def test_a_failed_multi_worker_job_keeps_the_first_workers_exception(tmp_path):
    from runners.launchers import settle
    log = tmp_path / "job.log"
    log.write_text("Epoch 1/2\n" + HOROVOD_TAIL)
    state, reason = settle(tmp_path, log, "failed", "exit status 1: RuntimeError: Horovod ...")
    assert (state, reason) == ("failed", "worker 1: FileNotFoundError: [Errno 2] No such file "
                                         "or directory: 'toy.npz' (exit status 1)")
    log.write_text("Epoch 1/2\nValueError: single process\n")  # no worker prefix: unchanged
    assert settle(tmp_path, log, "failed", "exit status 1: ValueError: single process") == \
        ("failed", "exit status 1: ValueError: single process")
