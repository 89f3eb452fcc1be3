#!/usr/bin/env bash
# Every test: set up, build (GCC), run the test suite, run it again under
# AddressSanitizer + UndefinedBehaviorSanitizer (built with clang, so both
# compilers' warnings are errors, and it builds faster), then fuzz the GGUF
# reader, the tokenizers and the network-facing parsers briefly (clang +
# libFuzzer).
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

echo "== build (ASan + UBSan) at $((SECONDS - start)) s" >&2
# The benchmarks are not tests: the sanitizer build skips them, and the CUDA
# backend (compiled and tested by the build above; nvcc takes no sanitizer
# flags).
CXX=clang++ scripts/build.sh build-asan -DSWIFTLET_SANITIZE=ON -DSWIFTLET_BENCH=OFF -DSWIFTLET_CUDA=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2
rm -rf build-asan/test-tmp && mkdir build-asan/test-tmp

echo "== fuzz the GGUF reader, the tokenizers and the parsers at $((SECONDS - start)) s" >&2
CXX=clang++ scripts/build.sh build-fuzz -DSWIFTLET_FUZZ=ON -DSWIFTLET_TESTS=OFF
seeds=build-fuzz/seeds
rm -rf "$seeds" && build/tests/gguf/gguf_corpus_writer "$seeds"
mkdir -p build-fuzz/corpus
build-fuzz/fuzz/gguf_reader_fuzz -max_total_time="${SWIFTLET_FUZZ_SECONDS:-30}" -max_len=8192 \
  -print_final_stats=1 build-fuzz/corpus "$seeds" 2>build-fuzz/fuzz.log \
  || { tail -50 build-fuzz/fuzz.log >&2; echo "test: fuzzing found a crash" >&2; exit 1; }
grep -E '^stat::number_of_executed_units' build-fuzz/fuzz.log >&2 || true
for vocab in llama-spm gpt-2 bert-bge; do
  mkdir -p "build-fuzz/corpus-$vocab"
  SWIFTLET_FUZZ_VOCAB=../shared/testdata/vocab/ggml-vocab-$vocab.gguf \
    build-fuzz/fuzz/tokenizer_fuzz -max_total_time="${SWIFTLET_FUZZ_TOKENIZER_SECONDS:-15}" \
    -max_len=512 -print_final_stats=1 "build-fuzz/corpus-$vocab" 2>"build-fuzz/fuzz-$vocab.log" \
    || { tail -50 "build-fuzz/fuzz-$vocab.log" >&2; echo "test: tokenizer fuzzing ($vocab) found a crash" >&2; exit 1; }
  grep -E '^stat::number_of_executed_units' "build-fuzz/fuzz-$vocab.log" >&2 || true
done

# The network-facing parsers (issue 24): HTTP request parsing, the OpenAI
# and translation request codecs, chat-template rendering, WebSocket frames.
# Seeds in fuzz/seeds/; docs/FUZZING.md has the long runs.
for target in http_request openai_request chat_template websocket_frame websocket_session; do
  corpus="build-fuzz/corpus-$target"
  mkdir -p "$corpus"
  seeds=()
  [ -d "fuzz/seeds/$target" ] && seeds=("fuzz/seeds/$target")
  build-fuzz/fuzz/${target}_fuzz -max_total_time="${SWIFTLET_FUZZ_PARSER_SECONDS:-12}" -max_len=4096 \
    -print_final_stats=1 "$corpus" "${seeds[@]}" 2>"build-fuzz/fuzz-$target.log" \
    || { tail -50 "build-fuzz/fuzz-$target.log" >&2; echo "test: $target fuzzing found a crash" >&2; exit 1; }
  grep -E '^stat::number_of_executed_units' "build-fuzz/fuzz-$target.log" >&2 || true
done

echo "test: all passed in $((SECONDS - start)) s" >&2
