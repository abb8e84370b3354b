"""Runs INSIDE a TensorFlow runtime (its own interpreter, stdlib + tensorflow only): runs short
user scripts and reports the error each raised, as Python prints it. Reads a JSON request on
stdin, writes one JSON object on stdout.

Request: ``{"scripts": [{"id": "...", "code": "x = tf.Session()"}, ...]}``; each script runs
after ``import tensorflow as tf``, from a file named ``train.py`` so that its traceback shows
the user's line as a real one does.
Answer: ``{"tf_version", "keras_version", "results": {id: result}}``, ``result`` either
``{"raised": false}`` or ``{"raised": true, "type", "message", "traceback"}``: ``message`` is
what ``traceback.format_exception_only`` prints (the last lines of a traceback), ``traceback``
the whole of it, with Keras' and TensorFlow's own filtering applied as the user sees it.
"""
import json
import os
import signal
import sys
import tempfile
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SECONDS = 60  # one script; a constructor that hangs must not stall the rest


def _alarm(signum, frame):
    raise TimeoutError(f"the script ran past {SECONDS} s")


def run(code: str, folder: str) -> dict:
    path = os.path.join(folder, "train.py")
    source = "import tensorflow as tf\n" + code + "\n"
    with open(path, "w") as f:
        f.write(source)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS)
    try:
        exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
    except Exception as exc:  # noqa: BLE001  (every error is the answer)
        return {"raised": True, "type": type(exc).__name__,
                "message": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
                "traceback": traceback.format_exc()}
    finally:
        signal.alarm(0)
    return {"raised": False}


def main() -> None:
    request = json.loads(sys.stdin.read())
    import tensorflow as tf
    try:
        import keras
        keras_version = keras.__version__
    except Exception:  # noqa: BLE001
        keras_version = None
    results = {}
    with tempfile.TemporaryDirectory(prefix="tfdesk-raise-") as folder:
        for script in request["scripts"]:
            results[script["id"]] = run(script["code"], folder)
    sys.stdout.write("\n" + json.dumps({"tf_version": tf.__version__,
                                        "keras_version": keras_version,
                                        "results": results}) + "\n")


if __name__ == "__main__":
    main()
