"""The runtimes tfdesk builds, as catalog environments, and the engine's view of the catalog's
environments. Paths are read here, at the edge (``[runner]`` in tfdesk.toml, then the
environment variables), never by library code."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]


def builtin_runtimes(config) -> list[dict[str, Any]]:
    """The Keras 2 runner (TF 2.15 + Horovod; the default) and the Keras 3 runner (TF 2.21),
    both built by ``make runner-env``."""
    from catalog import environments as envs
    runner = config.section("runner")
    keras2 = (runner.get("python") or os.environ.get("TFDESK_RUNNER_PYTHON")
              or REPO / ".venv-runner" / "bin" / "python")
    keras3 = (runner.get("keras3_python") or os.environ.get("TFDESK_RUNNER_KERAS3_PYTHON")
              or REPO / ".venv-runner-tf221" / "bin" / "python")
    return [{"name": envs.DEFAULT_NAME, "python": str(keras2), "versions": envs.RUNNER_VERSIONS,
             "description": envs.RUNNER_DESCRIPTION},
            {"name": envs.KERAS3_NAME, "python": str(keras3), "versions": envs.KERAS3_VERSIONS,
             "description": envs.KERAS3_DESCRIPTION}]


def environments_provider(config) -> Callable[[], list[dict[str, Any]]]:
    """What the engine calls at each submission: the catalog's environments, the built-in
    runtimes registered first (so a fresh install has both)."""
    def environments() -> list[dict[str, Any]]:
        from catalog import environments as envs
        from catalog.store import open_db
        conn = open_db(config.state_path)
        try:
            envs.ensure_builtin(conn, builtin_runtimes(config))
            return envs.records(conn)
        finally:
            conn.close()
    return environments
