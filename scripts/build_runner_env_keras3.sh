#!/usr/bin/env bash
# Builds the second runner environment: the newest TensorFlow with Keras 3 (no Horovod: its last
# release averages gradients only with Keras 2). Used for tf.distribute jobs and for models saved
# with Keras 3. Cached: a second run with the same versions returns at once.
#
# Facts this relies on (checked on this kind of machine): tensorflow-cpu 2.21 pulls Keras 3 and
# protobuf >= 5; tf2onnx 1.16 pins protobuf~=3.20 in its metadata but imports and converts with
# protobuf 5/6, so it is installed without its dependencies and its real ones are named here.
set -euo pipefail
RUNNER="${1:-.venv-runner-tf221}"
PYTHON="${PYTHON:-python3.11}"
TF_VERSION="${TF_VERSION:-2.21.0}"
STAMP="tf$TF_VERSION-keras3"

if [ -f "$RUNNER/.installed" ] && [ "$(cat "$RUNNER/.installed")" = "$STAMP" ]; then
  # Environments built before versions.json existed get it without a rebuild.
  [ -f "$RUNNER/versions.json" ] || "$RUNNER/bin/python" "$(dirname "$0")/runner_versions.py" > "$RUNNER/versions.json"
  exit 0
fi
rm -rf "$RUNNER"
$PYTHON -m venv "$RUNNER"
PIP="$RUNNER/bin/python -m pip"
$PIP install -q --upgrade pip wheel setuptools
$PIP install -q "tensorflow-cpu==$TF_VERSION" onnxruntime onnx cloudpickle psutil pyyaml packaging
$PIP install -q --no-deps tf2onnx
$PIP install -q flatbuffers requests six
$RUNNER/bin/python -c "import tensorflow as tf, keras; print('runner env: TF', tf.__version__, 'Keras', keras.__version__)"
"$RUNNER/bin/python" "$(dirname "$0")/runner_versions.py" > "$RUNNER/versions.json"
echo "$STAMP" > "$RUNNER/.installed"
