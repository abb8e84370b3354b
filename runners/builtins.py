"""What this tfdesk has built in: its job kinds and its backends, loaded when the engine is
made. Kinds register themselves (runners.kinds.register_kind) when their module is imported;
nothing in runners/ imports this module but the engine, so kinds and backends never import
each other in a circle."""
from __future__ import annotations

from pathlib import Path


def load_kinds() -> None:
    """Register the built-in job kinds (idempotent)."""
    from runners import training  # noqa: F401  (registers "train")
    try:  # convert-model, infer, evaluate: when the model converters are installed
        from runners import model_jobs  # noqa: F401
    except ImportError:
        pass


def backend_class(name: str):
    """The backend class for ``name`` (imported when first needed)."""
    if name == "local":
        from runners.local import LocalBackend
        return LocalBackend
    if name == "kubernetes":
        from runners.kubernetes.backend import KubernetesBackend
        return KubernetesBackend
    raise KeyError(name)


def default_runner_python(repo_root: Path | None = None) -> Path:
    """The runner environment ``make runner-env`` builds in the checkout."""
    root = repo_root or Path(__file__).resolve().parents[1]
    return root / ".venv-runner" / "bin" / "python"
