"""`tfdesk ask NAME` from a shell loads what a name lookup uses and nothing else: not NumPy,
sqlite-utils, LibCST, the converters, the catalog or the runners (issue 27: a name in under
0.4 s, process start included). The command table is filled at start, so this holds only while
every handler module imports its heavy tools where it uses them. Run as a shell would: a fresh
interpreter through bot.cli.main, the process's edge."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_base.builder import build_kb
from tests.kbdata import history_releases

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "sqlite_utils", "libcst", "converters", "catalog", "runners", "lightgbm")


def _loaded(tmp: Path, *argv: str, heavy: tuple[str, ...] = HEAVY,
            kb: Path | None = None) -> set[str]:
    """Modules of ``heavy`` that ``tfdesk ARGV`` imported (its own exit code must be 0)."""
    code = "\n".join([
        "import sys", "from bot.cli import main",
        f"rc = main({list(argv)!r})",
        f"print('LOADED', ' '.join(m for m in {heavy!r} if m in sys.modules))",
        "sys.exit(rc)"])
    env = {**os.environ, "TFDESK_KB": str(kb or tmp / "kb.sqlite"),
           "TFDESK_HOME": str(tmp / "home"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("LOADED"))
    return set(line.split()[1:])


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shell")
    build_kb(history_releases(), tmp / "kb.sqlite")
    return tmp


@pytest.mark.parametrize("argv", [("ask", "tf.pad"), ("ask", "tf.nn.softmx"),
                                  ("history", "tf.pad"), ("help",)])
def test_a_name_lookup_imports_no_heavy_stack(shell, argv):
    assert _loaded(shell, *argv) == set()


def test_the_check_can_fail(shell):
    # A command that needs the catalog does load it, through the same edge.
    assert "catalog" in _loaded(shell, "datasets", "list")


# What a question in words does not need: LightGBM (and the SciPy it pulls) is for fitting
# the ranker, PyYAML and safetensors for preparing what is kept beside the KB.
NOT_FOR_A_QUESTION = ("lightgbm", "scipy", "pandas", "yaml", "safetensors", "numpy.ma",
                      "sqlite_utils", "libcst", "converters", "catalog", "runners")


def test_a_question_imports_only_what_answering_needs(shipped_kb, tmp_path):
    kb = tmp_path / "kb.sqlite"
    shutil.copyfile(shipped_kb.kb.path, kb)  # its own copy: nothing prepared beside it yet
    argv = ("ask", "how do I pad a tensor with zeros")
    # The check can fail: the first question prepares, and that reads the YAML data and
    # the model's own file.
    first = _loaded(tmp_path, *argv, heavy=NOT_FOR_A_QUESTION, kb=kb)
    assert {"yaml", "safetensors"} <= first
    assert _loaded(tmp_path, *argv, heavy=NOT_FOR_A_QUESTION, kb=kb) == set()
