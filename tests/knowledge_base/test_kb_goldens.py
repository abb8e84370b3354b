"""The KB against TensorFlow's own API goldens (facts transcribed in
tests/data/goldens/goldens.txt: path, kind and argument order of every symbol of 41 golden
files). Every golden symbol must be in the KB by its exact path, present in the release the
golden describes, with the golden kind and argument order; at least 99 % of them, and every
miss named in ALLOWED with the reason.

Five of the stored golden versions describe an API older than the oldest release in the KB
(2.2): they list tf.summary.enable_trace, tf.autograph.to_code(arg_values=...) and argument
lists later releases extended. They are marked ``release pre-2.2`` in the data; their
symbols must still exist by name, and the rest of the comparison is reported, not required."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from knowledge_base.builder import parse_params
from knowledge_base.pipeline import SHIPPED_EXTRACT

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")

GOLDENS = Path(__file__).resolve().parents[1] / "data" / "goldens" / "goldens.txt"

# Golden symbols the KB may miss, each with why. Keys are "<path>" (absent) or
# "<path> <check>" for a failed kind/args/release check.
ALLOWED: dict[str, str] = {
    # Tuple builtins of a namedtuple class: C methods of `tuple`, not TensorFlow API.
    "tf.compat.v1.FixedLenFeature.count": "tuple.count, a builtin of the namedtuple base",
    "tf.compat.v1.FixedLenFeature.index": "tuple.index, a builtin of the namedtuple base",
}


@dataclass
class Golden:
    file: str
    commit: str
    release: str
    kind: str
    name: str
    args: list[str] | None


def load_goldens(path: Path = GOLDENS) -> list[Golden]:
    out: list[Golden] = []
    cur = None
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("file "):
            m = re.match(r"file (\S+) @([0-9a-f]{40}) release (\S+)$", line)
            assert m, line
            cur = m.groups()
            continue
        m = re.match(r"(\w+) (\S+)(?: \((.*)\))?$", line)
        assert m and cur, line
        kind, name, args = m.groups()
        arglist = None if args is None else [a.strip() for a in args.split(",") if a.strip()]
        out.append(Golden(cur[0], cur[1], cur[2], kind, name, arglist))
    return out


def _kb_args(sig: str | None) -> list[str] | None:
    params = parse_params(sig)
    if params is None:
        return None
    out = []
    for name, kind, _ in params:
        prefix = {"var_positional": "*", "var_keyword": "**"}.get(kind, "")
        out.append(prefix + name)
    return out


PRE = "pre-2.2"  # golden older than every release in the KB


def check(kb, g: Golden) -> list[str]:
    """The failed checks of one golden symbol: [] when it agrees."""
    sym = kb.symbol(g.name)
    if sym is None:
        return ["absent"]
    ord_ = 0 if g.release == PRE else kb.ord_of(g.release)
    span = kb.span_at(sym["id"], ord_)
    if span is None:
        return ["release"]
    bad = []
    if span["kind"] != g.kind:
        bad.append("kind")
    if g.args is not None:
        got = _kb_args(span["signature"])
        # The golden lists *args/**kwargs by name; compare names in order.
        if got is None or [a.lstrip("*") for a in got] != [a.lstrip("*") for a in g.args]:
            bad.append("args")
    return bad


def measure(kb, old: bool = False) -> tuple[int, list[tuple[Golden, list[str]]]]:
    """(golden symbols, misses) of the goldens in the KB's range, or with ``old`` of the
    pre-2.2 ones."""
    goldens = [g for g in load_goldens() if (g.release == PRE) == old]
    misses = [(g, bad) for g in goldens if (bad := check(kb, g))]
    return len(goldens), misses


def _allowed(g: Golden, bad: list[str]) -> bool:
    return g.name in ALLOWED or all(f"{g.name} {b}" in ALLOWED for b in bad)


def test_goldens_file_covers_40_golden_files():
    goldens = [g for g in load_goldens() if g.release != PRE]
    assert len({g.file for g in goldens}) >= 36
    assert len(load_goldens()) >= 600 and len({g.file for g in load_goldens()}) >= 40


def test_kb_agrees_with_goldens(shipped_kb):
    total, misses = measure(shipped_kb.kb)
    unexplained = [f"{g.name} ({', '.join(bad)}; {g.file})" for g, bad in misses
                   if not _allowed(g, bad)]
    agree = 1 - len(misses) / total
    assert not unexplained, f"{len(unexplained)} unexplained misses:\n" + "\n".join(unexplained)
    assert agree >= 0.99, f"only {agree:.1%} of {total} golden symbols agree"


def test_pre_2_2_goldens_exist_by_name(shipped_kb):
    _, misses = measure(shipped_kb.kb, old=True)
    # Names that 2.x dropped before 2.2 (tf.summary.enable_trace...) are the only absences.
    absent = sorted(g.name for g, bad in misses if "absent" in bad)
    assert absent == ["tf.summary.disable_trace", "tf.summary.enable_trace",
                      "tf.summary.export_trace", "tf.summary.import_event",
                      "tf.summary.summary_scope"], absent


def test_allow_list_has_no_stale_entries(shipped_kb):
    _, misses = measure(shipped_kb.kb)
    used = {g.name for g, _ in misses} | {f"{g.name} {b}" for g, bad in misses for b in bad}
    stale = sorted(k for k in ALLOWED if k not in used)
    assert not stale, f"allow-list entries that now agree (remove them): {stale}"


if __name__ == "__main__":  # baseline report: python tests/knowledge_base/test_kb_goldens.py KB_PATH
    import sys
    from collections import Counter

    from knowledge_base.store import KB
    kb = KB(Path(sys.argv[1]))
    t_old, m_old = measure(kb, old=True)
    print(f"pre-2.2 goldens (not counted): {t_old - len(m_old)}/{t_old} agree")
    total, misses = measure(kb)
    print(f"{total - len(misses)}/{total} golden symbols agree "
          f"({1 - len(misses) / total:.1%}); misses by check: "
          f"{dict(Counter(b for _, bad in misses for b in bad))}")
    by_file = Counter(g.file for g, _ in misses)
    for f, n in by_file.most_common():
        print(f"  {n:4} {f}")
    if "-v" in sys.argv:
        for g, bad in misses:
            print("   ", g.name, bad)
