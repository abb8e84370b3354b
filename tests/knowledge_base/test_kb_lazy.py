"""A name lookup loads only name lookup: not NumPy, LightGBM, the sentence model or the
question ranker (a shell's `tfdesk ask NAME` pays for what it uses); a question in words
loads them. Run in a fresh interpreter, as a shell would."""
import subprocess
import sys
from pathlib import Path

from knowledge_base.builder import build_kb
from tests.kbdata import history_releases

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "lightgbm", "knowledge_base.qa.semantic", "knowledge_base.qa.questions",
         "knowledge_base.qa.minilm")


def _loaded(kb: Path, *calls: str) -> set[str]:
    code = "\n".join([
        "import sys", "from pathlib import Path",
        "from knowledge_base.qa.answers import Answers",
        f"a = Answers.open(Path({str(kb)!r}), 'http://docs.test/')", *calls,
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"])
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_a_name_lookup_loads_no_question_machinery(tmp_path):
    kb = tmp_path / "kb.sqlite"
    build_kb(history_releases(), kb)
    assert _loaded(kb, "a.ask('tf.pad')", "a.ask('tf.nn.softmx')", "a.history('tf.pad')",
                   "a.diff('2.14', '2.16')") == set()
    # The check can fail: a question in words does load them.
    assert {"numpy", "knowledge_base.qa.questions"} <= _loaded(kb, "a.ask('pad a tensor')")
