"""The sandbox's parts, by invariant: the output cap keeps exactly the head and the tail and
says what it dropped; tfdesk's reads of a job folder never pass a link, wherever the link is;
limits parse or are refused by name; the runtime starts in a sandbox as the job user."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from runners import jobfiles, sandbox, supervise
from runners.models import JobError


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(st.binary(min_size=0, max_size=300), max_size=30),
       head=st.integers(0, 400), tail=st.integers(1, 400))
def test_the_output_cap_keeps_head_and_tail_and_says_what_it_dropped(tmp_path_factory, chunks,
                                                                     head, tail):
    path = tmp_path_factory.mktemp("cap") / "job.log"
    log = supervise.CappedLog(path, head, tail)
    for c in chunks:
        log.write(c)
    log.close()
    data, text = b"".join(chunks), path.read_bytes()
    if not head or len(data) <= head:
        assert text == data  # under the cap: the output as it came
        return
    assert text.startswith(data[:head])
    assert b"[tfdesk] the job's output passed" in text
    assert b"bytes of output dropped here (output cap)" in text
    kept = text.rsplit(b"follow\n", 1)[1]
    assert data.endswith(kept) and len(kept) <= tail
    dropped = int(text.rsplit(b"[tfdesk] ", 1)[1].split(b" ")[0])
    assert dropped == len(data) - head - len(kept)
    assert len(text) <= head + tail + 400  # the two notes


names = st.text(st.characters(whitelist_categories=("Ll", "Nd")), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(parts=st.lists(names, min_size=1, max_size=4, unique=True), at=st.integers(0, 3),
       to_dir=st.booleans())
def test_reading_a_job_folder_never_passes_a_link(tmp_path_factory, parts, at, to_dir):
    root = tmp_path_factory.mktemp("job")
    secret = tmp_path_factory.mktemp("tfdesk") / "tfdesk.toml"
    secret.write_text("token")
    *dirs, name = parts
    here = root
    for d in dirs:
        here = here / d
        here.mkdir()
    (here / name).write_text("plain")
    rel = "/".join(parts)
    assert jobfiles.read_job_text(root, rel) == "plain" and jobfiles.plain(root, rel)
    # A link in place of any one component: refused, and the secret is never read.
    at = min(at, len(parts) - 1)
    victim = root.joinpath(*parts[:at + 1])
    if victim.is_dir():
        import shutil
        shutil.rmtree(victim)
    else:
        victim.unlink()
    victim.symlink_to(secret.parent if (to_dir and at < len(parts) - 1) else secret)
    with pytest.raises(OSError):
        jobfiles.read_job_text(root, rel)
    assert not jobfiles.plain(root, rel)  # what any job kind lists there is dropped
    assert all(not Path(root, p).is_symlink() for p, _ in jobfiles.walk(root))
    for bad in ("../x", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(jobfiles.LinkRefused):
            jobfiles.open_job_file(root, bad)


def test_artifacts_leave_links_out(tmp_path):
    (tmp_path / "model.keras").write_text("w")
    (tmp_path / "sm").mkdir()
    (tmp_path / "sm" / "saved_model.pb").write_text("pb")
    (tmp_path / "sm" / "variables").mkdir()
    (tmp_path / "sm" / "variables" / "v.data").write_text("123")
    (tmp_path / "root").symlink_to("/")
    (tmp_path / "passwd.csv").symlink_to("/etc/passwd")
    arts = jobfiles.collect_artifacts(tmp_path)
    assert arts == [{"path": "model.keras", "size": 1, "kind": "model"},
                    {"path": "sm", "size": 5, "kind": "saved_model"}]


@given(value=st.integers(1, 1 << 40), unit=st.sampled_from(["", "K", "M", "G", "k", "Mi", "GB"]))
def test_sizes_parse(value, unit):
    factor = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit[:1].lower()]
    assert sandbox.parse_size(f"{value}{unit}", "disk") == value * factor


def test_limits_are_refused_by_name():
    assert sandbox.Limits.from_settings({"memory": "2G", "processes": 64}).memory == 2 << 30
    with pytest.raises(JobError, match="unknown \\[runner.limits\\] setting\\(s\\): memroy"):
        sandbox.Limits.from_settings({"memroy": "2G"})
    with pytest.raises(JobError, match="disk = 'lots' is not a size"):
        sandbox.Limits.from_settings({"disk": "lots"})


def test_the_runtime_is_found_from_the_interpreter(tmp_path):
    roots = sandbox.runtime_roots((sys.executable,))
    assert Path(sys.prefix) in roots and Path(sys.base_prefix) in roots
    # An environment whose python is a link to another environment's: every hop is mounted.
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").symlink_to(sys.executable)
    roots = sandbox.runtime_roots((str(tmp_path / "env" / "bin" / "python"),))
    assert {tmp_path / "env", Path(sys.prefix), Path(sys.base_prefix)} <= set(roots)


@pytest.mark.skipif(os.geteuid() != 0, reason="the job user exists under a root tfdesk")
def test_the_runtime_starts_in_a_sandbox_as_the_job_user():
    said = sandbox.check_runtime(sys.executable)
    assert "runs as uid" in said and "uid 0 " not in said


def test_an_unsandboxed_job_is_still_stopped_whole(tmp_path):
    """With [runner] unsandboxed (no bubblewrap here, by setting), a process the job
    detached from it (double fork, new session) is still stopped at the timeout: the
    supervisor is the orphans' subreaper."""
    from tests.jobs_helpers import make_engine, write
    marker = f"orphan-{os.getpid()}-{tmp_path.name}"
    script = write(tmp_path / "detach.py", f"""
        import os, subprocess, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)",
                                          "{marker}"])
            os._exit(0)
        print("Epoch 1/1", flush=True)
        time.sleep(60)
    """)
    eng = make_engine(tmp_path / "home", runner={"unsandboxed": True,
                                                 "bwrap": str(tmp_path / "no-bwrap")})
    try:
        assert eng.local.sandbox is None and eng.local.refusal is None
        job = eng.wait(eng.submit("train", {"script_path": str(script), "timeout": 2}).id, 30)
        assert job.state == "failed" and "timed out" in job.reason
    finally:
        eng.close()
    import time
    time.sleep(0.3)
    left = [p for p in filter(str.isdigit, os.listdir("/proc"))
            if marker.encode() in _cmdline(p)]
    assert left == []


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""
