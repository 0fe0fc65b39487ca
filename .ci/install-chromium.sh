#!/usr/bin/env bash
# Install headless Chromium (Debian package `chromium`) for the report render test, when missing.
# Usage: .ci/install-chromium.sh   (needs root or sudo; a no-op when a chromium binary exists)
set -euo pipefail

for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
        echo "chromium present: $(command -v "$candidate")"
        exit 0
    fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium: not root and no sudo; the render test will be skipped" >&2
        exit 0
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "installed: $(chromium --version)"
