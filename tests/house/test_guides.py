"""The guides run as written (issue 28): the blocks site_docs/ marks runnable (see
site_docs/contributing.md) are done in navigation order, as a new reader would, in a fresh
TFDESK_HOME with `tfdesk` from `.venv/bin`; each command exits 0 and prints what its page shows.
The quick test does the blocks that train nothing; the slow one goes on in the same home with
the rest (training, pipelines), so the quick part is done once."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tests.house.guides import (GuideError, blocks, failure, guide_steps, nav_pages, run_step,
                                steps, unmet_claim)

QUICK_TIMEOUT_S, SLOW_TIMEOUT_S = 300, 600
UNKNOWN = ("unrecognized arguments", "invalid choice", "needs a sub-command")


def test_the_guides_are_marked_and_read():
    """Every marker parses; the pages a reader follows have runnable blocks, slow ones among
    them, and every output block follows a command."""
    all_steps = guide_steps()
    pages = {s.where.split(":")[0] for s in all_steps}
    for page in ("site_docs/quickstart.md", "site_docs/guides/distributed-training.md",
                 "site_docs/guides/running-jobs.md", "site_docs/guides/catalog.md",
                 "site_docs/guides/pipeline-graphs.md", "site_docs/guides/runs.md"):
        assert page in pages, f"{page} has no runnable block"
    assert any(s.slow for s in all_steps) and any(not s.slow for s in all_steps)
    assert any(s.claims for s in all_steps if not s.slow)
    assert [s.file for s in all_steps if s.file][:1] == ["train.py"]
    assert nav_pages()[0].name == "index.md"


@pytest.mark.parametrize("text, why", [
    ("<!-- guide: runn -->\n```bash\nls\n```\n", "unknown marker"),
    ("<!-- guide: run -->\n\n```bash\nls\n```\n", "right above a fenced block"),
    ("<!-- guide: run -->\n```python\nx = 1\n```\n", "runnable block is one of"),
    ("<!-- guide: run fast -->\n```bash\nls\n```\n", "takes"),
    ("<!-- guide: file -->\n```text\nx\n```\n", "names one file"),
    ("<!-- guide: run -->\n```bash\nls\n", "never closed"),
])
def test_a_bad_marker_is_refused_with_its_line(text, why):
    with pytest.raises(GuideError, match=why) as e:
        blocks(text, "page.md")
    assert str(e.value).startswith("page.md:1:")


def test_output_must_follow_a_command():
    with pytest.raises(GuideError, match="must follow a runnable block"):
        steps(blocks("<!-- guide: output -->\n```text\nhi\n```\n", "p.md"))


def test_console_blocks_split_commands_from_what_they_print():
    text = ("<!-- guide: run slow -->\n```console\n$ tfdesk a \\\n   --b\nline one\n...\n"
            "$ tfdesk c\n```\n\n<!-- guide: output -->\n```text\nlast\n```\n")
    got = steps(blocks(text, "p.md"))
    assert [(s.text, s.claims, s.slow) for s in got] == [
        ("tfdesk a     --b", ["line one", "..."], True), ("tfdesk c", ["last"], True)]


_words = st.text(alphabet=st.characters(whitelist_categories=("L", "N"), max_codepoint=0x24F),
                 min_size=1, max_size=8)
_lines = st.lists(st.lists(_words, min_size=1, max_size=6).map(" ".join), min_size=1,
                  max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines=_lines, data=st.data())
def test_claims_hold_exactly_when_the_output_bears_them_out(lines, data):
    """A page's excerpt of real output (lines kept in order, some elided with `...`, spacing
    changed) holds; changing one kept line to text the output lacks makes it fail."""
    output = "\n".join("  ".join(line.split(" ")) for line in lines)
    keep = sorted(set(data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=1))))
    claims = []
    for i in keep:
        words = lines[i].split(" ")
        cut = data.draw(st.integers(0, len(words)))
        claims.append(" ".join(words[:cut] + (["..."] if cut < len(words) else [])) or "...")
    assert unmet_claim(claims, output) is None
    wrong = data.draw(st.integers(0, len(claims) - 1))
    bad = claims[:wrong] + ["\u2603 not printed \u2603"] + claims[wrong + 1:]
    assert unmet_claim(bad, output) == bad[wrong]


def test_claims_hold_in_order_only():
    assert unmet_claim(["first", "second"], "first\nsecond") is None
    assert unmet_claim(["second", "first"], "first\nsecond") == "first"
    assert unmet_claim(["a ... c"], "a b c") is None and unmet_claim(["c ... a"], "a b c")


@dataclass
class Reader:
    """A reader's home and folder, and what went wrong so far (page:line and why)."""
    home: Path
    work: Path
    failures: list[str] = field(default_factory=list)
    done: int = 0

    def follow(self, slow: bool) -> None:
        for step in guide_steps():
            if step.slow != slow:
                continue
            why = failure(run_step(step, self.work, self.home,
                                   SLOW_TIMEOUT_S if slow else QUICK_TIMEOUT_S))
            if why is not None:
                self.failures.append(why)
                return  # later steps build on this one
            self.done += 1


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """One new reader for the module: the blocks that train nothing done first, in order;
    the slow test goes on from there with the rest (the same home, as a reader would)."""
    r = Reader(tmp_path_factory.mktemp("reader") / "home",
               tmp_path_factory.mktemp("reader-folder"))
    r.follow(slow=False)
    return r


def test_the_guides_run_as_written_without_training(reader):
    assert not reader.failures, reader.failures[0]
    assert reader.done > 20


@pytest.mark.slow
def test_the_guides_run_as_written(reader):
    """Training and pipelines, after the steps above (about 3 minutes more, unloaded)."""
    assert not reader.failures, reader.failures[0]
    before = reader.done
    reader.follow(slow=True)
    assert not reader.failures, reader.failures[0]
    assert reader.done - before > 10


def test_every_command_the_docs_print_is_one_tfdesk_reads():
    """Each `tfdesk ...` / `/tf ...` line of every page and README.md, runnable or not, names
    a command, sub-command and options that tfdesk's own parser knows. (Prose names commands
    with placeholders and without their arguments: only unknown words are errors here.)"""
    from bot.parser import UsageError, parse
    from tests.house.guides import REPO, SITE_DOCS, command_lines
    pages = sorted(SITE_DOCS.rglob("*.md")) + [REPO / "README.md"]
    lines = [c for p in pages for c in command_lines(p.read_text(encoding="utf-8"),
                                                      str(p.relative_to(REPO)))]
    assert len(lines) > 100
    bad = []
    for where, words in lines:
        try:
            parse(words)
        except UsageError as e:
            if any(w in str(e) for w in UNKNOWN):
                bad.append(f"{where}: {words!r}: {e}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doc", [
    "Run `tfdesk trian train.py` now.",
    "```bash\ntfdesk train train.py --wokers 2   # typo\n```\n",
    "```console\n$ tfdesk pipeline go mnist\n```\n",
    "```text\n/tf datasets add x ./x.npz --tags a\n```\n",
])
def test_a_misprinted_command_is_caught(doc):
    from bot.parser import UsageError, parse
    from tests.house.guides import command_lines
    (where, words), = command_lines(doc, "p.md")
    with pytest.raises(UsageError) as e:
        parse(words)
    assert any(w in str(e.value) for w in UNKNOWN)


# README.md's quick start, as `make` would do it on a fresh machine (`-W pyproject.toml`: as if
# .venv were out of date): what each line says the target does, in order.
README_QUICK_START = {
    "run": ["-m venv .venv", "pip install -q -e", "tfdesk kb load", "tfdesk serve"],
    "test": ["-m venv .venv", "pip install -q -e", "system_deps.sh",
             "build_runner_env.sh .venv-runner", "build_runner_env_keras3.sh .venv-runner-tf221",
             "-m runners.sandbox", "-m pytest"],
    "test-quick": ["-m venv .venv", '-m pytest -m "not slow"'],
}


@pytest.mark.parametrize("target", sorted(README_QUICK_START))
def test_readme_quick_start_says_what_make_does(target, tmp_path):
    import subprocess
    from tests.house.guides import REPO, reader_env
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"make {target}" in readme
    out = subprocess.run(["make", "-n", "-W", "pyproject.toml", target], cwd=REPO,
                         env=reader_env(tmp_path / "home"), capture_output=True, text=True,
                         check=True).stdout
    assert unmet_claim(README_QUICK_START[target], out) is None, out
