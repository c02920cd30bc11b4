#!/usr/bin/env bash
# Installs the test dependencies, makes sure PostgreSQL and Redis answer on 127.0.0.1,
# and runs the whole test suite (extra arguments go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev

# Debian packages some tests need: a real browser for the end-to-end test (Playwright's own
# download is not used) and a Compose client to validate docker-compose.yml (no engine is needed).
missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v docker-compose >/dev/null || missing="$missing docker-compose"
# the real Milvus server of the server tests runs in its own namespace, bridged to 127.0.0.1
command -v socat >/dev/null || missing="$missing socat"
command -v unshare >/dev/null || missing="$missing util-linux"
command -v ip >/dev/null || missing="$missing iproute2"
if [ -n "$missing" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null) \
    || echo "warning: could not install$missing; the tests that need them will say so" >&2
fi

# The services the tests talk to for real.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
if ! (command -v redis-cli >/dev/null && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1); then
  if command -v redis-server >/dev/null; then
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
    for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE TOKENIZERS_PARALLELISM=false RUST_LOG=error
# Two workers by default (TEST_WORKERS=0 runs in one process); a file's tests stay on one worker,
# so module-scoped engines are opened once.
workers=${TEST_WORKERS:-2}
if [ "$workers" != "0" ]; then
  exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
fi
exec .venv/bin/python -m pytest "$@"
