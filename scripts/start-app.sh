#!/usr/bin/env bash
# Installs everything and starts the app on the embedded defaults (SQLite, Milvus Lite,
# in-process cache, bundled models, offline LLM) at http://127.0.0.1:8501
# It turns demo mode on (demo identities and data to try the product) unless DEMO_MODE is set:
# the app's own default, the Dockerfile and docker-compose.yml keep it off, and it is never
# offered once accounts (python -m services.auth add) or single sign-on are configured.
# The server starts through ui/serve.py, which begins loading the memory engine (embedding
# model, tokenizer dictionary, Milvus Lite) at once, so the first page shows the sign-in without
# waiting for it. SKIP_INSTALL=1 restarts without re-running the install step.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_INSTALL:-}" != "1" ]; then
  bash scripts/install.sh
fi
export DEMO_MODE="${DEMO_MODE:-true}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE TOKENIZERS_PARALLELISM=false RUST_LOG=error
exec .venv/bin/python -m ui.serve app.py --server.address 127.0.0.1 --browser.gatherUsageStats false "$@"
