#!/usr/bin/env bash
# Builds the bundled demo model, models/swiftlet-tiny-random.gguf: the "tiny"
# shape (llama, hidden 256, 4 layers) in Q8_0 with the Llama SentencePiece
# vocabulary from ../shared/testdata. Its weights are random: it exercises the
# whole stack but its text is noise. Rebuilt only when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
swiftlet=${SWIFTLET:-build/src/cli/swiftlet}
out=models/swiftlet-tiny-random.gguf
vocab=../shared/testdata/vocab/ggml-vocab-llama-spm.gguf
[ -f "$out" ] && exit 0
if [ ! -f "$vocab" ]; then
  echo "bundled_model: $vocab is missing (the shared test data must sit beside the checkout)" >&2
  exit 1
fi
mkdir -p models
"$swiftlet" tools make-model --preset tiny --type Q8_0 --vocab "$vocab" --seed 1 --out "$out"
