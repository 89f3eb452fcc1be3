#!/usr/bin/env bash
# The main job: set up, build, and run swiftlet on the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
scripts/bundled_model.sh
exec build/src/cli/swiftlet inspect models/swiftlet-tiny-random.gguf "$@"
