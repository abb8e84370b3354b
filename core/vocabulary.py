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
# process (or cluster object) existing. "waiting_gpu": the job's own work ended, but what it
# was asked for (a TensorRT engine) needs a GPU runner; its hand-off says how. It holds no
# slot and has registered nothing; it ends when the engine is built elsewhere, or is cancelled.
QUEUED, STARTING, RUNNING = "queued", "starting", "running"
SUCCEEDED, FAILED, CANCELLED, LOST = "succeeded", "failed", "cancelled", "lost"
WAITING_GPU = "waiting_gpu"
STATES = (QUEUED, STARTING, RUNNING, WAITING_GPU, SUCCEEDED, FAILED, CANCELLED, LOST)
ACTIVE = (QUEUED, STARTING, RUNNING)
# Ended here: nothing of the job runs on this machine any more.
TERMINAL = (SUCCEEDED, FAILED, CANCELLED, LOST, WAITING_GPU)

# The state machine as data: state -> states it may move to.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    QUEUED: (STARTING, CANCELLED, FAILED),
    STARTING: (RUNNING, FAILED, CANCELLED, LOST),
    RUNNING: (SUCCEEDED, FAILED, CANCELLED, LOST, WAITING_GPU),
    WAITING_GPU: (SUCCEEDED, FAILED, CANCELLED),
    SUCCEEDED: (), FAILED: (), CANCELLED: (), LOST: (),
}

# state -> (terminal icon, Slack emoji)
ICONS: dict[str, tuple[str, str]] = {
    QUEUED: ("…", ":double_vertical_bar:"),
    STARTING: ("▸", ":hourglass_flowing_sand:"),
    RUNNING: ("▶", ":arrows_counterclockwise:"),
    WAITING_GPU: ("⏸", ":hourglass:"),
    SUCCEEDED: ("✓", ":white_check_mark:"),
    FAILED: ("✗", ":x:"),
    CANCELLED: ("⊘", ":no_entry_sign:"),
    LOST: ("?", ":grey_question:"),
}
TERMINAL_ICONS = {state: icons[0] for state, icons in ICONS.items()}
SLACK_ICONS = {state: icons[1] for state, icons in ICONS.items()}
