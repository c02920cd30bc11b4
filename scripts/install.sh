#!/usr/bin/env bash
# Creates ./.venv and installs the pinned dependencies. Safe to re-run.
# torch comes first and pinned: an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/pip install --quiet torch==2.13.0
.venv/bin/pip install --quiet -r requirements.txt -c constraints.txt
if [ "${1:-}" = "--dev" ]; then
  .venv/bin/pip install --quiet -r requirements-dev.txt -c constraints.txt
fi
