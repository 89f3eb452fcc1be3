#!/usr/bin/env bash
# The overload soak of issue 21 at full length (CI runs a half-minute
# version, the ctest e2e_soak): `swiftlet serve` on a SmolLM2-135M-shape
# Q8_0 model with 2 threads, 32 clients (4x --max-running 8) of mixed
# classes, 10% hanging up mid-stream, for SOAK_SECONDS (default 600).
# Prints the figures and writes them to build/soak-report.json.
#   scripts/soak.sh            (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/cli/swiftlet ] || scripts/build.sh build
exec /usr/bin/python3 tests/e2e/soak_test.py build/src/cli/swiftlet ../shared \
  --duration "${SOAK_SECONDS:-600}" --warmup-fraction 0.2 --report build/soak-report.json "$@"
