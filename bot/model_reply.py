"""How a model job's result reads (convert-model, infer, evaluate): the same rendering for the
command that waited for it and for the Slack thread that hears of it later."""
from __future__ import annotations

from pathlib import Path

from bot.reply import Reply


def model_reply(report: dict, workdir: Path, job, spec: dict) -> Reply:
    """A model job's report.json as text, chart, files and status."""
    from converters.model.report import chart, summary
    data = {"job": job.to_dict() if job else None, "workdir": str(workdir), **report}
    where = f" (job {job.id})" if job else ""
    if report.get("status") == "failed":
        err = report.get("error", {})
        msg = err.get("error", "the conversion failed")
        return Reply.error(f"{spec.get('name', 'model')}: {msg}{where}", data)
    files = []
    png = workdir / "chart.png"
    if not png.is_file() and report.get("benchmark"):
        chart(report, png)  # the runner lacked matplotlib and could not hand it over
    for name in ("chart.png", "report.json", "trt-build.yaml", "predictions.npz"):
        if (workdir / name).is_file():
            files.append(workdir / name)
    text = summary(report) + f"\nreport: {workdir / 'report.json'}{where}"
    if job is not None and job.spec.get("runtime_why"):
        text += f"\nenvironment: {job.spec['runtime_why']}"
    if report.get("artifacts"):
        text += "\nartifacts: " + ", ".join(report["artifacts"])
    ok = report.get("status") != "validation_failed"
    if not ok:
        val = report["validation"]
        if val.get("int8"):   # INT8 is judged by agreement on held-out samples
            q = val["int8"]
            bad = [f"  {name}: INT8 agrees with TensorFlow on {row['int8']['agreement']:.1%} of "
                   f"{q['samples']} held-out samples (needs {q['min_agreement']:.0%})"
                   for name, row in q["outputs"].items() if not row["passed"]]
        else:
            bad = [f"  {name}: max abs error {o.get('max_abs_error', float('nan')):.3g}, "
                   f"{o.get('mismatched', '?')} of {o.get('total', '?')} values outside "
                   "tolerance" for name, o in val["outputs"].items() if not o["passed"]]
        text = "Validation FAILED: the converted model does not match the original.\n" + \
            "\n".join(bad) + "\n" + text
    return Reply(text=text, data=data, files=files, ok=ok, status=0 if ok else 1)
