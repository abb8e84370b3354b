"""Errors a user can act on. ``user_facing`` makes the bot answer with the message itself."""
from __future__ import annotations

from typing import Any


class ModelError(Exception):
    user_facing = True
    code = "model_error"

    def __init__(self, message: str, **detail: Any):
        super().__init__(message)
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "error": self.message, **self.detail}


class UnsafeArchive(ModelError):
    code = "unsafe_archive"


class NotAModel(ModelError):
    code = "not_a_model"


class UnsafeModel(ModelError):
    """The model would run code or touch files when loaded or served (model_safety.py)."""
    code = "unsafe_model"


class MissingVariables(ModelError):
    code = "missing_variables"


class ProducerTooNew(ModelError):
    code = "producer_too_new"


class UnsupportedOps(ModelError):
    code = "unsupported_ops"


class BadInput(ModelError):
    code = "bad_input"


class BadOption(ModelError):
    code = "bad_option"


class ConversionFailed(ModelError):
    code = "conversion_failed"


class RunnerMissing(ModelError):
    code = "runner_missing"


class NeedsGPU(ModelError):
    """TensorRT (or TF-TRT) cannot run here; carries the Kubernetes manifests that can."""
    code = "needs_gpu"

    def __init__(self, message: str, manifests: list[dict] | None = None, **detail: Any):
        super().__init__(message, **detail)
        self.manifests = manifests or []

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "manifests": self.manifests}


BY_CODE = {cls.code: cls for cls in (ModelError, UnsafeArchive, NotAModel, MissingVariables,
                                     ProducerTooNew, UnsupportedOps, BadInput, BadOption,
                                     ConversionFailed, RunnerMissing, NeedsGPU)}


def from_dict(d: dict[str, Any]) -> ModelError:
    """Rebuild an error the runner reported (it crosses a process boundary as JSON)."""
    d = dict(d)
    cls = BY_CODE.get(d.pop("code", ""), ModelError)
    message = d.pop("error", "model conversion failed")
    if cls is NeedsGPU:
        return NeedsGPU(message, d.pop("manifests", []), **d)
    return cls(message, **d)
