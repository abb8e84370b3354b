"""tfdesk's words, defined once: conversion targets, job states and how they are shown.

Every face and package takes them from here (choices of the commands, the job state machine,
terminal and Slack icons), so a new target or state is added in one place.
"""
from __future__ import annotations

# What a single-process training script can be converted to.
HOROVOD, TF_DISTRIBUTE = "horovod", "tf-distribute"
SCRIPT_TARGETS = (HOROVOD, TF_DISTRIBUTE)
# `train --convert`: auto (Horovod when workers > 1), a target, or none.
CONVERT_CHOICES = ("auto", *SCRIPT_TARGETS, "none")
# What a model can be converted to.
MODEL_TARGETS = ("onnx", "tensorrt", "tf-trt")
# Where jobs run.
BACKENDS = ("local", "kubernetes")

# Job states. "starting" is the short window between an engine claiming a queued job and its
# process (or cluster object) existing.
QUEUED, STARTING, RUNNING = "queued", "starting", "running"
SUCCEEDED, FAILED, CANCELLED, LOST = "succeeded", "failed", "cancelled", "lost"
STATES = (QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED, LOST)
ACTIVE = (QUEUED, STARTING, RUNNING)
TERMINAL = (SUCCEEDED, FAILED, CANCELLED, LOST)

# The state machine as data: state -> states it may move to.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    QUEUED: (STARTING, CANCELLED, FAILED),
    STARTING: (RUNNING, FAILED, CANCELLED, LOST),
    RUNNING: (SUCCEEDED, FAILED, CANCELLED, LOST),
    SUCCEEDED: (), FAILED: (), CANCELLED: (), LOST: (),
}

# state -> (terminal icon, Slack emoji)
ICONS: dict[str, tuple[str, str]] = {
    QUEUED: ("…", ":double_vertical_bar:"),
    STARTING: ("▸", ":hourglass_flowing_sand:"),
    RUNNING: ("▶", ":arrows_counterclockwise:"),
    SUCCEEDED: ("✓", ":white_check_mark:"),
    FAILED: ("✗", ":x:"),
    CANCELLED: ("⊘", ":no_entry_sign:"),
    LOST: ("?", ":grey_question:"),
}
TERMINAL_ICONS = {state: icons[0] for state, icons in ICONS.items()}
SLACK_ICONS = {state: icons[1] for state, icons in ICONS.items()}
