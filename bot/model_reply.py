"""How a model job's result reads (convert-model, infer, evaluate): the same rendering for the
command that waited for it and for the Slack thread that hears of it later."""
from __future__ import annotations

from pathlib import Path

from bot.reply import JobRef, Reply
from converters.model.report import ModelReport


def model_reply(report: ModelReport, workdir: Path, job, spec) -> Reply:
    """A model job's report.json as text, chart, files and status (``spec``: the job's
    runners.stored.StoredModelJob, or None)."""
    from converters.model.report import ensure_chart, inputs_used, summary
    data = {"job": job.to_dict() if job else None, "workdir": str(workdir), **report.to_dict()}
    where = f" (job {job.id})" if job else ""
    ref = JobRef.of(job) if job is not None else None
    if report.status == "failed":
        msg = report.error_text or "the conversion failed"
        return Reply.error(f"{getattr(spec, 'name', '') or 'model'}: {msg}{where}", data, job=ref)
    files = []
    ensure_chart(workdir)  # drawn when the engine collected the job; a report sent back later
    for name in ("chart.png", "report.json", "trt-build.yaml", "predictions.npz"):
        if (workdir / name).is_file():
            files.append(workdir / name)
    text = summary(report.to_dict()) + f"\nreport: {workdir / 'report.json'}{where}"
    if job is not None and job.spec.runtime_why:
        text += f"\nenvironment: {job.spec.runtime_why}"
    if report.artifacts:
        text += "\nartifacts: " + ", ".join(report.artifacts)
    ok = report.status != "validation_failed"
    if not ok:
        val = report.validation or {"outputs": {}}
        if val.get("int8"):   # INT8 is judged by agreement on held-out samples
            q = val["int8"]
            bad = [f"  {name}: INT8 agrees with TensorFlow on {row['int8']['agreement']:.1%} of "
                   f"{inputs_used(q['samples'], q.get('inputs'))} (needs "
                   f"{q['min_agreement']:.0%})"
                   for name, row in q["outputs"].items() if not row["passed"]]
        else:
            bad = [f"  {name}: max abs error {o.get('max_abs_error', float('nan')):.3g}, "
                   f"{o.get('mismatched', '?')} of {o.get('total', '?')} values outside "
                   "tolerance" for name, o in val["outputs"].items() if not o["passed"]]
        text = "Validation FAILED: the converted model does not match the original.\n" + \
            "\n".join(bad) + "\n" + text
    return Reply(text=text, data=data, files=files, ok=ok, status=0 if ok else 1, job=ref)
