"""TensorRT optimisation profiles from the model's own shapes or the user's --shape, and the
answer on a machine with no GPU: the GPU environment (an image with TensorRT) on Kubernetes."""
from __future__ import annotations


import pytest

from converters.model import tensorrt
from converters.model.errors import BadOption, NeedsGPU
from runners.kubernetes.schema import validate
from runners.runtimes import gpu_environment

TEXT = [{"name": "tokens", "shape": [None, None]}, {"name": "mask", "shape": [None, 64]}]


def test_fixed_dimensions_are_the_models_and_the_batch_spans_the_sizes():
    got = tensorrt.profile_shapes([{"name": "image", "shape": [None, 28, 28, 1]}], [1, 8, 32])
    assert got == {"image": {"min": [1, 28, 28, 1], "opt": [8, 28, 28, 1], "max": [32, 28, 28, 1]}}
    fixed_batch = tensorrt.profile_shapes([{"name": "x", "shape": [4, 16]}], [1, 8])
    assert fixed_batch == {"x": {"min": [4, 16], "opt": [4, 16], "max": [4, 16]}}


def test_dynamic_dimensions_are_never_guessed():
    with pytest.raises(BadOption) as e:
        tensorrt.profile_shapes(TEXT, [1, 8])
    msg = str(e.value)
    assert "tokens [None, None] dimension 1" in msg and "16" not in msg.split("--shape")[0]
    assert "--shape tokens=1x1:8x128:32x512" in msg
    # the user's samples say how long the sequences are
    got = tensorrt.profile_shapes(TEXT, [1, 8], samples={"tokens": [1, 200], "mask": [1, 64]})
    assert got["tokens"] == {"min": [1, 200], "opt": [8, 200], "max": [8, 200]}


def test_user_shapes_win_and_are_checked_against_the_model():
    user = tensorrt.parse_shape_args(["tokens=1x16:8x128:32x512"])
    with pytest.raises(BadOption, match="mask"):  # mask's batch is dynamic: fine; tokens given
        tensorrt.profile_shapes([TEXT[0], {"name": "mask", "shape": [None, None]}], [1, 8],
                                user=user)
    got = tensorrt.profile_shapes(TEXT, [1, 8], user=user)
    assert got["tokens"] == {"min": [1, 16], "opt": [8, 128], "max": [32, 512]}
    assert got["mask"] == {"min": [1, 64], "opt": [8, 64], "max": [8, 64]}
    with pytest.raises(BadOption, match="dimension 1 is fixed at 64"):
        tensorrt.profile_shapes(TEXT, [1], user=tensorrt.parse_shape_args(
            ["tokens=1x1:1x1:1x1", "mask=1x32:1x64:1x64"]))
    with pytest.raises(BadOption, match="has 2 dimensions"):
        tensorrt.profile_shapes(TEXT, [1], user=tensorrt.parse_shape_args(["tokens=1:2:3"]))
    with pytest.raises(BadOption, match="the model does not have"):
        tensorrt.profile_shapes(TEXT, [1], user=tensorrt.parse_shape_args(["nope=1:1:1"]))


@pytest.mark.parametrize("bad, expected", [
    ("tokens", "NAME=MIN:OPT:MAX"), ("tokens=1x2:3x4", "NAME=MIN:OPT:MAX"),
    ("tokens=1xa:1x2:1x3", "whole numbers"), ("tokens=1x8:1x4:1x16", "min <= opt <= max"),
    ("tokens=1x8:1x8x1:1x8", "same number of dimensions"),
])
def test_shape_flag_syntax(bad, expected):
    with pytest.raises(BadOption, match=expected):
        tensorrt.parse_shape_args([bad])


JOB = {"id": "j-12ab34cd", "rel_dir": "j-12ab34cd/out", "onnx": "model.onnx",
       "engine": "model.fp16.plan", "precision": "fp16",
       "shapes": tensorrt.profile_shapes([{"name": "x", "shape": [None, 16]}], [1, 8])}


def test_no_gpu_answers_with_the_gpu_environment():
    envs = [{"name": "runner", "kind": "local", "tags": []},
            {"name": "trt-gpu", "kind": "image", "image": "registry.example/trt:10.3-tf2.16",
             "tags": ["tensorrt"], "id": 3}]
    gpu = gpu_environment(envs)
    with pytest.raises(NeedsGPU) as e:
        tensorrt.select_builder(JOB, {"tensorrt_image": gpu["image"], "environment": gpu["name"]},
                                gpu=lambda: None, has_module=lambda m: False, which=lambda x: None)
    assert "GPU environment trt-gpu (image registry.example/trt:10.3-tf2.16" in e.value.message
    job = e.value.manifests[1]
    validate(job)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == gpu["image"]
    with pytest.raises(NeedsGPU) as e:
        tensorrt.select_builder(JOB, {}, gpu=lambda: None, has_module=lambda m: False,
                                which=lambda x: None)
    assert "tfdesk environments add trt-gpu --image IMAGE --tag tensorrt" in e.value.message
