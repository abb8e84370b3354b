"""A state database as a team would have it after some work, for the web view's tests and
benchmark: training runs with epoch and step metrics, a model converted to ONNX with its
validation and benchmark, a dataset, a project, a pipeline and one run of it.

Everything goes through tfdesk's own stores (JobStore, the catalog modules, catalog.runs with a
small StepExecutor that records jobs in the store, as catalog/executor.py invites)."""
from __future__ import annotations

import time
from pathlib import Path

from catalog import datasets, models, pipelines, projects
from catalog import runs as pipeline_runs
from catalog.executor import StepOutcome
from catalog.store import open_db
from runners import tracking
from runners.store import JobStore

BENCH = {"original": [{"batch": b, "p50_ms": 4.0 * b ** 0.5, "p90_ms": 5.0 * b ** 0.5,
                       "p99_ms": 6.0 * b ** 0.5, "throughput_per_s": 250.0 * b ** 0.5}
                      for b in (1, 8, 32)],
         "converted": [{"batch": b, "p50_ms": 1.5 * b ** 0.5, "p90_ms": 2.0 * b ** 0.5,
                        "p99_ms": 2.5 * b ** 0.5, "throughput_per_s": 700.0 * b ** 0.5}
                       for b in (1, 8, 32)]}
VALIDATION = {"passed": True, "samples": 64, "tolerance": {"atol": 1e-4, "rtol": 1e-3},
              "outputs": {"dense": {"max_abs_error": 2.1e-6}}}
PIPELINE = """
name: mnist-flow
project: vision
steps:
  - name: train
    kind: train
    with: {script: train.py, workers: 2}
  - name: export
    kind: convert-model
    with: {model: "${steps.train.outputs.model}", target: onnx}
"""


class RecordingSteps:
    """A StepExecutor whose steps are jobs in the store that succeed at once."""

    def __init__(self, store: JobStore, jobs_dir: Path, owner: str):
        self.store, self.jobs_dir, self.owner = store, jobs_dir, owner

    def submit(self, kind, spec, owner, reply_to, readable=()):
        from runners.specs import as_mapping
        job, _ = self.store.create(kind, {**as_mapping(kind, spec), "launcher": "python"}, owner,
                                   {}, "local", self.jobs_dir)
        for st in ("starting", "running", "succeeded"):
            self.store.transition(job.id, st)
        return job.id

    def wait(self, job_id, timeout=None):
        return StepOutcome("succeeded", {"model": "/srv/models/m.keras"})


def train_job(store: JobStore, home: Path, owner: str, lr: str, acc: float, epochs: int = 5,
              state: str = "succeeded", workers: int = 2) -> str:
    job, _ = store.create("train", {"script_name": "mnist.py", "workers": workers,
                                    "launcher": "horovod", "script_sha256": "5e" * 32,
                                    "args": ["--lr", lr, "--batch-size", "64"]},
                          owner, {}, "local", home / "jobs")
    for e in range(1, epochs + 1):
        store.add_metrics(job.id, e, {"loss": 1.0 / (e + acc * 5), "val_loss": 1.1 / (e + acc * 4),
                                      "val_accuracy": min(0.99, acc * (0.8 + 0.04 * e))})
    for st in ("starting", "running") + ((state,) if state != "running" else ()):
        store.transition(job.id, st)
    return job.id


def populate(home: Path) -> dict:
    """The state described above; returns the ids and names tests look for."""
    home.mkdir(parents=True, exist_ok=True)
    store = JobStore(home / "state.sqlite")
    conn = open_db(home / "state.sqlite")
    tconn = tracking.open_tracking(home / "state.sqlite")
    projects.add(conn, "vision", "ana", "image models")
    datasets.add(conn, "mnist", "gs://team/mnist", "ana", format="tfrecord", project="vision")
    runs = {
        "best": train_job(store, home, "ana", "0.001", 0.97),
        "other": train_job(store, home, "ana", "0.01", 0.90),
        "bo": train_job(store, home, "bo", "0.1", 0.60, state="failed"),
    }
    tracking.record_steps(tconn, runs["best"], [(s, {"loss": 1.0 / s}) for s in range(10, 110, 10)])
    for r in runs.values():
        projects.add_job(conn, "vision", r)
    keras = models.add(conn, "mnist", "ana", "gs://team/models/mnist.keras", format="keras",
                       job_id=runs["best"], dataset="mnist", project="vision")
    conv, _ = store.create("convert-model", {"name": "mnist", "target": "onnx",
                                             "precision": "fp32", "mode": "convert"},
                           "ana", {}, "local", home / "jobs")
    for st in ("starting", "running", "succeeded"):
        store.transition(conv.id, st)
    onnx = models.add(conn, "mnist-onnx", "ana", "gs://team/models/mnist.onnx", format="onnx",
                      job_id=conv.id, parent=keras["ref"], validation=VALIDATION,
                      benchmark=BENCH, project="vision")
    pipelines.add(conn, None, PIPELINE, "ana")
    run_id = pipeline_runs.start(conn, "mnist-flow", "ana")
    pipeline_runs.execute(conn, run_id, RecordingSteps(store, home / "jobs", "ana"))
    store.close()
    conn.close()
    tconn.close()
    return {"runs": runs, "convert": conv.id, "keras": keras["ref"], "onnx": onnx["ref"],
            "pipeline": "mnist-flow", "pipeline_run": run_id, "t": time.time()}


def start_site(home: Path, oidc) -> dict:
    """:func:`populate` ``home``, then serve the web view on a free loopback port, with sign-in
    with Slack pointed at ``oidc`` (tests/oidc_stub.py). Stop it with :func:`stop_site`."""
    from bot import commands
    from bot.config import load_config
    from bot.services import Services
    from bot.web.server import WebServer
    from tests.oidc_stub import CLIENT_ID, CLIENT_SECRET, TEAM
    ids = populate(home)
    (home / "tfdesk.toml").write_text(
        f'[web]\nclient_id = "{CLIENT_ID}"\nclient_secret = "{CLIENT_SECRET}"\n'
        f'oidc_url = "{oidc.base}"\nteam_id = "{TEAM}"\n'
        f'[slack]\napi_url = "{oidc.api_url}"\nadmin_users = ["U0BOSS"]\n')
    commands.load()
    config = load_config({"TFDESK_HOME": str(home)})
    services = Services(config)
    server = WebServer(config, services, host="127.0.0.1", port=0, env={}).start()
    return {"server": server, "services": services, "ids": ids, "url": server.url.rstrip("/"),
            "home": home}


def stop_site(site: dict) -> None:
    site["server"].stop()
    site["services"].close()
