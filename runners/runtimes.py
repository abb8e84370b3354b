"""Runtimes: which environment a job runs in.

An environment is a catalog entry (catalog/environments.py) handed to the engine as a plain
dict: a local interpreter (``kind = "local"``, ``python``) or a container image (``kind =
"image"``, ``image``), with the TensorFlow, Keras and Horovod versions it holds. A job kind says
what its work needs (:class:`Needs`, worked out statically from the script or the model file);
:func:`choose` picks the environment named, else the default when it fits, else the best one
that fits, and always says why. A job that no environment can take is refused before it
starts, with the reason for each environment.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from runners.models import JobError

KERAS3_TF = "2.16"  # TensorFlow's first release with Keras 3 as tf.keras
KERAS3_LATEST = "2.21"  # the Keras 3 runtime tfdesk builds (scripts/build_runner_env_keras3.sh)
# Upstream limitation, checked on TF 2.21 / Keras 3.12 with two TF_CONFIG workers.
FIT_UNDER_MWMS = ("Keras 3 model.fit() under MultiWorkerMirroredStrategy fails with "
                  "\"Attempt to convert a value (PerReplica...)\" (an open upstream limitation: "
                  "keras-team/keras#20585, tensorflow/tensorflow#72388)")


class NoRuntime(JobError):
    """No environment can run the job (the reason names each one)."""


@dataclass
class Need:
    tf: str          # a TensorFlow requirement, e.g. ">=2.16"; "" for none
    why: str         # the evidence, in words: "uses Keras 3 (keras.ops, line 4)"
    horovod: bool = False
    tensorrt: bool = False
    keras3_fit: bool = False  # marks the Keras 3 fit() limitation, for a precise refusal
    soft: bool = False  # a preference: an environment that misses it may still run the job


@dataclass
class Needs:
    items: list[Need] = field(default_factory=list)
    fit_line: int | None = None  # where a script trains with Keras fit(), for the refusals
    gpu_env: dict[str, Any] | None = None  # for TensorRT work when this machine has no GPU

    def add(self, tf: str, why: str, **kw) -> None:
        self.items.append(Need(tf, why, **kw))

    @property
    def horovod(self) -> bool:
        return any(n.horovod for n in self.items)

    @property
    def tensorrt(self) -> bool:
        return any(n.tensorrt for n in self.items)

    @property
    def keras3(self) -> str | None:
        """The newest TensorFlow minor, when the job needs Keras 3 (for images by version)."""
        spec = self.spec()
        if any(n.tf for n in self.items) and not spec.contains(Version("2.15.1")) and \
                spec.contains(Version(KERAS3_LATEST + ".0")):
            return KERAS3_LATEST
        return None

    def spec(self) -> SpecifierSet:
        return SpecifierSet(",".join(n.tf for n in self.items if n.tf and not n.soft))

    def hard(self) -> "Needs":
        return Needs([n for n in self.items if not n.soft], self.fit_line, self.gpu_env)

    def soft(self) -> "Needs":
        return Needs([n for n in self.items if n.soft])

    def describe(self) -> str:
        return "; ".join(n.why for n in self.items)

    def to_dict(self) -> list[dict[str, Any]]:
        return [{"tf": n.tf, "why": n.why} for n in self.items]


def _version(v: str) -> Version | None:
    try:
        return Version(v) if v else None
    except InvalidVersion:
        return None


def misfit(env: dict[str, Any], needs: Needs, brief: bool = False) -> str | None:
    """Why ``env`` cannot run a job with these needs, or None when it can (``brief``: without
    repeating the job's evidence)."""
    if env.get("kind") == "local" and env.get("python") and not Path(env["python"]).exists():
        return (f"its interpreter {env['python']} is missing (build it with 'make runner-env', "
                f"or point the environment at another)")
    tf = _version(env.get("tf_version") or "")
    for need in needs.items:
        if need.tf:
            if tf is None:
                bad = "its TensorFlow version is not recorded"
            elif not SpecifierSet(need.tf).contains(tf, prereleases=True):
                bad = f"it has TensorFlow {tf}"
            else:
                bad = None
            if bad:
                return bad if brief else f"{bad}, and the job {need.why}"
        if need.horovod and not env.get("horovod_version"):
            return "it has no Horovod" if brief else f"it has no Horovod, and the job {need.why}"
        # Locally the job builds the engine when this machine has a GPU and answers with the
        # GPU environment's manifests when not; an image must hold TensorRT itself.
        if need.tensorrt and env.get("kind") == "image" and "tensorrt" not in (env.get("tags") or []):
            bad = "it has no TensorRT (no 'tensorrt' tag)"
            return bad if brief else f"{bad}, and the job {need.why}"
    return None


def contradiction(needs: Needs) -> str | None:
    """A reason no environment could ever satisfy, e.g. Keras 3 APIs and Keras 3 fit() under
    MultiWorkerMirroredStrategy, or Horovod and Keras 3."""
    spec = needs.spec()
    candidates = [Version(f"{major}.{minor}.{patch}") for major in (2, 3)
                  for minor in range(0, 200) for patch in (0, 1, 99)]
    needs = needs.hard()
    if not needs.items or any(spec.contains(v) for v in candidates):
        return None
    fit = next((n for n in needs.items if n.keras3_fit), None)
    hvd = next((n for n in needs.items if n.horovod), None)
    others = "; ".join(n.why for n in needs.items if n is not fit and n is not hvd)
    if hvd is not None:
        text = (f"the job {others}, and Horovod's last release averages gradients only with "
                f"Keras 2 (TF < {KERAS3_TF}): under Keras 3 each worker would train apart and "
                f"nothing would say so. Convert with --to tf-distribute instead "
                f"(MultiWorkerMirroredStrategy, on a TF >= {KERAS3_TF} runtime)")
        if needs.fit_line:
            text += (f"; this script trains with fit() (line {needs.fit_line}), and {FIT_UNDER_MWMS}"
                     f", so rewrite the fit() into a custom training loop first")
        return text
    if fit is not None:
        return (f"the job {others}, and it trains with fit() under tf.distribute: "
                f"{FIT_UNDER_MWMS}. Rewrite the fit() into a custom training loop "
                f"(strategy.run, tf.nn.compute_average_loss, optimizer.apply), which trains "
                f"in sync on Keras 3, or port the script to tf.keras on TF <= 2.15")
    return "the job " + " and ".join(n.why for n in needs.items) + \
        ", which no TensorFlow version satisfies"


def choose(envs: list[dict[str, Any]], needs: Needs, backend: str = "local",
           named: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """(environment, why) for a job; (None, why) when the backend has no environments of its
    kind registered (Kubernetes then uses the images configured under [kubernetes]).
    Raises :class:`NoRuntime` when the job fits no environment."""
    kind = "image" if backend == "kubernetes" else "local"
    if named:
        env = next((e for e in envs if e["name"] == named), None)
        if env is None:
            known = ", ".join(e["name"] for e in envs) or "none"
            raise NoRuntime(f"no environment named {named!r} (known: {known}); see "
                                f"'tfdesk environments list'")
        if env["kind"] != kind:
            where = "--backend kubernetes" if env["kind"] == "image" else "--backend local"
            raise NoRuntime(f"environment {named!r} is {'an image' if env['kind'] == 'image' else 'a local interpreter'}; "
                                f"it runs jobs with {where}")
        bad = misfit(env, needs.hard()) or contradiction(needs)
        if bad:
            raise NoRuntime(f"environment {named!r} cannot run this job: {bad}")
        return env, f"environment {named} ({_versions(env)}), as asked"
    bad = contradiction(needs)
    if bad:
        raise NoRuntime(f"no environment can run this job: {bad}")
    mine = [e for e in envs if e["kind"] == kind]
    if not mine:
        if kind == "image":
            which = (f"the one for TensorFlow {needs.keras3}, as the job {needs.describe()}"
                     if needs.keras3 else "by the script's TensorFlow version")
            return None, (f"no image environments are registered: the image under [kubernetes] "
                          f"images, {which}")
        raise NoRuntime("no local environment is registered; build one with 'make runner-env' "
                            "or add one with 'tfdesk environments add NAME --python PATH'")
    default = next((e for e in mine if e.get("default")), None)
    fits = [e for e in mine if misfit(e, needs.hard()) is None]
    if not fits:
        reasons = "; ".join(f"{e['name']}: {misfit(e, needs.hard())}" for e in mine)
        hint = (" Add one with 'tfdesk environments add NAME --image IMAGE --tf VERSION'."
                if kind == "image" else " 'make runner-env' builds both runtimes tfdesk knows "
                "(TF 2.15 + Horovod, TF 2.21 + Keras 3); 'tfdesk environments add NAME --python "
                "PATH' adds another.")
        raise NoRuntime(f"no {'image' if kind == 'image' else 'local'} environment can run "
                            f"this job ({needs.describe()}): {reasons}.{hint}")
    fits = [e for e in fits if misfit(e, needs.soft()) is None] or fits  # preferences
    if default is not None and default in fits:
        why = f"the default environment {default['name']} ({_versions(default)})"
        return default, why + (f"; the job {needs.describe()}" if needs.items else "")
    best = max(fits, key=lambda e: (_version(e.get("tf_version") or "") or Version("0"),
                                    e["name"]))
    why = f"picked {best['name']} ({_versions(best)}): the job {needs.describe() or 'fits it'}"
    if default is not None:
        why += f"; the default {default['name']} does not fit ({misfit(default, needs, brief=True)})"
    return best, why


def gpu_environment(envs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The GPU environment for TensorRT work on Kubernetes: an image tagged ``tensorrt``
    (the default first, then the newest)."""
    gpu = [e for e in envs if e["kind"] == "image" and "tensorrt" in (e.get("tags") or [])]
    return max(gpu, key=lambda e: (bool(e.get("default")), e.get("id") or 0), default=None)


def _versions(env: dict[str, Any]) -> str:
    bits = [f"TF {env['tf_version']}" if env.get("tf_version") else "TF ?"]
    if env.get("keras_version"):
        bits.append(f"Keras {env['keras_version']}")
    if env.get("horovod_version"):
        bits.append(f"Horovod {env['horovod_version']}")
    return ", ".join(bits)


def summary(env: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a job stores of its environment (enough to run it again the same way)."""
    if env is None:
        return None
    return {k: env.get(k) for k in ("name", "kind", "python", "image", "tf_version",
                                    "keras_version", "horovod_version")}


@dataclass
class Choice:
    """A job's environment and what follows from it for the job's spec."""
    env: dict[str, Any] | None = None
    why: str = ""
    needs: Needs = field(default_factory=Needs)

    @property
    def summary(self) -> dict[str, Any] | None:
        return summary(self.env)

    def job_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The spec the job kind prepares: the request for an environment taken out, and
        where TensorRT work goes when this machine cannot do it."""
        spec = {k: v for k, v in spec.items() if k != "environment"}
        if self.needs.gpu_env:
            spec["kubernetes"] = {**(spec.get("kubernetes") or {}),
                                  "tensorrt_image": self.needs.gpu_env["image"],
                                  "environment": self.needs.gpu_env["name"]}
        return spec

    def stamp(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The prepared spec with the environment recorded (runs again the same way)."""
        if self.why:
            stored["runtime"], stored["runtime_why"] = self.summary, self.why
        if self.env is None and self.needs.keras3 and not stored.get("tf_version"):
            stored["tf_version"] = self.needs.keras3  # the [kubernetes] image for that version
        return stored


def resolve(kind, spec: dict[str, Any], backend: str, environments) -> Choice:
    """The Choice for a job of ``kind``; ``environments`` returns the catalog's environments
    (None: no catalog, every job runs with the configured interpreter)."""
    if environments is None:
        if spec.get("environment"):
            raise NoRuntime("this tfdesk has no catalog of environments, so --env cannot be obeyed")
        return Choice()
    needs = kind.needs(spec) if kind.needs else Needs()
    envs = environments()
    env, why = choose(envs, needs, backend, spec.get("environment"))
    if needs.tensorrt:
        needs.gpu_env = gpu_environment(envs)
    return Choice(env, why, needs)
