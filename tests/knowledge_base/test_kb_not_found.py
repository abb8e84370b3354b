""""Not found" is an answer: a dotted name that no release holds is said to be missing, with
the nearest names as suggestions, instead of being answered with a look-alike."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_base.qa.answers import UnknownSymbol
from knowledge_base.builder import build_kb
from knowledge_base.qa.semantic import Vectors
from tests.kbdata import history_releases

REPO = Path(__file__).resolve().parents[2]


def test_a_dotted_name_no_release_holds_is_not_answered_with_a_look_alike(shipped_kb):
    kb = shipped_kb
    span = f"{kb.kb.versions[0]}–{kb.kb.newest}"
    with pytest.raises(UnknownSymbol) as missing:
        kb.history("tf.nosuch.thing")
    assert f"no such symbol in TensorFlow {span}: tf.nosuch.thing" in str(missing.value)
    assert missing.value.to_dict()["match"] == "none" and missing.value.suggestions
    with pytest.raises(UnknownSymbol) as missing:
        # (tf.compat.v1.Session.run itself is listed now, as the v1 goldens list it.)
        kb.history("tf.compat.v1.Session.partial_runs")
    assert missing.value.suggestions[0] == "tf.compat.v1.Session.partial_run"
    out = kb.ask("tf.nosuch.thing")
    assert out["match"] == "none" and out["results"] == [] and out["suggestions"]


def test_other_spellings_legacy_names_and_free_text_are_still_answered(shipped_kb):
    kb = shipped_kb
    assert kb.history("tf.Session")["symbol"]["name"] == "tf.compat.v1.Session"  # TF1 name
    assert kb.history("nn.softmax")["symbol"]["name"] == "tf.nn.softmax"  # not a full path
    assert kb.ask("tf.nn.softmx")["results"][0]["name"] == "tf.nn.softmax"  # a typo, in ask
    assert kb.ask("pad a tensor with zeros")["results"][0]["name"] == "tf.pad"
    with pytest.raises(UnknownSymbol) as missing:
        kb.history("tf.nn.softmx")  # history names one symbol exactly
    assert missing.value.suggestions[0] == "tf.nn.softmax"


def test_terminal_exits_non_zero_with_suggestions(tmp_path):
    build_kb(history_releases(), tmp_path / "kb.sqlite", indexes=[Vectors()])
    env = {**os.environ, "TFDESK_HOME": str(tmp_path)}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
    r = cli("history", "tf.nosuch.thing", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["ok"] is False and data["match"] == "none" and data["suggestions"]
    r = cli("history", "tf.nosuch.thing")
    assert r.returncode == 1 and "no such symbol in TensorFlow" in r.stderr
    assert "nearest names:" in r.stderr
    r = cli("ask", "tf.nosuch.thing", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["match"] == "none"


def test_a_misspelt_tf1_name_suggests_its_tf2_home(shipped_kb):
    # tf.Session is no symbol of any release, but the rename table knows where it went.
    with pytest.raises(UnknownSymbol) as missing:
        shipped_kb.history("tf.Sessionn")
    assert missing.value.suggestions[0] == "tf.compat.v1.Session"
    with pytest.raises(UnknownSymbol) as missing:
        shipped_kb.history("tf.train.AdamOptimiser")
    assert missing.value.suggestions[0] == "tf.compat.v1.train.AdamOptimizer"
    out = shipped_kb.ask("tf.placeholdr")
    assert out["match"] == "none" and out["suggestions"][0] == "tf.compat.v1.placeholder"
    first = shipped_kb.ask("tf.Session")["results"][0]
    assert first["name"] == "tf.compat.v1.Session" and first["match"] == "legacy"
