"""Reading metrics out of a training log, as rules applied line by line.

Keras prints ``Epoch 3/10`` and then a summary line such as
``4/4 - 0s - loss: 0.6931 - accuracy: 0.5000 - 251ms/epoch`` (verbose=2) or
``4/4 [=====] - 0s 3ms/step - loss: 0.69`` (verbose=1 without a terminal). Any script may also
print ``TFDESK_METRIC {"epoch": 3, "loss": 0.5}`` for metrics Keras does not print. Multi-process
logs carry a rank prefix (``[1]<stdout>:`` from horovodrun, ``[1] `` from tfdesk's supervisor);
only rank 0 is read, so a metric is counted once. A Keras ``CSVLogger`` file, when the script
writes one, is read at the end and fills any epoch the log missed.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

RANK_PREFIX = re.compile(r"^\[(\d+)(?:,(\d+))?\](?:<std(?:out|err)>)?:?\s?")
EPOCH = re.compile(r"^\s*Epoch (\d+)/(\d+)\s*$")
STEP_COUNTER = re.compile(r"^\s*\d+/\d+\b")
PAIR = re.compile(r"\b([A-Za-z_][\w.]*): (-?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf))(?=\s|$)")
EXPLICIT = re.compile(r"TFDESK_METRIC (\{.*\})\s*$")


@dataclass
class MetricReader:
    """Feeds lines; returns (epoch, {name: value}) when a line completes an epoch's metrics."""
    epoch: int | None = None
    total_epochs: int | None = None

    def feed(self, line: str) -> tuple[int, dict[str, float]] | None:
        m = RANK_PREFIX.match(line)
        if m:
            rank = int(m.group(2) if m.group(2) is not None else m.group(1))
            if rank != 0:
                return None
            line = line[m.end():]
        line = line.rstrip("\r\n")
        if "\r" in line or "\b" in line:  # a progress bar redrawn in place: keep the last state
            line = re.split(r"[\r\b]+", line)[-1]
        if (m := EXPLICIT.search(line)):
            try:
                data = json.loads(m.group(1))
            except json.JSONDecodeError:
                return None
            step = data.pop("epoch", data.pop("step", self.epoch))
            values = {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}
            return (int(step), values) if step is not None and values else None
        if (m := EPOCH.match(line)):
            self.epoch, self.total_epochs = int(m.group(1)), int(m.group(2))
            return None
        if self.epoch is not None and STEP_COUNTER.match(line) and "loss" in line:
            values = {k: float(v) for k, v in PAIR.findall(line)}
            return (self.epoch, values) if values else None
        return None


def read_csv_log(path: Path) -> list[tuple[int, dict[str, float]]]:
    """Rows of a Keras CSVLogger file (its epochs count from 0; ours from 1)."""
    out = []
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                try:
                    epoch = int(row.pop("epoch")) + 1
                    values = {k: float(v) for k, v in row.items() if k and v not in (None, "")}
                except (KeyError, ValueError):
                    continue
                out.append((epoch, values))
    except OSError:
        return []
    return out
