#!/usr/bin/env bash
# System packages tfdesk and its tests need: bubblewrap (every local job runs in its sandbox;
# setpriv from util-linux drops to the job user), Chromium (the docs-site browser test, driven
# by Playwright, never downloaded) and a C++ toolchain with CMake (Horovod is built from source
# for the runner environment). Installed with apt when missing; without root, says what to
# install.
set -euo pipefail
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v chromium >/dev/null || missing+=(chromium)
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing system packages: ${missing[*]} (install them, e.g. sudo apt-get install -y ${missing[*]})" >&2
    exit 1
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
