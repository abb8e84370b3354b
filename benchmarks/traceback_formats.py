"""One traceback as each program a user pastes from prints it, for tests and benchmarks.

Users paste what their terminal or notebook printed. The same failure reads differently in:

- Python's own traceback (a script in a terminal): ``File "path", line N, in func`` then the
  code line, indented;
- IPython 8+ (Jupyter, current Colab): ``Cell In[4], line 3`` for a cell and
  ``File /path/x.py:81, in func(args)`` for a file, each followed by numbered lines around
  the one that ran, which is marked ``---->``; IPython 8.0-8.4 says ``Input In [4], in
  <cell line: 3>()`` for a cell; IPython 7 (older Colab) ``<ipython-input-4-…> in <module>()``
  and ``/path/x.py in func(args)``;
- any of them in colour (ANSI codes), as a notebook saved to text keeps them.

Around the error itself, Keras 2.9+ and 3 wrap a layer's error ("Exception encountered when
calling …", the error, the call's arguments; Keras 3 prints the error bold), tf.function
reports an error raised while tracing "in user code" (the frames and the error indented), and
TensorFlow 2.9+ wraps a failed graph op ("Graph execution error:", where the node was defined,
the op's message). Written from those formats (Python's traceback module, IPython's ultratb, the
wrappers' messages as the wheels print them), not copied from anyone's output.
"""
from __future__ import annotations

from dataclasses import dataclass

RULE = "-" * 75
RED, BOLD, RESET = "\x1b[0;31m", "\x1b[1m", "\x1b[0m"


@dataclass(frozen=True)
class Frame:
    path: str          # a file; "" for a notebook cell
    line: int
    func: str          # "<module>" at a script's or a cell's top level
    code: str          # the line that ran
    before: tuple[str, ...] = ()  # the lines above it, as IPython shows them

    @property
    def cell(self) -> bool:
        return not self.path


def python(frames: list[Frame], error: str) -> str:
    out = ["Traceback (most recent call last):"]
    for f in frames:
        path = f.path or f"/tmp/ipykernel_42/{f.line}83920.py"  # ipykernel's file for a cell
        out += [f'  File "{path}", line {f.line}, in {f.func}', f"    {f.code}"]
    return "\n".join(out + [error])


def _numbered(f: Frame) -> list[str]:
    first = f.line - len(f.before)
    lines = [f"{first + i:>6} {code}" for i, code in enumerate(f.before)]
    arrow = "-" * max(2, 6 - len(str(f.line))) + ">"
    return lines + [f"{arrow} {f.line} {f.code}"]


def _ipython(frames: list[Frame], error: str, header) -> str:
    error_type = error.split(":", 1)[0].rsplit(".", 1)[-1]
    out = [RULE, f"{error_type:<42}Traceback (most recent call last)"]
    for f in frames:
        out += [header(f)] + _numbered(f) + [""]
    return "\n".join(out + [error])


def ipython8(frames: list[Frame], error: str) -> str:
    return _ipython(frames, error, lambda f: (
        f"Cell In[4], line {f.line}" if f.cell
        else f"File {f.path}:{f.line}, in {f.func}(*args)"))


def ipython8_input(frames: list[Frame], error: str) -> str:
    return _ipython(frames, error, lambda f: (
        "Input In [4], in <cell line: %d>()" % f.line if f.cell
        else f"File {f.path}:{f.line}, in {f.func}(*args)"))


def ipython7(frames: list[Frame], error: str) -> str:
    return _ipython(frames, error, lambda f: (
        "<ipython-input-4-6f1d2c3b9a8e> in <module>()" if f.cell
        else f"{f.path} in {f.func}(self, *args)"))


FORMATS = {"python": python, "ipython8": ipython8, "ipython8_input": ipython8_input,
           "ipython7": ipython7}


def coloured(text: str) -> str:
    """As a notebook saved to text keeps it: the rule, arrows and error type in colour."""
    out = []
    for ln in text.split("\n"):
        if ln.startswith(RULE) or ln.lstrip().startswith("-") and ">" in ln[:8]:
            ln = f"{RED}{ln}{RESET}"
        elif ln and ":" in ln and not ln.startswith((" ", "File", "Cell", "Input", "<")):
            head, _, rest = ln.partition(":")
            ln = f"{RED}{head}{RESET}:{rest}"
        out.append(ln)
    return "\n".join(out)


# -- wrappers around the error ------------------------------------------------------------

def keras3(error_type: str, message: str, user: Frame, layer: str = "Sequential") -> str:
    return (f"{error_type}: Exception encountered when calling {layer}.call().\n\n"
            f"{BOLD}{message}{RESET}\n\n"
            f"Arguments received by {layer}.call():\n"
            "  \u2022 inputs=tf.Tensor(shape=(32, 28, 28), dtype=float32)\n"
            "  \u2022 training=True\n  \u2022 mask=None")


def keras2(error_type: str, message: str, user: Frame, layer: str = "dense",
           cls: str = "Dense", quote: str = "'") -> str:
    name = f"{quote}{layer}{quote}"
    return (f"{error_type}: Exception encountered when calling layer {name} (type {cls}).\n\n"
            f"{message}\n\n"
            f"Call arguments received by layer {name} (type {cls}):\n"
            "  \u2022 inputs=tf.Tensor(shape=(None, 28, 28), dtype=float32)")


def graph(error_type: str, message: str, user: Frame, node: str = "loss/Sub") -> str:
    """TensorFlow 2.12+'s form (2.9-2.11 quoted the node and added "Node: '...'")."""
    return (f"{error_type}: Graph execution error:\n\n"
            f"Detected at node {node} defined at (most recent call last):\n"
            f'  File "{user.path or "/tmp/ipykernel_42/1.py"}", line {user.line}, in {user.func}\n'
            f"\n{message}\n"
            f"\t [[{{{{node {node}}}}}]] [Op:__inference_train_function_1234]")


def graph_old(error_type: str, message: str, user: Frame, node: str = "loss/Sub") -> str:
    return (f"{error_type}: Graph execution error:\n\n"
            f"Detected at node '{node}' defined at (most recent call last):\n"
            f'    File "{user.path or "/tmp/ipykernel_42/1.py"}", line {user.line}, '
            f"in {user.func}\n      {user.code}\n"
            f"Node: '{node}'\n{message}\n"
            f"\t [[{{{{node {node}}}}}]] [Op:__inference_train_function_1234]")


def keras2_double(error_type: str, message: str, user: Frame) -> str:
    """Keras 2.9-2.11 quoted the layer's name with double quotes."""
    return keras2(error_type, message, user, quote='"')


def in_user_code(error_type: str, message: str, user: Frame) -> str:
    """tf.function (autograph) reporting an error raised while tracing the user's code: the
    frames and the error it caught indented, the caught error as Keras 2.9+ wrapped it."""
    caught = keras2(error_type, message, user, layer="sequential", cls="Sequential")
    frame = (f'    File "{user.path or "/tmp/ipykernel_42/1.py"}", line {user.line}, in '
             f"train_step  *\n        {user.code}\n")
    return (f"{error_type}: in user code:\n\n{frame}\n"
            + "\n".join("    " + ln if ln else ln for ln in caught.split("\n")))


# Each: (error type, the error's message, the user's frame) -> the error as printed.
WRAPPERS = {"keras3": keras3, "keras2": keras2, "keras2_double": keras2_double,
            "graph": graph, "graph_old": graph_old, "in_user_code": in_user_code}
