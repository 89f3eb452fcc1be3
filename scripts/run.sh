#!/usr/bin/env bash
# The main job: set up, build, and run swiftlet on the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
scripts/bundled_model.sh
# Random weights: the text is noise, but every stage of the pipeline runs.
exec build/src/cli/swiftlet run -m models/swiftlet-tiny-random.gguf -p "${SWIFTLET_PROMPT:-Once upon a time}" -n 32 "$@"
