"""convert-model, infer and evaluate: model conversion, validation, benchmarks and metrics on
labelled data, run as jobs.

The bot never loads a model: the job kinds (runners/model_jobs.py) run
converters.model.worker in the runner environment. Without the job engine the same worker
runs in a subprocess here and the command waits for it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.registry import arg, command
from bot.reply import JobRef, Reply
from core.vocabulary import MODEL_TARGETS

if TYPE_CHECKING:  # imported where used: a process that runs another command never loads them
    from runners.specs import JobSpec

# The job kinds convert-model, infer and evaluate are registered when the engine is made
# (runners.builtins.load_kinds), so nothing heavy is imported at start-up here.

TARGETS = list(MODEL_TARGETS)
PRECISIONS = ["fp32", "fp16", "int8"]
MODES = {"convert-model": "convert", "infer": "infer", "evaluate": "evaluate"}  # job kind -> worker mode


def _engine(ctx):
    """The engine: model work runs as a job, in its sandbox, like every job (there is no
    other way to run the model worker); the engine registers the model job kinds."""
    return ctx.services.engine


def _run(ctx, kind: str, spec: JobSpec, backend: str, detach: bool) -> Reply:
    from converters.model import jobspec
    engine = _engine(ctx)
    from bot.dispatch import job_limit
    job = engine.submit(kind, spec, owner=ctx.owner,
                        reply_to=ctx.reply_to, backend=backend, **job_limit(ctx))
    if detach or ctx.reply_to.get("kind") == "slack":
        env = f" in {job.spec.runtime.name}" if job.spec.runtime else ""
        return Reply(text=f"started job {job.id} ({kind} {job.spec.name}){env}; the report "
                          f"comes back here when it is done. Follow it: tfdesk logs {job.id} --follow",
                     data={"job": job.to_dict()}, job=JobRef.of(job))

    def on_event(ev):
        if ev.type == "log":
            msg = jobspec.parse_progress(ev.message)
            if msg:
                ctx.report(f"{job.id}: {msg[0]}", msg[1], msg[2])
    token = engine.subscribe(on_event, job_id=job.id)
    try:
        job = engine.wait(job.id)
    finally:
        engine.unsubscribe(token)
    workdir = Path(job.workdir)
    if backend == "kubernetes":  # the pod wrote to the shared volume, mounted here too
        workdir = Path(ctx.config.section("kubernetes").get("pvc_local_path", workdir)) / job.id
    from bot.model_reply import model_reply
    from converters.model.report import ModelReport, load_report
    report = load_report(workdir)
    if job.state == "cancelled":
        report = ModelReport.crashed(f"job {job.id} was cancelled", "cancelled")
    return model_reply(report, workdir, job, job.spec)


@command("convert-model", "convert a SavedModel / .keras / .h5 to ONNX, TensorRT or TF-TRT; "
         "validate and benchmark it",
         args=[arg("model", help="SavedModel folder, .zip/.tar.gz of one, .keras or .h5 file", path="or-name"),
               arg("--to", dest="target", choices=TARGETS, default="onnx",
                   help="target format (default onnx)"),
               arg("--precision", choices=PRECISIONS, default="fp32"),
               arg("--calibration", path=True, help="INT8 calibration samples (.npz keyed by input name)"),
               arg("--tolerance", help="validation tolerance: 1e-3 (atol) or atol=1e-3,rtol=1e-2 "
                   "(default depends on precision)"),
               arg("--batch", help="benchmark batch sizes, e.g. 1,8,32 (default)"),
               arg("--input", path=True, help="validation samples (.npz keyed by input name, or .npy)"),
               arg("--signature", default="serving_default", help="SavedModel signature"),
               arg("--opset", type=int, help="ONNX opset (default 17)"),
               arg("--shape", action="append", default=[], metavar="NAME=MIN:OPT:MAX",
                   help="TensorRT engine profile for an input, each a shape like 1x128 "
                   "(repeat per input); default: the model's own shapes"),
               arg("--env", dest="environment", help="the catalog environment to run in "
                   "(default: the one that fits the model)"),
               arg("--allow-code", action="store_true", help="load a model even though it holds "
                   "code (Lambda layers, custom objects) or file/Python ops; only for models you "
                   "trust (a compute right)"),
               arg("--detach", action="store_true", help="start the job and return at once")],
         examples=["tfdesk convert-model ./my_model", "tfdesk convert-model model.keras --to "
                   "tensorrt --precision fp16", "tfdesk convert-model model.zip --precision int8 "
                   "--calibration samples.npz"], slow=True, permission="compute")
def convert_model(ctx, model, target, precision, calibration, tolerance, batch, input,  # noqa: A002
                  signature, opset, shape, environment, detach, allow_code=False):
    from runners.specs import ConvertSpec
    spec = ConvertSpec(model=str(Path(model).expanduser().resolve()), target=target,
                       precision=precision, calibration=calibration, tolerance=tolerance,
                       batch=batch, input=input, signature=signature, opset=opset,
                       shape=tuple(shape or ()), environment=environment, allow_code=allow_code,
                       settings=ctx.config.section("models"))
    return _run(ctx, "convert-model", spec, "local", detach)


@command("infer", "benchmark a model (and predict on --input) as a job",
         args=[arg("model", help="SavedModel folder or archive, .keras, .h5 or .onnx", path="or-name"),
               arg("--batch", help="batch sizes, e.g. 1,8,32 (default)"),
               arg("--backend", choices=["local", "kubernetes"], default="local"),
               arg("--input", path=True, help="inputs to predict on (.npz keyed by input name, or .npy); "
                   "predictions are written to predictions.npz"),
               arg("--signature", default="serving_default", help="SavedModel signature"),
               arg("--gpus", type=int, default=None,
                   help="GPUs for the Kubernetes Job (default: [kubernetes] infer_gpus, 1)"),
               arg("--env", dest="environment", help="the catalog environment to run in "
                   "(default: the one that fits the model)"),
               arg("--allow-code", action="store_true", help="load a model even though it holds "
                   "code (Lambda layers, custom objects) or file/Python ops; only for models you "
                   "trust (a compute right)"),
               arg("--detach", action="store_true", help="start the job and return at once"),
               arg("--dry-run", action="store_true",
                   help="show what would run (Kubernetes: the manifests)")],
         examples=["tfdesk infer ./my_model --batch 1,32", "tfdesk infer model.onnx --input x.npz",
                   "tfdesk infer /mnt/models/resnet --backend kubernetes --dry-run"],
         slow=True, permission="compute")
def infer(ctx, model, batch, backend, input, signature, gpus, environment, detach,  # noqa: A002
          dry_run, allow_code=False):
    from runners.specs import InferSpec
    spec = InferSpec(model=str(Path(model).expanduser().resolve()), batch=batch, input=input,
                     signature=signature, gpus=gpus, environment=environment,
                     allow_code=allow_code, settings=ctx.config.section("models"))
    if dry_run:
        engine = _engine(ctx)
        plan = engine.dry_run("infer", spec, backend)
        from runners.stored import dump
        return Reply(text=plan["text"], data={**plan, "spec": dump(plan["spec"])})
    return _run(ctx, "infer", spec, backend, detach)


@command("evaluate", "score a model on labelled data (NPZ, CSV, TFRecord), side by side with "
         "its converted version",
         args=[arg("model", help="SavedModel folder or archive, .keras, .h5 or .onnx", path="or-name"),
               arg("--data", path=True, required=True,
                   help="labelled data: .npz (arrays keyed by input name plus 'label'), .csv "
                   "(header row, a 'label' column) or .tfrecord (tf.train.Example)"),
               arg("--metrics", help="comma-separated: accuracy, top5 (any topK), mae, mse, "
                   "rmse, agreement (default: accuracy[,top5] for classes, mae,mse otherwise)"),
               arg("--against", path="or-name", help="a converted model (e.g. the .onnx convert-model made) to "
                   "score on the same rows; adds agreement with the original"),
               arg("--label", help="the label's key or column (default: label, labels, y or "
                   "target)"),
               arg("--output", help="the model output to score, for models with several"),
               arg("--tolerance", help="agreement tolerance for numeric outputs: 1e-3 (atol) or "
                   "atol=1e-3,rtol=1e-2 (default atol=1e-4,rtol=1e-3)"),
               arg("--signature", default="serving_default", help="SavedModel signature"),
               arg("--env", dest="environment", help="the catalog environment to run in "
                   "(default: the one that fits the model)"),
               arg("--allow-code", action="store_true", help="load a model even though it holds "
                   "code (Lambda layers, custom objects) or file/Python ops; only for models you "
                   "trust (a compute right)"),
               arg("--detach", action="store_true", help="start the job and return at once")],
         examples=["tfdesk evaluate ./my_model --data test.npz",
                   "tfdesk evaluate ./my_model --data test.csv --against "
                   "~/.tfdesk/jobs/j-1a2b3c4d/out/model.optimized.onnx",
                   "tfdesk evaluate model.keras --data test.tfrecord --metrics accuracy,top5"],
         slow=True, permission="compute")
def evaluate(ctx, model, data, metrics, against, label, output, tolerance, signature,  # noqa: PLR0913
             environment, detach, allow_code=False):
    from converters.model import metrics as metric_rules
    metric_rules.parse(metrics)  # unknown names answer at once, before any job
    from runners.specs import EvaluateSpec
    spec = EvaluateSpec(model=str(Path(model).expanduser().resolve()), data=data,
                        metrics=metrics,
                        against=str(Path(against).expanduser().resolve()) if against else None,
                        label=label, output=output, tolerance=tolerance, signature=signature,
                        environment=environment, allow_code=allow_code,
                        settings=ctx.config.section("models"))
    return _run(ctx, "evaluate", spec, "local", detach)
