#!/usr/bin/env bash
# Installs the Debian 12 packages swiftlet's build and tests need. Safe to
# run again: packages already present are not reinstalled, and apt-get runs
# only when something is missing.
#
# scripts/setup.sh --build-only installs only what building the binary
# needs (no test tools, no Node packages): what deploy/Dockerfile runs.
set -euo pipefail

build_only=0
[ "${1:-}" = "--build-only" ] && build_only=1

packages=(
  build-essential cmake ninja-build g++ lld
  libabsl-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev
  libboost-dev libssl-dev libhiredis-dev
)
if [ "$build_only" -eq 0 ]; then
  packages+=(
    clang libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev
    python3 python3-numpy python3-regex python3-jinja2 python3-yaml qemu-user
    openssl prometheus redis-server python3-websockets
    # The browser tests (tests/browser) drive Debian's chromium, with fonts
    # for the scripts of data/languages.json in its screenshots; the deploy
    # test runs systemd-analyze on deploy/systemd/swiftlet.service.
    chromium fonts-noto-core fonts-wqy-zenhei systemd
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present" >&2
fi

[ "$build_only" -eq 1 ] && exit 0

# The npm packages of the Node test suites, at the versions their
# package-lock.json pins: `npm ci` in each, skipped when the locked version
# of the suite's main package is already installed.
#   tests/e2e/openai: the official openai package, against swiftlet serve
#   tests/browser:    playwright-core, driving Debian's chromium
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "setup: node and npm are needed for tests/e2e/openai and tests/browser" >&2; exit 1; }
npm_ci() {
  local dir="$root/$1" package="$2" locked installed
  locked="$(node -p "require(process.argv[1]).packages['node_modules/$package'].version" \
    "$dir/package-lock.json")"
  installed="$(node -p "try { require(process.argv[1]).version } catch { '' }" \
    "$dir/node_modules/$package/package.json")"
  if [ -n "$locked" ] && [ "$installed" = "$locked" ]; then
    echo "setup: $package $locked present in $1" >&2
  else
    echo "setup: npm ci in $1 ($package $locked)" >&2
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
}
npm_ci tests/e2e/openai openai
npm_ci tests/browser playwright-core
