#!/usr/bin/env bash
# Every test: set up, build (GCC), run the test suite, run it again under
# AddressSanitizer + UndefinedBehaviorSanitizer (built with clang, so both
# compilers' warnings are errors, and it builds faster), then fuzz the GGUF
# reader, the tokenizers and the network-facing parsers briefly (libFuzzer,
# built into the sanitizer tree).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

if [ ! -d ../shared/testdata ]; then
  echo "test: ../shared/testdata is missing; the tests need it beside the checkout" >&2
  exit 1
fi

scripts/setup.sh

echo "== build (RelWithDebInfo without debug info) at $((SECONDS - start)) s" >&2
# The same -O2 code as RelWithDebInfo, without -g: a quarter less compile
# time on two cores (the sanitizer build below keeps line tables for its
# stack traces).
scripts/build.sh build -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
scripts/bundled_model.sh
echo "== tests at $((SECONDS - start)) s" >&2
ctest --test-dir build --output-on-failure -j2
# The tests' scratch files (generated models, server logs: ~1.4 GB) are
# kept when a test fails, to look at, and dropped once all passed: CI
# machines have had little free disk, and the next builds need it.
rm -rf build/test-tmp && mkdir build/test-tmp

echo "== build (ASan + UBSan, with the fuzz targets) at $((SECONDS - start)) s" >&2
# The benchmarks are not tests: the sanitizer build skips them, and the CUDA
# backend (compiled and tested by the build above; nvcc takes no sanitizer
# flags). The fuzz targets build here too, on the same libraries (the ones
# they fuzz carry coverage instrumentation): one clang tree, not two.
CXX=clang++ scripts/build.sh build-asan -DSWIFTLET_SANITIZE=ON -DSWIFTLET_FUZZ=ON \
  -DSWIFTLET_BENCH=OFF -DSWIFTLET_CUDA=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2
rm -rf build-asan/test-tmp && mkdir build-asan/test-tmp

echo "== fuzz the GGUF reader, the tokenizers and the parsers at $((SECONDS - start)) s" >&2
# fuzz NAME TARGET SECONDS MAX_LEN CORPUS...: one libFuzzer run of
# build-asan/fuzz/TARGET, logged to build-asan/fuzz-NAME.log; the log's
# tail on a crash.
fuzz() {
  local name=$1 target=$2 seconds=$3 max_len=$4
  shift 4
  local log=build-asan/fuzz-$name.log
  mkdir -p "$1"
  if ! "build-asan/fuzz/$target" -max_total_time="$seconds" -max_len="$max_len" \
      -print_final_stats=1 "$@" 2>"$log"; then
    tail -50 "$log" >&2
    echo "test: $name fuzzing found a crash" >&2
    return 1
  fi
  sed -n "s/^stat::number_of_executed_units: */$name: executed /p" "$log" >&2
}
# Two runs at a time, one per core; every run ends before the verdict.
fuzz_running=0 fuzz_failed=0
fuzz_next() {
  if ((fuzz_running == 2)); then
    wait -n || fuzz_failed=1
    fuzz_running=$((fuzz_running - 1))
  fi
  fuzz "$@" &
  fuzz_running=$((fuzz_running + 1))
}

gguf_seeds=build-asan/fuzz-seeds-gguf
rm -rf "$gguf_seeds" && build/tests/gguf/gguf_corpus_writer "$gguf_seeds"
fuzz_next gguf gguf_reader_fuzz "${SWIFTLET_FUZZ_SECONDS:-30}" 8192 build-asan/corpus-gguf "$gguf_seeds"
for vocab in llama-spm gpt-2 bert-bge; do
  SWIFTLET_FUZZ_VOCAB=../shared/testdata/vocab/ggml-vocab-$vocab.gguf \
    fuzz_next "tokenizer-$vocab" tokenizer_fuzz "${SWIFTLET_FUZZ_TOKENIZER_SECONDS:-15}" 512 \
    "build-asan/corpus-$vocab"
done
# The network-facing parsers (issue 24): HTTP request parsing, the OpenAI
# and translation request codecs, chat-template rendering, WebSocket frames.
# Seeds in fuzz/seeds/; docs/FUZZING.md has the long runs.
for target in http_request openai_request chat_template websocket_frame websocket_session; do
  seeds=()
  [ -d "fuzz/seeds/$target" ] && seeds=("fuzz/seeds/$target")
  fuzz_next "$target" "${target}_fuzz" "${SWIFTLET_FUZZ_PARSER_SECONDS:-12}" 4096 \
    "build-asan/corpus-$target" "${seeds[@]}"
done
while ((fuzz_running > 0)); do
  wait -n || fuzz_failed=1
  fuzz_running=$((fuzz_running - 1))
done
if ((fuzz_failed)); then
  exit 1
fi

echo "test: all passed in $((SECONDS - start)) s" >&2
