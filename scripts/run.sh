#!/usr/bin/env bash
# The main job: set up, build, and serve the bundled model over the
# OpenAI-compatible API (prints the URL and a curl line to try; Ctrl-C stops
# it gracefully). Extra flags pass through to `swiftlet serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
scripts/bundled_model.sh
# Random weights: the text is noise, but every stage of the pipeline runs.
# The bundled model has no chat template of its own: use Llama 2's (its
# vocabulary is Llama's).
exec build/src/cli/swiftlet serve -m models/swiftlet-tiny-random.gguf --chat-template llama2 "$@"
