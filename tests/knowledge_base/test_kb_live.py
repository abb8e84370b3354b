"""The KB against live TensorFlow: what it says exists in 2.15 (Keras 2) and 2.21 (Keras 3) is
what resolves in the runtimes tfdesk has (``.venv-runner``, ``.venv-runner-tf221``), checked
by ``knowledge_base/live/probe.py`` running inside each runtime.

Checked both ways: every tf.keras name the KB holds in that release (class members, inherited
ones included) and a seeded sample of 3,000 of the rest resolve there; every public tf.keras
name a walk of the runtime finds is in the KB. Names that resolve but raise on use are
"unusable" in the KB exactly where they raise in the runtime."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from knowledge_base import live
from knowledge_base.extract.companions import provider_of

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = {"2.15": ROOT / ".venv-runner" / "bin" / "python",
            "2.21": ROOT / ".venv-runner-tf221" / "bin" / "python"}
SAMPLE = 3000
# KB names that do not resolve in the runtime, each with why (whole-prefix entries end in ".").
# The 2.21 runtime's Keras (pip installs the newest 3.x, 3.15 when written) is newer than the
# Keras the KB's 2.21 was read from (3.12, the minor TF 2.21 declares as its minimum).
NOT_RESOLVING: dict[str, str] = {
    "tf.keras.export.ExportArchive.non_trainable_variables": "dropped after Keras 3.12",
    "tf.keras.export.ExportArchive.trainable_variables": "dropped after Keras 3.12",
    "tf.keras.export.ExportArchive.variables": "dropped after Keras 3.12",
}
# Walked tf.keras names under a class or module the KB has: all in the KB (inherited members
# included). Names under classes the KB lacks come from a newer Keras: at most this share.
MAX_NEWER_KERAS = {"2.15": 0.0, "2.21": 0.06}
# Same Keras (2.15): none missing. Keras 3.15 against the KB's 3.12 adds members and ops
# (rematerialized_call, ops.nanmean...): at most 1 % of the names under known parents.
MAX_SKEW_MEMBERS = {"2.15": 0.0, "2.21": 0.01}

pytestmark = pytest.mark.slow


def _kb_names(kb, ord_: int, missing: set[str]) -> dict[str, str]:
    """name -> 'ok' or 'unusable' for every symbol present in release ``ord_``, less those a
    companion package supplies that the runtime does not install (tf_keras, which supplies
    tf.compat.v1.keras from 2.16, is not in the 2.21 runtime)."""
    rows = kb.db.execute("SELECT s.name, p.deprecation, p.object FROM symbols s JOIN spans p "
                         "ON p.symbol_id = s.id WHERE p.first_ord <= ? AND p.last_ord >= ?",
                         (ord_, ord_))
    rows = list(rows)
    lacking = {n for n, _, o in rows if (provider_of(o) or "").replace("-", "_") in missing}

    def supplied(n: str) -> bool:  # by a package the runtime lacks, or under such a name
        parts = n.split(".")
        return any(".".join(parts[:i]) in lacking for i in range(2, len(parts) + 1))

    return {n: live.UNUSABLE if d and '"how": "raises"' in d else live.OK for n, d, o in rows
            if not supplied(n)}


def _allowed(name: str) -> bool:
    return name in NOT_RESOLVING or any(name.startswith(p) for p in NOT_RESOLVING if p.endswith("."))


@pytest.fixture(scope="module", params=sorted(RUNTIMES))
def checked(request, shipped_kb):
    release = request.param
    python = RUNTIMES[release]
    if not python.is_file():
        pytest.skip(f"no runtime for {release} ({python}); make runner-env builds it")
    kb = shipped_kb.kb
    installed = live.probe(python).packages
    says = _kb_names(kb, kb.ord_of(release), {p for p, ok in installed.items() if not ok})
    keras = sorted(n for n in says if n.startswith("tf.keras."))
    rest = sorted(n for n in says if not n.startswith("tf.keras."))
    names = keras + random.Random(27).sample(rest, min(SAMPLE, len(rest)))
    found = live.probe(python, names, walk=["tf.keras"])
    assert found.minor == release, (found.tf_version, release)
    return release, says, names, found


def test_what_the_kb_says_exists_resolves(checked):
    release, says, names, found = checked
    wrong = sorted(n for n in names if found.state(n) == live.ABSENT and not _allowed(n))
    assert len(names) > 3000
    assert not wrong, (f"{len(wrong)} of {len(names)} names the KB has in {release} do not "
                       f"resolve in TF {found.tf_version}: {wrong[:40]}")


def test_unusable_exactly_where_the_runtime_raises(checked):
    release, says, names, found = checked
    live_unusable = {n for n in names if found.state(n) == live.UNUSABLE}
    kb_unusable = {n for n in names if says[n] == live.UNUSABLE}
    assert live_unusable == kb_unusable, (
        f"raise in the runtime, not unusable in the KB: {sorted(live_unusable - kb_unusable)[:20]}; "
        f"unusable in the KB, fine in the runtime: {sorted(kb_unusable - live_unusable)[:20]}")
    if release == "2.21":
        assert "tf.keras.optimizers.legacy.Adam" in live_unusable


def test_every_walked_keras_name_is_in_the_kb(checked):
    release, says, _, found = checked
    walked = [n for n in found.walked if n.startswith("tf.keras.")]
    under_known = [n for n in walked if n.rpartition(".")[0] in says]
    # A member name the KB's release has nowhere is new in a newer Keras; one it has on other
    # classes (build, get_weights...) missing here is the KB's fault (inheritance).
    leaves = {n.rpartition(".")[2] for n in says}
    missing = sorted(n for n in under_known if n not in says and n.rpartition(".")[2] in leaves)
    newer = [n for n in walked if n not in says and n not in missing]
    assert len(walked) > 5000
    assert len(missing) <= MAX_SKEW_MEMBERS[release] * len(under_known), (
        f"{len(missing)} of {len(under_known)} tf.keras names of classes and modules the KB has "
        f"in {release} are not in it (TF {found.tf_version}, Keras {found.keras_version}): "
        f"{missing[:40]}")
    assert len(newer) <= MAX_NEWER_KERAS[release] * len(walked), (
        f"{len(newer)} tf.keras names under classes the KB's {release} lacks: {newer[:20]}")


def test_diff_2_15_2_16_removes_nothing_that_2_21_has(shipped_kb):
    """`diff 2.15 2.16 --module tf.keras` lists as removed only names that TF 2.21 lacks too
    (inherited members are not removals), and says that 2.16 switched to Keras 3."""
    python = RUNTIMES["2.21"]
    if not python.is_file():
        pytest.skip(f"no 2.21 runtime ({python})")
    d = shipped_kb.diff("2.15", "2.16", "tf.keras")
    assert d["keras"]["release"] == "2.16" and "Keras 3" in d["keras"]["text"]
    found = live.probe(python, d["removed"] + d["removed_back_later"])
    back = sorted(n for n in d["removed"] if found.state(n) != live.ABSENT)
    assert len(d["removed"]) > 100
    # Names gone in 2.16 that later releases have again are said apart, and do resolve.
    returned = [n for n in d["removed_back_later"] if found.state(n) != live.ABSENT]
    assert len(returned) >= 0.9 * len(d["removed_back_later"])
    assert not back, f"{len(back)} of {len(d['removed'])} 'removed' names resolve in 2.21: {back[:30]}"
