"""convert: rewrite a single-process training script for Horovod or tf.distribute."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bot.registry import arg, command
from bot.reply import Reply
# The converter (LibCST) is imported when a conversion runs, not when tfdesk starts.
from core.vocabulary import SCRIPT_TARGETS as TARGETS


def _write(out: Path, code: str) -> None:
    # Write next to the destination and rename, so a failure never leaves half a file.
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(code)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@command("convert", "convert a training script to Horovod or tf.distribute (MultiWorkerMirroredStrategy)",
         args=[arg("script", help="the training script (.py)", path=True),
               arg("--to", dest="target", choices=list(TARGETS), default="horovod",
                   help="distribution target (default: horovod)"),
               arg("-o", "--output", default=None, help="write the converted script here (from Slack: a file name in your own outputs)",
                   path="out"),
               arg("--diff", action="store_true", help="show the unified diff"),
               arg("--warmup-epochs", dest="warmup_epochs", type=int, default=None,
                   help="Horovod + fit(): ramp the learning rate up over N epochs"),
               arg("--force", action="store_true",
                   help="write the conversion even when it has errors (parts left undone)")],
         description="Rewrite a single-process TensorFlow/Keras training script so it runs on "
                     "many workers, explain every change, and list what is left for a human. "
                     "A script that cannot be made to train as it does in one process is refused "
                     "with the reason; a conversion with errors is not written unless --force. "
                     "Nothing in the script is executed.",
         examples=["tfdesk convert train.py --diff",
                   "tfdesk convert train.py --to tf-distribute -o train_dist.py",
                   "tfdesk convert train.py --warmup-epochs 5 -o train_hvd.py"], permission="own")
def convert_(ctx, script, target="horovod", output=None, diff=False, warmup_epochs=None,
             force=False):
    path = Path(script).expanduser()
    if not path.is_file():
        return Reply.error(f"no such file: {script}", {"script": script})
    size = path.stat().st_size
    from converters.script import ConversionError
    from converters.script.child import convert  # its parser holds the GIL: not in this process
    from converters.script.source import MAX_BYTES
    if size > MAX_BYTES:
        return Reply.error(f"{path.name} is {size:,} bytes; scripts over {MAX_BYTES:,} bytes "
                           f"(1 MB) are not converted", {"script": script})
    ctx.report(f"converting {path.name}")
    try:
        result = convert(path.read_bytes(), target, filename=path.name, warmup_epochs=warmup_epochs,
                         force=force)
    except ConversionError as exc:
        from converters.script.findings import format_report
        text = str(exc)
        others = [f for f in exc.findings if f.severity != "error"]
        if others:  # what the conversion did and would leave to check, for the whole picture
            text += "\n\nOther findings:\n" + format_report(others, path.name)
        return Reply.error(text, {"script": script, "target": target, "line": exc.line,
                                  "rule_id": exc.rule_id,
                                  "findings": [f.to_dict() for f in exc.findings]})
    data = result.to_dict()
    files = []
    if output:
        out = Path(output).expanduser()
        if out.resolve() == path.resolve():
            return Reply.error(f"-o {output} is the input script; choose another path so the "
                               "original is kept", {"script": script})
        _write(out, result.code)
        files.append(out)
        data["output"] = str(out)
    counts = result.counts()
    a = result.analysis
    styles = ", ".join(a.styles) or "no training"
    head = (f"{path.name} -> {result.target}: {styles}"
            + (f", Keras: {a.keras}" if a.keras else "")
            + (f"; {counts['info']} changes, {counts['warning']} to check, "
               f"{counts['error']} not converted" if result.changed else "; unchanged"))
    parts = [head]
    if result.findings:
        parts.append(result.report)
    if result.changed and (diff or not output):
        parts.append(result.diff.rstrip("\n"))
    if output:
        parts.append(f"wrote {out}")
    elif result.changed:
        parts.append("(use -o FILE to write the converted script)")
    return Reply(text="\n\n".join(parts), data=data, files=files)
