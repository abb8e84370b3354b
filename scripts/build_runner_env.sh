#!/usr/bin/env bash
# Builds the runner environment: where converted scripts, training and model conversion run.
# Kept apart from the bot's environment so the bot never imports TensorFlow.
#
# Facts this relies on (checked on this kind of machine): Horovod 0.28.1 builds unmodified
# against TF <= 2.18, needs --no-build-isolation and the HOROVOD_* switches below, takes about
# 3 minutes to build; TF 2.15.1 needs numpy<2, protobuf<5 and onnx<1.18 or it stops importing.
set -euo pipefail
RUNNER="${1:-.venv-runner}"
PYTHON="${PYTHON:-python3.11}"
TF_VERSION="${TF_VERSION:-2.15.1}"
HVD_VERSION="0.28.1"
PYVER=$($PYTHON -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
CACHE="${TFDESK_WHEEL_CACHE:-$HOME/.cache/tfdesk/wheels}/horovod-$HVD_VERSION-tf$TF_VERSION-py$PYVER"

if [ -f "$RUNNER/.installed" ] && [ "$(cat "$RUNNER/.installed")" = "tf$TF_VERSION-hvd$HVD_VERSION" ]; then
  # Environments built before versions.json existed get it without a rebuild.
  [ -f "$RUNNER/versions.json" ] || "$RUNNER/bin/python" "$(dirname "$0")/runner_versions.py" > "$RUNNER/versions.json"
  exit 0
fi
rm -rf "$RUNNER"
$PYTHON -m venv "$RUNNER"
PIP="$RUNNER/bin/python -m pip"
$PIP install -q --upgrade pip wheel setuptools
$PIP install -q "tensorflow-cpu==$TF_VERSION" "numpy<2" "protobuf<5" "onnx<1.18" \
    tf2onnx onnxruntime cloudpickle psutil pyyaml packaging

mkdir -p "$CACHE"
if ! ls "$CACHE"/horovod-*.whl >/dev/null 2>&1; then
  echo "building Horovod $HVD_VERSION against TensorFlow $TF_VERSION (about 3 minutes)..."
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_PYTORCH=1 \
  HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITHOUT_MPI=1 \
    $PIP wheel -q --no-build-isolation --no-deps -w "$CACHE" "horovod==$HVD_VERSION"
fi
$PIP install -q --no-deps "$CACHE"/horovod-*.whl
# Horovod's own runtime dependencies (installed without --no-deps they would pull newer numpy).
$PIP install -q "numpy<2" "protobuf<5" cloudpickle psutil pyyaml packaging
$RUNNER/bin/python -c "import tensorflow as tf, horovod.tensorflow as hvd; print('runner env: TF', tf.__version__)"
"$RUNNER/bin/python" "$(dirname "$0")/runner_versions.py" > "$RUNNER/versions.json"
echo "tf$TF_VERSION-hvd$HVD_VERSION" > "$RUNNER/.installed"
