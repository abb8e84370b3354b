"""Every key tfdesk reads from ``tfdesk.toml``, as data: section, name, default, the
environment variable that overrides it, and what it does. ``site_docs/admin/configuration.md``
lists the same keys (a test compares the two, and the code's reads against this table)."""
from __future__ import annotations

import difflib
from typing import NamedTuple


class Key(NamedTuple):
    section: str
    name: str
    default: str
    env: str
    help: str


K = Key
KEYS: tuple[Key, ...] = (
    # [kb], [site], [state]: where things are
    K("kb", "path", "kb.sqlite", "TFDESK_KB", "the knowledge base file (relative: under TFDESK_HOME)"),
    K("kb", "wheel_dir", "wheels", "TFDESK_WHEEL_DIR", "where `kb build` keeps TensorFlow wheels"),
    K("site", "url", "http://127.0.0.1:8000/", "TFDESK_SITE_URL", "base URL of the docs site, for links in answers"),
    K("site", "dir", "$TFDESK_HOME/site", "", "where `site build` writes the site"),
    K("site", "project_dir", "the checkout", "", "the folder with mkdocs.yml and site_docs/"),
    K("state", "path", "state.sqlite", "TFDESK_STATE", "the state database (jobs, catalog, Slack)"),
    # [slack]
    K("slack", "bot_token", "", "SLACK_BOT_TOKEN", "the bot token (xoxb-...)"),
    K("slack", "app_token", "", "SLACK_APP_TOKEN", "app-level token (xapp-...): Socket Mode"),
    K("slack", "signing_secret", "", "SLACK_SIGNING_SECRET", "verifies requests to the HTTP endpoint"),
    K("slack", "api_url", "https://slack.com/api/", "SLACK_API_URL", "the Web API base URL (a stand-in in tests)"),
    K("slack", "bind", "0.0.0.0", "", "address `serve` listens on when --host is not given"),
    K("slack", "compute_users", "[]", "", "members who may start jobs (train, convert-model, ...)"),
    K("slack", "compute_groups", "[]", "", "user groups whose members may start jobs"),
    K("slack", "compute_channels", "[]", "", "channels where anyone may start jobs"),
    K("slack", "admin_users", "[]", "", "members who may change or delete what others own"),
    K("slack", "admin_groups", "[]", "", "user groups of admins"),
    K("slack", "max_running_jobs_per_user", "2", "", "a member's active jobs at once"),
    K("slack", "max_model_mb", "1024", "", "largest model file a member may share"),
    K("slack", "file_hosts", "[]", "", "more hosts shared files may be downloaded from"),
    K("slack", "retry_backoff_s", "0.5", "", "first wait before retrying a failed Web API call"),
    K("slack", "ack_first_max_wait_s", "0.5", "", "how long work waits for pending acks"),
    K("slack", "switch_interval_s", "0.001", "", "the interpreter's thread switch interval in `serve`"),
    K("slack", "header_timeout_s", "10", "", "a request's line and headers must arrive by then"),
    K("slack", "body_timeout_s", "10", "", "its body by this long after the headers"),
    K("slack", "keep_alive_s", "5", "", "idle keep-alive connections close after this"),
    K("slack", "max_connections", "1000", "", "open connections at once (503 beyond)"),
    K("slack", "max_header_bytes", "16384", "", "size of a request's line and headers"),
    K("slack", "backlog", "2048", "", "connections waiting to be accepted"),
    # [runner]: the interpreters jobs run with
    K("runner", "python", ".venv-runner/bin/python", "TFDESK_RUNNER_PYTHON", "the Keras 2 runner (TF 2.15 + Horovod)"),
    K("runner", "keras3_python", ".venv-runner-tf221/bin/python", "TFDESK_RUNNER_KERAS3_PYTHON", "the Keras 3 runner (TF 2.21)"),
    K("runner", "user", "tfdesk-job (as root)", "", "the user local jobs run as"),
    K("runner", "unsandboxed", "false", "", "run local jobs without the sandbox (printed at start)"),
    K("runner", "network", "none", "", "a job's network: none (its own loopback) or host"),
    K("runner", "bwrap", "bwrap", "", "the bubblewrap program that builds job sandboxes"),
    K("runner", "limits", "see security", "", "[runner.limits]: cpu_seconds, memory, processes, file_size, disk, output_head/tail, tmp"),
    # [jobs]
    K("jobs", "dir", "jobs", "", "where job folders are made (relative: under TFDESK_HOME)"),
    K("jobs", "local_workers", "2", "", "local jobs running at once"),
    K("jobs", "per_owner", "local_workers", "", "active jobs per owner, local and cluster"),
    K("jobs", "grace_s", "10", "", "SIGTERM to SIGKILL on cancel and timeout"),
    # [kubernetes]
    K("kubernetes", "api_url", "", "", "the API server (or kubeconfig, or in_cluster)"),
    K("kubernetes", "kubeconfig", "", "", "a kubeconfig file"),
    K("kubernetes", "context", "", "", "its context"),
    K("kubernetes", "in_cluster", "false", "", "use the pod's service account"),
    K("kubernetes", "token", "", "", "a bearer token for api_url"),
    K("kubernetes", "verify_ssl", "true", "", "check the API server's certificate"),
    K("kubernetes", "namespace", "default", "", "where tfdesk's objects are made"),
    K("kubernetes", "retries", "3", "", "retries of a failed API call"),
    K("kubernetes", "request_timeout", "10", "", "seconds per API call"),
    K("kubernetes", "watch_timeout", "5", "", "seconds per watch window"),
    K("kubernetes", "image", "", "", "the training image for every TF version"),
    K("kubernetes", "images", "{}", "", "training images by TF version"),
    K("kubernetes", "image_pull_policy", "IfNotPresent", "", "pods' image pull policy"),
    K("kubernetes", "image_pull_secrets", "[]", "", "secrets for private registries"),
    K("kubernetes", "service_account", "", "", "the pods' service account"),
    K("kubernetes", "automount_service_account_token", "false", "", "give pods an API token"),
    K("kubernetes", "run_as_user", "1000", "", "the non-root uid of every pod (restricted security context)"),
    K("kubernetes", "run_as_group", "run_as_user", "", "its group (and fsGroup, for the volume)"),
    K("kubernetes", "requests", "{cpu = \"1\", memory = \"2Gi\"}", "", "each container's requests (train --cpu/--memory win)"),
    K("kubernetes", "limits", "{cpu = \"4\", memory = \"8Gi\"}", "", "each container's limits (GPUs are added)"),
    K("kubernetes", "mpi_home", "/home/mpiuser", "", "the MPI user's home in the Horovod image (ssh keys: .ssh)"),
    K("kubernetes", "mpi_ssh_port", "2222", "", "the port its sshd listens on"),
    K("kubernetes", "mpi_worker_command", "sshd -De -f MPI_HOME/.sshd_config", "", "what MPIJob workers run"),
    K("kubernetes", "node_selector", "{}", "", "node labels pods must match"),
    K("kubernetes", "tolerations", "[]", "", "pods' tolerations"),
    K("kubernetes", "pvc", "", "", "a PersistentVolumeClaim mounted in every pod"),
    K("kubernetes", "pvc_mount", "/data", "", "where it is mounted"),
    K("kubernetes", "pvc_local_path", "", "", "the same volume on the tfdesk machine"),
    K("kubernetes", "slots_per_worker", "GPUs per worker", "", "MPI slots per Horovod worker"),
    K("kubernetes", "ttl_seconds_after_finished", "86400", "", "finished Jobs are removed after this"),
    K("kubernetes", "tf_distribute", "indexed-job", "", "how tf.distribute jobs run on the cluster"),
    K("kubernetes", "infer_image", "tensorflow/tensorflow:2.15.0-gpu", "", "the image of model jobs"),
    K("kubernetes", "infer_gpus", "1", "", "GPUs of a model job"),
    # [web]: the browser view (tfdesk web, and tfdesk serve beside Slack)
    K("web", "bind", "127.0.0.1", "", "address the web view listens on"),
    K("web", "port", "8765", "", "its port"),
    K("web", "url", "http://BIND:PORT/", "", "its public base URL (links, the Slack sign-in redirect)"),
    K("web", "serve", "true", "", "`tfdesk serve` serves the web view too"),
    K("web", "client_id", "", "SLACK_CLIENT_ID", "the Slack app's client id: sign-in with Slack"),
    K("web", "client_secret", "", "SLACK_CLIENT_SECRET", "the Slack app's client secret"),
    K("web", "oidc_url", "https://slack.com/", "", "Slack's OpenID Connect pages and keys (a stand-in in tests)"),
    K("web", "team_id", "", "", "only members of this workspace may sign in"),
    K("web", "session_hours", "12", "", "a sign-in lasts this long"),
    K("web", "login_link_minutes", "10", "", "a `tfdesk web --login` link is valid this long"),
    # [models]: model conversion, validation and benchmarks
    K("models", "dim_default", "16", "", "size given to unknown input dimensions"),
    K("models", "threads", "0 (all)", "", "ONNX Runtime threads"),
    K("models", "min_agreement", "0.99", "", "share of outputs that must agree after conversion"),
    K("models", "warmup", "3", "", "benchmark runs not timed"),
    K("models", "iterations", "50", "", "benchmark runs timed"),
    K("models", "budget_s", "5.0", "", "most seconds a benchmark runs"),
    K("models", "tensorrt", "{}", "", "settings of TensorRT builds on the cluster"),
    K("models", "max_model_bytes", "4 GiB", "", "largest model accepted"),
)


def keys_by_section() -> dict[str, list[Key]]:
    out: dict[str, list[Key]] = {}
    for k in KEYS:
        out.setdefault(k.section, []).append(k)
    return out


def unknown_keys(data: dict) -> list[str]:
    """``section.key`` names in a parsed tfdesk.toml that tfdesk does not read."""
    known = {(k.section, k.name) for k in KEYS}
    sections = {k.section for k in KEYS}
    out = []
    for section, values in data.items():
        if section not in sections:
            out.append(f"[{section}]")
        elif isinstance(values, dict):
            out += [f"{section}.{name}" for name in values if (section, name) not in known]
    return out


def unknown_key_warnings(data: dict) -> list[str]:
    """One line per setting tfdesk would ignore, with the nearest key it knows: a misspelt
    ``compute_user`` must not silently leave a team without compute rights."""
    known = [f"{k.section}.{k.name}" for k in KEYS] + [f"[{k.section}]" for k in KEYS]
    out = []
    for name in unknown_keys(data):
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.7)
        hint = f" (did you mean {near[0]}?)" if near else ""
        out.append(f"tfdesk.toml: {name} is not a tfdesk setting and is ignored{hint}; "
                   "the settings are listed in site_docs/admin/configuration.md")
    return out


def markdown() -> str:
    """The table of every key, as site_docs/admin/configuration.md shows it."""
    lines = []
    for section, keys in keys_by_section().items():
        lines += [f"### [{section}]", "", "| Key | Default | Environment | What it does |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| `{k.name}` | {('`' + k.default + '`') if k.default else '—'} | "
                  f"{('`' + k.env + '`') if k.env else '—'} | {k.help} |" for k in keys]
        lines.append("")
    return "\n".join(lines)
