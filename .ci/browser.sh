#!/usr/bin/env bash
# The console page in a real browser: Chromium from the system's packages (installed here when it
# is missing; a machine that cannot install it fails this step, it never skips it), driven by
# playwright-core against a real console (test/browser/).
set -euo pipefail
cd "$(dirname "$0")/.."

chromium="${TD_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "Chromium is not installed at $chromium: installing the chromium package"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "cannot install chromium: not root and no sudo"; exit 1; }
    sudo="sudo"
  fi
  command -v apt-get >/dev/null || { echo "cannot install chromium: no apt-get on this machine"; exit 1; }
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
  [ -x "$chromium" ] || { echo "chromium was installed but $chromium is still missing"; exit 1; }
fi
"$chromium" --version

npm run test:browser
