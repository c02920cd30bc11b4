#!/usr/bin/env bash
# Refreshes the README screenshots (docs/screenshots/) by running the browser test with
# PUBLISH_SCREENSHOTS=1. Installs Debian's CJK and emoji fonts first (as root, when missing):
# without them the Chinese text and the page icons are drawn as boxes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  fonts=""
  fc-list :lang=zh 2>/dev/null | grep -q . || fonts="$fonts fonts-noto-cjk"
  [ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || fonts="$fonts fonts-noto-color-emoji"
  if [ -n "$fonts" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $fonts >/dev/null) \
      || echo "warning: could not install$fonts; screenshots may show boxes" >&2
  fi
fi
PUBLISH_SCREENSHOTS=1 exec bash scripts/run-tests.sh tests/e2e "$@"
