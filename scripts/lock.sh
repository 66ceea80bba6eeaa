#!/usr/bin/env bash
# Writes the lock of one venv: the exact version of every package installed in it, as pip
# constraints, to locks/<kind>-py<X.Y>.txt. Run by `make lock` after the tests have passed,
# so that a lock holds versions that passed; scripts/setup.sh and scripts/setup_vllm.sh install
# with `-c` that file, and run.json records its sha256 (lock_sha256).
#
# Usage: scripts/lock.sh VENV KIND   (KIND: venv for drarena's venv, vllm for .venv-vllm;
# LOCK_DIR=<folder> writes there instead of locks/)
# torch is written without its local label (2.13.0, not 2.13.0+cpu): the setup scripts choose
# the CPU build by name before the lock applies, and `torch==2.13.0` admits it where the CPU
# build is the only one to be had (Python 3.11 here) and PyPI's where it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:?usage: scripts/lock.sh VENV KIND}
KIND=${2:?usage: scripts/lock.sh VENV KIND}
[ -x "$VENV/bin/python" ] || { echo "lock: no venv at $VENV (run make setup first)" >&2; exit 1; }
PYVER=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
OUT=${LOCK_DIR:-locks}/$KIND-py$PYVER.txt
mkdir -p "${LOCK_DIR:-locks}"
tmp=$(mktemp)
{
  echo "# Exact versions in $VENV on Python $PYVER ($(uname -m) Linux), written by scripts/lock.sh"
  echo "# (make lock) after the tests passed. pip constraints: the setup scripts install -c this file."
  "$VENV/bin/python" -m pip --disable-pip-version-check list --format=freeze --exclude-editable \
    | { grep -v -i -E '^pip==' || true; } | sed -E 's/^(torch==[^+]+)\+.*/\1/' | LC_ALL=C sort -f
} > "$tmp"
mv "$tmp" "$OUT"
sha=$(sha256sum "$OUT" | cut -d' ' -f1)
printf 'sha256:%s %s\n' "$sha" "$OUT" > "$VENV/.drarena-lock"
echo "lock: $OUT ($(grep -c -v '^#' "$OUT") packages, sha256:${sha:0:16}...)"
