#!/usr/bin/env bash
# Issue 27's figures (docs/PERFORMANCE.md, "Several models in one
# server"): (1) the load time of a TinyLlama-shape Q8_0 model served beside
# SmolLM2-135M, four loads and unloads; (2) two hot SmolLM2 models at once
# against each alone at HALF_RATE req/s (default 3). Not in CI: it runs for
# minutes and wants quiet cores.
#   scripts/bench-multi-model.sh            (after scripts/build.sh)
#   SKIP_LOAD=1 HALF_RATE=4 scripts/bench-multi-model.sh
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/cli/swiftlet ] || scripts/build.sh build
S=$PWD/build/src/cli/swiftlet
V=$PWD/../shared/testdata/vocab/ggml-vocab-llama-spm.gguf
W=${WORK_DIR:-build/bench-multi-model}
mkdir -p "$W" && cd "$W"
M=smol-q8.gguf; T=tinyllama-q8.gguf
[ -f $M ] || $S tools make-model --preset smollm2-135m --type Q8_0 --vocab "$V" --out $M
ready() { for _ in $(seq 1 240); do curl -sf "http://127.0.0.1:$1/ready" >/dev/null && return; sleep 0.5; done; }
if [ -z "${SKIP_LOAD:-}" ]; then
  [ -f $T ] || $S tools make-model --preset tinyllama-1.1b --type Q8_0 --vocab "$V" --out $T
  $S serve -m $M -m $T --model-name smol --model-name tinyllama --threads 2 --kv-memory 256MiB --port 18091 \
    > load.out 2> load.err &
  pid=$!; ready 18091
  for _ in 1 2 3 4; do
    curl -s -XPOST http://127.0.0.1:18091/v1/models/tinyllama/load |
      /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print('load', d['last_load_ms'], 'ms, memory', d['memory_bytes'])"
    curl -s -XPOST http://127.0.0.1:18091/v1/models/tinyllama/unload > /dev/null
  done
  grep "loaded in" load.err
  kill -INT $pid; wait $pid
fi
if [ -z "${SKIP_GOODPUT:-}" ]; then
  R=${HALF_RATE:-3}
  cp -f $M smol-q8-b.gguf
  $S serve -m $M -m smol-q8-b.gguf --model-name A --model-name B --threads 2 --port 18092 > two.out 2> two.err &
  pid=$!; ready 18092
  curl -s -XPOST http://127.0.0.1:18092/v1/models/B/load > /dev/null
  B="--url http://127.0.0.1:18092 --rate $R --duration ${DURATION:-20s} --prompt-tokens 40 --output-tokens 32"
  B="$B --slo ttft=500ms,tpot=100ms"
  echo "== A alone at $R req/s"; $S bench $B --model A --json alone-A.json > alone-A.txt 2>&1
  echo "== B alone at $R req/s"; $S bench $B --model B --json alone-B.json > alone-B.txt 2>&1
  echo "== A and B together, $R req/s each"
  $S bench $B --model A --json both-A.json > both-A.txt 2>&1 &
  a=$!
  $S bench $B --model B --json both-B.json > both-B.txt 2>&1
  wait $a
  grep -E "goodput [0-9]" alone-A.txt alone-B.txt both-A.txt both-B.txt
  /usr/bin/python3 - <<'PY'
import json
g = lambda f: json.load(open(f))["points"][0]["goodput_req_s"]
alone = g("alone-A.json") + g("alone-B.json")
both = g("both-A.json") + g("both-B.json")
print(f"goodput alone A+B {alone:.2f} req/s, together {both:.2f} req/s: {100 * both / alone:.1f}%")
PY
  kill -INT $pid; wait $pid
fi
