#!/usr/bin/env bash
# Issue 22's long run: 100 live-translation WebSocket streams held for
# SOAK_SECONDS (default 600) against `swiftlet serve` on a SmolLM2-135M-shape
# Q8_0 model (2 threads), every comment answered — a result or a drop notice
# for each of its languages, none lost. Not part of CI (the e2e tests hold 50
# streams briefly). Prints the bench report and the check.
#   scripts/stream_soak.sh            (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/cli/swiftlet ] || scripts/build.sh build
swiftlet=build/src/cli/swiftlet
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT
"$swiftlet" tools make-model --preset smollm2-135m --type Q8_0 \
  --vocab ../shared/testdata/vocab/ggml-vocab-llama-spm.gguf --out "$dir/smol.gguf" >/dev/null
"$swiftlet" serve -m "$dir/smol.gguf" --chat-template llama2 --threads 2 --port 0 \
  >"$dir/serve.out" 2>"$dir/serve.err" &
server=$!
for _ in $(seq 100); do grep -q "http://" "$dir/serve.out" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$dir/serve.out" | head -1)
"$swiftlet" bench --url "$url" --workload live-comments --transport websocket --streams 100 \
  --languages 3 --comment-rate "${SOAK_RATE:-0.05}" --duration "${SOAK_SECONDS:-600}s" \
  --output-tokens 16 --budget 800ms --warmup 0 --json "$dir/soak.json"
/usr/bin/python3 - "$dir/soak.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
lost = p["offered"] - p["answered"]
print("stream soak: %d comments offered, %d answered in full, %d lost, %d delivered within budget"
      % (p["offered"], p["answered"], lost, p["within_budget"]))
sys.exit(1 if lost else 0)
PY
