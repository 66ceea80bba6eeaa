#!/usr/bin/env bash
# Creates .venv and installs drarena with everything it needs. Idempotent: make calls it only
# when pyproject.toml or this script changed (see the stamp in the Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { echo "setup: drarena needs Python 3.11 (found $("$PYTHON" --version 2>&1))" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade pip
# The CPU wheel of torch first: any other torch resolves to a multi-GB CUDA build.
.venv/bin/python -c 'import torch' 2>/dev/null || "${PIP[@]}" install -q "torch==2.13.0"
"${PIP[@]}" install -q -e '.[dev]'
echo "setup: .venv ready ($(.venv/bin/python -c 'import drarena; print("drarena", drarena.__version__)'))"
