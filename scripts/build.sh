#!/usr/bin/env bash
# Configures and builds one build tree: scripts/build.sh [DIR [CMAKE ARGS...]]
#
# A unity build (CMake compiles each target's sources in batches of 16):
# the headers a batch shares are parsed, and the templates it shares
# instantiated, once, which more than halves the time two cores take to
# build the tree (README.md, "Building", has the figures).
# -DCMAKE_UNITY_BUILD=OFF among the arguments builds file by file.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@" >/dev/null
ninja -C "$dir"
