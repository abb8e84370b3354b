"""What became of a finished training's model, in words: the terminal's and Slack's `job ID`
and the web view's run page say the same."""
from __future__ import annotations

from pathlib import Path


def model_note(job, artifacts) -> str:
    """A finished training's model (the one rule: catalog/model_files.py) and where it went:
    the catalog name it was registered under, or the command that registers it; else why
    tfdesk found none."""
    from catalog.model_files import pick_model
    model = pick_model([{**a, "path": str(Path(job.workdir) / a["path"])} for a in artifacts])
    if model is None:
        return _no_model(job)
    labels = job.spec.labels
    if labels.register or labels.pipeline_run:
        where = f"registered as {labels.register}" if labels.register else \
            "registered by its pipeline run"
        return f"model: {model['path']} ({where}; see 'tfdesk models list')"
    return (f"model: {model['path']} (the job's artifact, not in the catalog: "
            f"`tfdesk models add NAME {model['path']}` registers it; next time, "
            "`train --register NAME`)")


def _no_model(job) -> str:
    """Say so when a finished training saved no model tfdesk can find."""
    from runners.saves import save_targets
    try:
        from runners.jobfiles import read_job_text  # never through the job's links
        source = read_job_text(job.workdir, getattr(job.spec, "script", "script.py"))
    except OSError:
        source = ""
    computed = [t["line"] for t in save_targets(source) if t["path"] is None]
    if computed:
        return ("no saved model found in the job's folder; the script saves to a path computed "
                f"when it runs (line {', '.join(map(str, computed[:3]))}): look there")
    return ("no saved model found: the script saved no loadable model (a SavedModel folder, "
            ".keras or full-model .h5; checkpoints and weights-only files are not models) in "
            "its folder or at a path it names")
