"""Configuration keys live in one table (bot/config_keys.py): the docs page lists exactly
those keys, and every key the code reads from tfdesk.toml is in it."""
from __future__ import annotations

import re
from pathlib import Path

from bot.config_keys import KEYS, markdown, unknown_keys

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "site_docs" / "admin" / "configuration.md"

# (files, regex, section or None when the regex names the section): the ways code reads keys.
READS = [
    ("bot/**/*.py", r'section\("(\w+)"\)(?:\.get\(|\[)"(\w+)"', None),
    ("bot/config.py", r'pick\("\w+", (?:data\.get\(")?(\w+)(?:", \{\}\))?, "(\w+)"', None),
    ("bot/slack/access.py", r'(?:ids|section\.get)\("(\w+)"', "slack"),
    ("bot/slack/uploads.py bot/slack/service.py", r'section\.get\("(\w+)"', "slack"),
    ("bot/runtimes.py bot/services.py", r'runner\.get\("(\w+)"', "runner"),
    ("bot/services.py bot/paths.py", r'jobs\.get\("(\w+)"', "jobs"),
    ("runners/local.py", r'settings\.get\("(\w+)"', "runner"),
    ("core/pods.py", r'settings\.get\("(\w+)"', "kubernetes"),
    ("runners/kubernetes/*.py runners/model_jobs.py", r'settings(?:\.get\(|\[)"(\w+)"',
     "kubernetes"),
    ("converters/model/*.py", r'settings(?:\.get\(|\[)"(\w+)"', "models"),
]


def _files(patterns: str):
    for pattern in patterns.split():
        yield from REPO.glob(pattern)


def read_keys() -> set[tuple[str, str]]:
    found = set()
    for patterns, regex, section in READS:
        for path in _files(patterns):
            for m in re.finditer(regex, path.read_text(encoding="utf-8")):
                found.add((m.group(1), m.group(2)) if section is None else (section, m.group(1)))
    from bot.slack.server import Limits
    found |= {("slack", f) for f in Limits.__dataclass_fields__}
    return found


def test_the_docs_page_lists_exactly_the_table():
    text = DOC.read_text(encoding="utf-8")
    assert text.rstrip().endswith(markdown().rstrip()), \
        "site_docs/admin/configuration.md is out of date: paste bot.config_keys.markdown()"


def test_every_key_the_code_reads_is_in_the_table():
    table = {(k.section, k.name) for k in KEYS}
    missing = sorted(read_keys() - table)
    assert not missing, f"read by the code but not in bot/config_keys.py: {missing}"
    unread = sorted(table - read_keys())
    assert not unread, f"in bot/config_keys.py but read nowhere: {unread}"
    assert len(table) == len(KEYS), "a key is listed twice"


def test_unknown_keys_are_named():
    data = {"jobs": {"local_workers": 2, "local_worker": 3}, "slak": {}}
    assert unknown_keys(data) == ["jobs.local_worker", "[slak]"]


def test_a_misspelt_setting_is_reported_with_the_key_meant(tmp_path):
    """The terminal warns (stderr) about settings tfdesk would ignore, naming the nearest key."""
    import subprocess
    import sys
    (tmp_path / "tfdesk.toml").write_text('[slack]\ncompute_user = ["U1"]\n[site]\nurl = "http://x/"\n')
    env = {"TFDESK_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "help"], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("warning: tfdesk.toml: slack.compute_user is not a tfdesk setting and is ignored "
            "(did you mean slack.compute_users?)") in proc.stderr
    assert "site.url" not in proc.stderr  # known keys are not reported
