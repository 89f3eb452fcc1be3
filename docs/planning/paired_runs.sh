#!/bin/bash
# The measurements behind docs/PLANNING.md's "Predicted against measured":
#   docs/planning/paired_runs.sh SWIFTLET SMOL.gguf TINYLLAMA.gguf OUT_DIR
# then docs/planning/compare.py SWIFTLET OUT_DIR.
#
# The development VM is shared: its speed moves in phases of minutes with
# the neighbours' load. So every run uses one engine thread at nice -10 (two
# threads stall at every barrier whenever a neighbour takes a core), and each
# TinyLlama run follows the SmolLM2 run it is predicted from by seconds: each
# pair is one comparison.
set -u
S=$1 SMOL=$2 TINY=$3 OUT=$4
mkdir -p "$OUT"
log() { echo "$(date +%T) $* (load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$OUT/log"; }
engine() {  # model name tag
  log "engine $2 $3"
  nice -n -10 "$S" bench engine -m "$1" --threads 1 --json --batch 1,4,16 --gen-tokens 32 \
    --repeat 1 > "$OUT/$2_engine_$3.json" 2> "$OUT/$2_engine_$3.err"
}
load() {  # model name port slo rates requests
  nice -n -10 "$S" serve -m "$1" --threads 1 --port "$3" --slo-interactive "$4" > "$OUT/$2_serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$3/v1/models" > /dev/null && break; sleep 1; done
  log "load $2"
  nice -n -10 "$S" bench --url "http://127.0.0.1:$3" --rate "$5" --requests "$6" --prompt-tokens 40 \
    --output-tokens 32 --slo "$4" --json "$OUT/$2_load.json" > "$OUT/$2_load.txt" 2>&1
  kill $pid; wait $pid
}
for i in 1 2 3; do
  engine "$SMOL" smol $i
  engine "$TINY" tiny $i
done
# Goodput: SmolLM2's targets, and TinyLlama's scaled by the ratio of their
# step times (about 8, the ratio of their weights).
engine "$SMOL" smol g
load "$SMOL" smol 18431 ttft=1s,tpot=40ms 2,3,4,5,6 40
engine "$TINY" tiny g
load "$TINY" tiny 18432 ttft=8s,tpot=330ms 0.25,0.4,0.55,0.7 16
log done
