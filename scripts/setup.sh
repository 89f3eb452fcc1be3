#!/usr/bin/env bash
# Installs the Debian 12 packages swiftlet's build and tests need. Safe to
# run again: packages already present are not reinstalled, and apt-get runs
# only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build g++ clang libclang-rt-14-dev
  libabsl-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-regex python3-jinja2 qemu-user
  libboost-dev libssl-dev openssl prometheus libhiredis-dev redis-server python3-websockets
)

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

# The openai npm package the serve end-to-end test drives, at the version
# tests/e2e/openai/package-lock.json pins. Skipped when already installed.
openai_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/e2e/openai"
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "setup: node and npm are needed for tests/e2e/openai" >&2; exit 1; }
locked="$(node -p "require(process.argv[1]).packages['node_modules/openai'].version" \
  "$openai_dir/package-lock.json")"
installed="$(node -p "try { require(process.argv[1]).version } catch { '' }" \
  "$openai_dir/node_modules/openai/package.json")"
if [ -n "$locked" ] && [ "$installed" = "$locked" ]; then
  echo "setup: openai $locked present" >&2
else
  echo "setup: npm ci in tests/e2e/openai (openai $locked)" >&2
  (cd "$openai_dir" && npm ci --no-audit --no-fund)
fi
