"""Red team: every command, from every role, against things someone else owns, sent to the real
HTTP endpoint (signed as Slack signs) with the Slack stand-in answering; the assertions are on
side effects (jobs, catalog rows, files on disk), not only on what the answer says.

Roles: UNONE (a member, no rights), UCOMP (compute), UADMIN (admin), and the operator at the
terminal. Targets belong to UOWNER. One server per module; the engine starts nothing (no pool
slots), so a queued job stays queued unless someone cancels it.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import sqlite3
import time
import uuid

import pytest
from tests.slack_stub import SlackEnv, message_text

from bot.context import Context
from bot.dispatch import authorize, run_line
from bot.parser import parser
from bot.permissions import Actor
from bot.registry import COMMANDS

parser()
ROLES = {"UNONE": set(), "UCOMP": {"compute"}, "UADMIN": {"compute", "admin"}}
TOML = ('[slack]\ncompute_users = ["UCOMP", "UOWNER"]\nadmin_users = ["UADMIN"]\n'
        'max_running_jobs_per_user = 1000\nretry_backoff_s = 0.01\n')
SCRIPT = "print('training')\n"
_channels = itertools.count(1)


def idle_engine(config):
    from bot.services import engine_config
    from runners.engine import Engine
    cfg = engine_config(config)
    cfg.local_workers = 0
    cfg.kubernetes_workers = 0
    cfg.follow = False
    return Engine(cfg)


class World:
    """The server, its home, and UOWNER's things."""

    def __init__(self, tmp):
        self.env = SlackEnv(tmp, TOML, engine_factory=idle_engine)
        self.home = self.env.home
        self.jobs_dir = self.env.runtime.engine.jobs_dir
        self.owner_ctx = Context(self.env.config, actor=Actor("UOWNER"),
                                 services=self.env.runtime.services)
        self.uploads = {u: self.upload(u, f"F{u}") for u in ("UOWNER", *ROLES)}
        self.default_env = self.run_owner("environments list --json").data[
            "environments"][0]["name"]

    def upload(self, user: str, key: str, name: str = "train.py", text: str = SCRIPT):
        folder = self.home / "slack" / "uploads" / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        (folder / "upload.json").write_text(json.dumps({"name": name, "user": user}))
        return folder / name

    def run_owner(self, line: str):
        _, reply = run_line(self.owner_ctx, line)
        assert reply.ok, (line, reply.text)
        return reply

    # -- UOWNER's things, fresh for each case -------------------------------------------------
    def job(self, owner: str = "UOWNER") -> str:
        return self.env.runtime.engine.submit(
            "train", {"script_path": str(self.uploads["UOWNER"]), "workers": 1},
            owner=owner, reply_to={"kind": "terminal"}).id

    def targets(self, line: str) -> dict[str, str]:
        uid = uuid.uuid4().hex[:8]
        t = {"uid": uid, "upload": "FUOWNER/train.py", "default_env": self.default_env,
             "home": str(self.home), "jobs": str(self.jobs_dir)}
        if "{job}" in line:
            t["job"] = self.job()
        if "{dataset}" in line:
            t["dataset"] = f"d-{uid}"
            self.run_owner(f"datasets add d-{uid} {self.uploads['UOWNER']} --format csv")
        if "{model}" in line:
            sm = self.home.parent / f"sm-{uid}"
            sm.mkdir()
            (sm / "saved_model.pb").write_bytes(b"pb")
            t["model"] = f"m-{uid}"
            self.run_owner(f"models add m-{uid} {sm}")
        if "{component}" in line:
            t["component"] = f"c-{uid}"
            self.run_owner(f"components add c-{uid} --kind train --param workers=1")
        if "{project}" in line:
            t["project"] = f"p-{uid}"
            self.run_owner(f"projects add p-{uid}")
        if "{env}" in line:
            t["env"] = f"e-{uid}"
            self.run_owner(f"environments add e-{uid} --image example/tf:2.15")
        if "{pipeline}" in line or "{run}" in line:
            t["pipeline"] = f"pl-{uid}"
            self.pipeline(f"pl-{uid}")
        if "{run}" in line:
            t["run"] = self.orphaned_run(t["pipeline"])
        return t

    def pipeline(self, name: str, step_with: str = "{script: '${params.script}'}",
                 owner_ctx=None) -> None:
        yaml = self.home.parent / f"{name}.yaml"
        yaml.write_text(f"params: {{script: '{self.uploads['UOWNER']}'}}\nsteps:\n"
                        f"  - name: train\n    kind: train\n    timeout: 1\n"
                        f"    with: {step_with}\n", encoding="utf-8")
        self.run_owner(f"pipelines add {name} {yaml}")

    def orphaned_run(self, pipeline: str) -> str:
        """A run of UOWNER's whose tfdesk stopped (for 'pipeline follow')."""
        from catalog import runs
        conn = self.db()
        run_id = runs.start(conn, pipeline, "UOWNER")
        with conn:
            conn.execute("UPDATE catalog_runs SET state = 'running' WHERE id = ?", (run_id,))
            conn.execute("UPDATE catalog_run_steps SET state = 'running', job_id = ? WHERE "
                         "run_id = ?", ("j-00000000", run_id))
        conn.close()
        return run_id

    def db(self):
        conn = sqlite3.connect(self.env.config.state_path)
        conn.row_factory = sqlite3.Row
        return conn

    # -- what changed ---------------------------------------------------------------------------
    def snapshot(self) -> dict:
        conn = self.db()
        try:
            tables = {t: sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {t}"))
                      for t in ("catalog_datasets", "catalog_models", "catalog_components",
                                "catalog_projects", "catalog_pipelines", "catalog_environments",
                                "catalog_runs", "catalog_channel_projects")
                      if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                      (t,)).fetchone()}
        finally:
            conn.close()
        files = {}
        for p in sorted(self.home.rglob("*")):
            rel = p.relative_to(self.home).as_posix()
            if p.is_file() and not rel.startswith(("state.sqlite", "slack/charts")) \
                    and "/.tfdesk/" not in f"/{rel}":
                files[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif p.is_dir():
                files[rel + "/"] = ""
        jobs = sorted((j.id, j.state) for j in self.env.runtime.jobs.list())
        return {"jobs": jobs, "tables": tables, "files": files}

    # -- asking over HTTP ----------------------------------------------------------------------
    def ask(self, user: str, line: str, timeout: float = 30) -> tuple[str, bool]:
        """Send /tf LINE as ``user`` in a fresh channel; (the answer's text, refused-privately)."""
        channel = f"CRT{next(_channels)}"
        resp = self.env.command(line, user=user, channel=channel)
        assert resp.status_code == 200
        stub = self.env.stub

        def answer(c):
            if c["args"].get("channel") != channel:
                return False
            return "working on it" not in message_text(c["args"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for c in list(stub.calls):
                if c["status"] == 200 and c["method"] in (
                        "chat.postEphemeral", "chat.postMessage", "chat.update") and answer(c):
                    time.sleep(0.05)  # the handler returned before answering: settled
                    return message_text(c["args"]), c["method"] == "chat.postEphemeral"
            time.sleep(0.02)
        raise AssertionError(f"no answer to {line!r} from {user}")

    def audit(self, user: str, command: str) -> list[dict]:
        return [r for r in self.env.runtime.bot.store.audit_rows()
                if r["user"] == user and r["command"] == command]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("redteam"))
    yield w
    w.env.close()
    w.env.runtime.engine.close()


# One line per command, aimed at UOWNER's things wherever the command takes a target.
SAMPLES = {
    "ask": "ask tf.pad", "help": "help", "history": "history tf.nn.softmax",
    "diff": "diff 2.15 2.16", "kb status": "kb status", "kb load": "kb load",
    "kb build": "kb build --versions 2.15", "serve": "serve", "site build": "site build",
    "site serve": "site serve", "catalog export": "catalog export {home}/x.json",
    "catalog import": "catalog import {home}/x.json",
    "catalog check": "catalog check",
    "jobs": "jobs --all", "job": "job {job}", "logs": "logs {job}",
    "cancel": "cancel {job}", "delete": "delete {job} --force",
    "train": "train {upload} --workers 1",
    "convert": "convert {upload} -o out-{uid}.py",
    "convert-model": "convert-model {upload} --detach",
    "infer": "infer {upload} --detach", "evaluate": "evaluate {upload} --data {upload} --detach",
    "datasets add": "datasets add nd-{uid} {upload} --format csv",
    "models add": "models add nm-{uid} {upload} --in-place --format keras",
    "components add": "components add nc-{uid} --kind train --param workers=1",
    "projects add": "projects add np-{uid}", "projects use": "projects use {project}",
    "pipelines add": "pipelines add {pipeline} {upload} --replace",
    "pipeline run": "pipeline run {pipeline}", "pipeline follow": "pipeline follow {run}",
    "pipeline status": "pipeline status {run}", "pipeline runs": "pipeline runs",
    "environments add": "environments add ne-{uid} --image example/tf:2.15",
    "environments default": "environments default {default_env}",
    "environments match": "environments match --tf 2.15",
    "catalog check": "catalog check", "runs": "runs", "web": "web",
}
for _kind, _key in (("datasets", "dataset"), ("models", "model"), ("components", "component"),
                    ("projects", "project"), ("pipelines", "pipeline"), ("environments", "env")):
    SAMPLES[f"{_kind} list"] = f"{_kind} list"
    SAMPLES[f"{_kind} show"] = f"{_kind} show {{{_key}}}"
    SAMPLES[f"{_kind} delete"] = f"{_kind} delete {{{_key}}} --force"
# "own" commands whose sample targets UOWNER's thing (a job, an entry, an upload): refused to
# every member but an admin. The others ("projects use", adds that name no one's file) pass.
OTHERS_THING = {"cancel", "delete", "convert", "datasets add", "models add", "pipelines add",
                "datasets delete", "models delete", "components delete", "projects delete",
                "pipelines delete", "train", "convert-model", "infer", "evaluate",
                "pipeline run", "pipeline follow"}
REFUSED_WORDS = ("only for configured users", "for tfdesk admins only", "only in a terminal",
                 "belongs to UOWNER", "not a file shared with tfdesk")
CASES = [(user, name) for name in sorted(COMMANDS) for user in ROLES]


def test_every_command_has_a_sample():
    assert set(SAMPLES) == set(COMMANDS)


def _allowed(user: str, name: str) -> bool:
    perm = COMMANDS[name].permission
    grants = {"read", "own"} | ROLES[user]
    return perm in grants


@pytest.mark.parametrize("user,name", CASES, ids=[f"{u}-{n}" for u, n in CASES])
def test_role_matrix(world, user, name):
    line_t = SAMPLES[name]
    targets = world.targets(line_t)
    line = line_t.format(**targets)
    before = world.snapshot()
    text, private = world.ask(user, line)
    after = world.snapshot()
    refused = any(w in text for w in REFUSED_WORDS)
    if not _allowed(user, name):
        assert refused and private, (line, text)
        assert after == before, f"{line}: a refused command changed something"
        assert world.audit(user, name)[-1]["allowed"] == 0
        return
    if name in OTHERS_THING and "admin" not in ROLES[user]:
        # (compute commands answer in their thread, so a refusal there is not private)
        assert refused and (private or name in ("pipeline run", "pipeline follow")), (line, text)
        assert after == before, f"{line}: a refused command changed something"
        assert world.audit(user, name)[-1]["allowed"] == 0
        return
    assert not refused, (line, text)
    if COMMANDS[name].permission == "read":
        assert after == before, f"{line}: a read command changed something"
    _admin_effect(world, name, targets, before, after, text)


def _admin_effect(world, name, targets, before, after, text):
    """What an allowed command on UOWNER's thing did (mostly: an admin's)."""
    if name == "cancel":
        assert world.env.runtime.jobs.get(targets["job"]).state == "cancelled"
    elif name == "delete":
        assert targets["job"] not in {j for j, _ in after["jobs"]}
        assert not (world.jobs_dir / targets["job"]).exists()
    elif name.endswith(" delete"):
        assert after != before and "deleted" in text
    elif name == "train":
        assert len(after["jobs"]) == len(before["jobs"]) + 1


# Serve, build or download for minutes: for these the operator's column checks the gate only.
LONG_RUNNING = {"serve", "site serve", "site build", "kb build", "kb load", "web"}
OPERATOR_CASES = sorted(set(COMMANDS) - LONG_RUNNING)


@pytest.mark.parametrize("name", OPERATOR_CASES)
def test_operator_matrix(world, name):
    """The terminal is the machine's operator: every command, on anyone's things."""
    line_t = SAMPLES[name]
    targets = world.targets(line_t)
    targets["upload"] = str(world.uploads["UOWNER"])  # the operator names server paths
    line = line_t.format(**targets).replace(" -o out-", f" -o {world.home.parent}/out-")
    ctx = Context(world.env.config, services=world.env.runtime.services)
    before = world.snapshot()
    _, reply = run_line(ctx, line)
    after = world.snapshot()
    assert not any(w in reply.text for w in REFUSED_WORDS), (line, reply.text)
    if COMMANDS[name].permission == "read":
        assert after == before, f"{line}: a read command changed something"
    _admin_effect(world, name, targets, before, after, reply.text)


def test_operator_at_the_terminal_may_run_everything(world):
    ctx = Context(world.env.config, services=world.env.runtime.services)
    assert all(authorize(ctx, spec) is None for spec in COMMANDS.values())
    job = world.job()
    _, reply = run_line(ctx, f"cancel {job}")
    assert reply.ok and world.env.runtime.jobs.get(job).state == "cancelled"


# -- the cases the issue lists -------------------------------------------------------------------
def test_pipeline_run_by_a_member_without_rights_starts_nothing(world):
    name = world.targets("{pipeline}")["pipeline"]
    before = world.snapshot()
    text, private = world.ask("UNONE", f"pipeline run {name}")
    assert private and "only for configured users" in text
    assert world.snapshot() == before  # no job, no run row
    # Nor can they plant code for someone with rights to run.
    world.upload("UNONE", "FPLANT", "evil.yaml",
                 "steps:\n  - name: s\n    kind: train\n"
                 "    with: {script_source: \"import os; os.system('id')\"}\n")
    before = world.snapshot()
    text, private = world.ask("UNONE", "pipelines add planted FPLANT/evil.yaml")
    assert private and "inline code" in text
    assert world.snapshot() == before


def test_pipeline_step_names_pass_the_commands_path_gate(world):
    """A compute member's pipeline whose step names a server path, or another member's upload,
    starts nothing; their own upload, passed as a parameter, is what the step gets."""
    world.upload("UCOMP", "FPIPE", "p.yaml",
                 "params: {script: train.py}\nsteps:\n  - name: s\n    kind: train\n"
                 "    timeout: 1\n    with: {script: '${params.script}'}\n")
    text, _ = world.ask("UCOMP", "pipelines add mine-uc FPIPE/p.yaml")
    assert "added pipeline mine-uc" in text, text
    for param in (f"script={world.uploads['UOWNER']}", "script=/etc/passwd",
                  f"script={world.jobs_dir}"):
        before = world.snapshot()
        text, _ = world.ask("UCOMP", f"pipeline run mine-uc --param {param}")
        assert "not a file shared with tfdesk" in text, text
        assert world.snapshot() == before
    before = len(world.env.runtime.jobs.list())
    text, _ = world.ask("UCOMP", "pipeline run mine-uc --param script=FUCOMP/train.py")
    jobs = world.env.runtime.jobs.list()
    mine = [j for j in jobs if j.owner == "UCOMP"]  # ran, as UCOMP's job, on UCOMP's file
    assert len(jobs) == before + 1 and len(mine) == 1, text
    assert mine[0].spec.script_name == "train.py"


def test_cancel_of_another_members_job_leaves_it_running(world):
    job = world.job()
    for how in ("command", "button"):
        if how == "command":
            text, private = world.ask("UCOMP", f"cancel {job}")
            assert private and "belongs to UOWNER" in text
        else:
            world.env.action("tf_job_cancel", job, user="UCOMP", channel="CBTN")
            world.env.stub.wait_for("chat.postEphemeral",
                                    lambda c: "belongs to UOWNER" in message_text(c["args"]))
        assert world.env.runtime.jobs.get(job).state == "queued"
    text, _ = world.ask("UADMIN", f"cancel {job}")
    assert world.env.runtime.jobs.get(job).state == "cancelled", text
    operators = world.job(owner="local")  # started at the terminal
    for user in ("UNONE", "UCOMP"):
        for line in (f"cancel {operators}", f"delete {operators} --force"):
            text, private = world.ask(user, line)
            assert private and "belongs to local" in text
    assert world.env.runtime.jobs.get(operators).state == "queued"


def test_models_add_in_place_of_the_jobs_folder_then_delete(world):
    job = world.job()
    for user in ROLES:
        text, _ = world.ask(user, f"models add junk {world.jobs_dir} --in-place")
        assert "not a file shared with tfdesk" in text or "tfdesk's own folder" in text, text
        text, _ = world.ask(user, "models delete junk")
        assert (world.jobs_dir / job / "script.py").is_file()
    assert world.ask("UADMIN", "models show junk")[0].count("no model")
    # Not even the operator can register tfdesk's own folders...
    ctx = Context(world.env.config, services=world.env.runtime.services)
    for folder in (world.jobs_dir, world.home, world.home / "slack" / "uploads"):
        _, reply = run_line(ctx, f"models add junk {folder} --in-place")
        assert not reply.ok and "tfdesk's own folder" in reply.text
    # ...and deleting an in-place model never deletes the member's files: from Slack it points
    # at the file gate's kept copy, which goes with its last entry (catalog/kept.py).
    kept = world.home / "catalog" / "files"
    before = set(kept.iterdir()) if kept.is_dir() else set()  # other tests' entries share it
    text, _ = world.ask("UCOMP", "models add mine FUCOMP --in-place --format keras")
    assert "added model mine:1" in text, text
    assert set(kept.iterdir()) - before  # the kept copy this entry points at...
    text, _ = world.ask("UCOMP", "models delete mine")
    assert "deleted model mine:1" in text and "removed artifacts: catalog/files/" in text, text
    assert set(kept.iterdir()) == before  # ...goes with it, and nothing else does
    assert world.uploads["UCOMP"].is_file()
    assert (world.jobs_dir / job / "script.py").is_file()


def test_convert_output_never_lands_in_a_queued_jobs_script(world):
    job = world.job()
    target = world.jobs_dir / job / "script.py"
    original = target.read_bytes()
    for out in (str(target), f"../../../jobs/{job}/script.py", f"{world.home}/slack/uploads/"
                "FUOWNER/train.py", "outputs/../../uploads/FUOWNER/train.py"):
        text, private = world.ask("UCOMP", f"convert FUCOMP/train.py -o {out}")
        assert private and ("output folder" in text), (out, text)
    assert target.read_bytes() == original
    assert world.uploads["UOWNER"].read_text() == SCRIPT
    # A relative name is the member's own output, wherever it seems to point.
    text, _ = world.ask("UCOMP", f"convert FUCOMP/train.py -o {job}/script.py")
    assert target.read_bytes() == original
    assert (world.home / "slack" / "outputs" / "UCOMP" / job / "script.py").is_file()
    # The terminal does not write into job folders either.
    ctx = Context(world.env.config, services=world.env.runtime.services)
    _, reply = run_line(ctx, f"convert {world.uploads['UOWNER']} -o {target}")
    assert not reply.ok and "only the job engine writes" in reply.text
    assert target.read_bytes() == original


@pytest.mark.parametrize("line", ["jobs --all", "job {job}", "jobs --all --json",
                                  "job {job} --json", "logs {job}"])
def test_job_answers_show_no_server_paths(world, line):
    job = world.job()
    text, _ = world.ask("UNONE", line.format(job=job))
    assert job in text
    for path in (str(world.home), str(world.jobs_dir), "/tmp/", "/work/", "/root/"):
        assert path not in text, (line, text)
    assert not re.search(r"(?<![\w:/.~-])/(tmp|work|root|home|usr|var|etc)/", text), text


def test_reports_uploaded_to_slack_show_no_server_paths(world):
    report = world.home / "jobs-report.json"
    report.write_text(json.dumps({"model": f"{world.jobs_dir}/j-1a2b3c4d/out/model.onnx",
                                  "workdir": str(world.home / "models" / "x")}))
    original = report.read_text()
    assert world.env.runtime.bot.messenger.upload("CFILES", None, [report])
    sent = [u for u in world.env.stub.uploads.values() if u.get("filename") == report.name]
    content = sent[-1]["content"].decode()
    assert str(world.home) not in content and "j-1a2b3c4d/out/model.onnx" in content
    assert report.read_text() == original  # the file itself is left as it is
    report.unlink()


def test_machine_paths_and_long_waits_are_not_for_slack(world):
    text, private = world.ask("UADMIN", "environments add local-py --python /usr/bin/python3")
    assert private and "register it in a terminal" in text
    job = world.job()
    started = time.monotonic()
    text, _ = world.ask("UNONE", f"logs {job} --follow", timeout=10)
    assert time.monotonic() - started < 5 and world.env.runtime.jobs.get(job).active
    project = world.targets("{project}")["project"]
    text, private = world.ask("UCOMP", f"projects use {project} --channel COTHER")
    assert private and "channel you are in" in text


def test_the_same_file_shared_by_two_members_stays_each_ones(world):
    """Sharing someone's Slack file again does not make their upload yours."""
    f = world.env.stub.add_file("shared.py", SCRIPT.encode())
    seen = len(world.env.stub.calls)
    for user, ts in (("UOWNER", "1700000900.000001"), ("UCOMP", "1700000900.000002")):
        world.env.event({"type": "app_mention", "user": user, "channel": "CSHARE", "ts": ts,
                         "text": "<@UBOT>", "files": [f]})
        deadline = time.monotonic() + 60
        while not any(c["method"] in ("chat.update", "chat.postMessage") and c["status"] == 200
                      and "shared.py ->" in message_text(c["args"])
                      for c in world.env.stub.calls[seen:]):
            assert time.monotonic() < deadline, "the shared script was never converted"
            time.sleep(0.05)
        seen = len(world.env.stub.calls)
    uploads = world.home / "slack" / "uploads"
    assert json.loads((uploads / f["id"] / "upload.json").read_text())["user"] == "UOWNER"
    assert json.loads((uploads / f"{f['id']}-UCOMP" / "upload.json").read_text())[
        "user"] == "UCOMP"
    text, _ = world.ask("UCOMP", f"convert {f['id']}/shared.py")
    assert "not a file shared with tfdesk" in text
    text, _ = world.ask("UCOMP", "convert shared.py")
    assert "shared.py -> horovod" in text, text


@pytest.mark.parametrize("face", ["mention", "direct message"])
def test_other_faces_pass_the_same_gate(world, face):
    name = world.targets("{pipeline}")["pipeline"]
    job = world.job()
    before = world.snapshot()
    for n, line in enumerate((f"pipeline run {name}", f"cancel {job}")):
        ts = f"17000010{n}0.00000{1 if face == 'mention' else 2}"
        event = {"type": "app_mention", "user": "UNONE", "channel": "CFACE", "ts": ts,
                 "text": f"<@UBOT> {line}"}
        if face == "direct message":
            event.update(type="message", channel_type="im", channel="DFACE", text=line)
        world.env.event(event)
        world.env.stub.wait_for("chat.postMessage", lambda c, ts=ts: c["args"].get(
            "thread_ts") == ts and ("only for configured users" in message_text(c["args"])
                                    or "belongs to UOWNER" in message_text(c["args"])))
    assert world.snapshot() == before


def test_app_home_shows_no_server_paths(world):
    job = world.job("UHOME")  # their only job: the tab lists the newest few
    store = world.env.runtime.jobs  # the job failed, saying where (as a backend reports it)
    store.transition(job, "starting")
    store.transition(job, "failed", reason=f"no such file: {world.jobs_dir}/{job}/data.npz")
    world.env.event({"type": "app_home_opened", "user": "UHOME", "channel": "DHOME",
                     "tab": "home"})
    view = world.env.stub.wait_for("views.publish",
                                   lambda c: c["args"].get("user_id") == "UHOME")[0]["args"]
    text = message_text(view["view"]) + json.dumps(view["view"])
    assert job in text and str(world.home) not in text
