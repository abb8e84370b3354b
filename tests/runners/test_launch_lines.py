"""A job's processes write to one log through runners/launch.py: each process's every line
reaches it whole, with that process's prefix, however the writes were cut and however the
processes' writes fell together (the CI failure this guards: "[0] workers[1] workers 2")."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / "runners" / "launch.py"
# A stdlib-only script the sandbox runs by path: loaded from its file, so that runners/ never
# goes on sys.path (its kubernetes/ would shadow the kubernetes client for every test).
_spec = importlib.util.spec_from_file_location("tfdesk_launch_script", LAUNCH)
launch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(launch)

BODY = st.text(alphabet=st.characters(blacklist_characters="\r\n", codec="utf-8"), max_size=30)
LINE = st.tuples(BODY, st.sampled_from(["\n", "\r\n", "\r"])).map("".join)
OUTPUT = st.lists(LINE, max_size=12).map("".join).map(str.encode)


def _cuts(data: bytes, draw) -> list[bytes]:
    points = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@settings(max_examples=300, deadline=None)
@given(a=OUTPUT, b=OUTPUT, tail=st.booleans(), data=st.data())
def test_lines_stay_whole_whatever_the_cuts_and_order(a, b, tail, data):
    if tail:
        a += b"no end"
    streams = {b"[0] ": launch.Lines(b"[0] "), b"[1] ": launch.Lines(b"[1] ")}
    pieces = [(b"[0] ", p) for p in _cuts(a, data.draw)] + [(b"[1] ", p) for p in
                                                              _cuts(b, data.draw)]
    order = data.draw(st.permutations(range(len(pieces))))
    # Each process's own pieces stay in order; the two interleave as the draw says.
    queues = {k: [p for kk, p in pieces if kk == k] for k in streams}
    log = b""
    for i in order:
        key = pieces[i][0]
        log += streams[key].feed(queues[key].pop(0))
    log += b"".join(s.close() for s in streams.values())
    got = {k: b"" for k in streams}
    for line in re.findall(rb"[^\r\n]*(?:\r\n|\r|\n)", log):
        assert line[:4] in streams, line
        got[line[:4]] += line[4:]
    assert got[b"[0] "] == a + (b"\n" if tail else b"")
    assert got[b"[1] "] == b


def test_a_line_longer_than_a_chunk_is_cut_not_held():
    lines = launch.Lines(b"[0] ")
    out = lines.feed(b"x" * (launch.CHUNK + 10))
    assert out == b"[0] " + b"x" * (launch.CHUNK + 10) + b"\n"
    assert lines.close() == b""


WORKER = """
import os, sys, time
for _ in range(300):
    for piece in (b"workers", b" ", b"2", b"\\n"):
        os.write(1, piece)
        time.sleep(0.0001)
"""


def test_two_processes_printing_at_once_never_mix_a_line(tmp_path):
    plan = tmp_path / "procs.json"
    plan.write_text(json.dumps({"procs": [
        {"argv": [sys.executable, "-c", WORKER], "env": {}} for _ in range(2)]}))
    out = subprocess.run([sys.executable, "-I", "-S", str(LAUNCH),
                          str(plan)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    assert sorted(set(lines)) == ["[0] workers 2", "[1] workers 2"], set(lines)
    assert len(lines) == 600
