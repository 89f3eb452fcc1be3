#!/usr/bin/env bash
# The one prepared GPU check (issue 28), for a machine with an NVIDIA GPU:
#   1. builds swiftlet with the CUDA backend required (build-cuda/);
#   2. runs every op on the GPU against the math and the CPU backend
#      (cuda_backend_test; tolerances in its header comment), quantized
#      matmuls on the tensor cores and on dp4a, launches as CUDA graphs and
#      one by one, prompts on either tensor-core kernel;
#   3. runs Llama, Qwen2 and Qwen3 models on the GPU against the CPU: greedy
#      tokens equal for the first 16 tokens, logits close (cuda_forward_test),
#      those ways too;
#   4. makes a 7B-shape model in Q4_0 and in Q8_0 (make-model --preset
#      llama2-7b, with Llama 2's 32,000-token vocabulary) and runs `bench
#      engine --device cuda` on each: a 512-token prompt (TTFT), decode at
#      batch 1 and 32, each as a share of the GPU's measured HBM read
#      bandwidth; then decode with every row sampled on the host (its
#      logits copied back into page-locked memory) beside greedy decode,
#      on the 7B and on a Qwen2.5-0.5B shape with Qwen's 151,936 ids.
# The 7B models go to $TMPDIR (Q8_0: 7 GB; both about 11 GB).
# Everything it prints also goes to ${OUT:-build-cuda}/gpu-check.log. Aim:
# under 8 minutes on an H200 (16 cores).
#
#   scripts/gpu-check.sh            # SWIFTLET_GPU_CHECK_SKIP_BUILD=1: reuse build-cuda/
#
# SWIFTLET_GPU_CHECK_PARTS="tests" or "bench" runs one half (default both),
# for a lent machine whose commands are limited to 10 minutes each: the
# build and tests first, then the benchmarks with the build reused.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
out=${OUT:-build-cuda}
mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee -a "$log") 2>&1

say() { echo "== $* at $((SECONDS - start)) s"; }

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"

if [ "${SWIFTLET_GPU_CHECK_SKIP_BUILD:-0}" != 1 ]; then
  say "build (CUDA backend required)"
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWIFTLET_CUDA=ON -DSWIFTLET_BENCH=OFF >/dev/null
  ninja -C build-cuda swiftlet cuda_backend_test cuda_forward_test
fi
build-cuda/src/cli/swiftlet inspect --system | grep -E '^(gpu|cpu features)'
build-cuda/src/cli/swiftlet inspect --system | grep -q '^gpu 0' || { echo "gpu-check: no GPU seen" >&2; exit 1; }

# A missing GPU fails the tests here instead of skipping them.
export SWIFTLET_REQUIRE_GPU=1
# Every check runs even when one fails, so one run on a lent GPU says all it
# can; the script fails at the end if any did. Quantized matmuls run on
# the tensor cores by default and on the dp4a kernels with
# SWIFTLET_CUDA_TENSOR_CORES=0; repeated runs of launches go as CUDA graphs
# by default and one by one with SWIFTLET_CUDA_GRAPHS=0: each is checked.
# The names of failed checks also go to a file, so a bench part run on its
# own (SWIFTLET_GPU_CHECK_PARTS=bench after =tests) steers by the tests'
# results.
failed=() earlier=()
failed_file=build-cuda/gpu-check-failed.txt
check() {
  local name=$1
  shift
  say "$name"
  "$@" || { failed+=("$name"); echo "$name" >>"$failed_file"; }
}
parts=" ${SWIFTLET_GPU_CHECK_PARTS:-tests bench} "
if [[ $parts == *" tests "* ]]; then
  rm -f "$failed_file"
elif [ -s "$failed_file" ]; then
  mapfile -t earlier <"$failed_file"
  echo "gpu-check: failed in the tests run before: ${earlier[*]}"
fi
one_by_one=(SWIFTLET_CUDA_GRAPHS=0)
if [[ $parts == *" tests "* ]]; then
  check "every op against the math and the CPU backend (dp4a, one by one)" \
    env SWIFTLET_CUDA_TENSOR_CORES=0 "${one_by_one[@]}" build-cuda/tests/kernels/cuda_backend_test
  check "every op against the math and the CPU backend (tensor cores, graphs)" build-cuda/tests/kernels/cuda_backend_test
  # Prompts' matmuls on the kernel whose warps split the outputs (the same
  # bits by construction; which is faster is what the bench below asks).
  check "every op against the math and the CPU backend (tensor cores, output-split prompts)" \
    env SWIFTLET_CUDA_PROMPT_KERNEL=output-split build-cuda/tests/kernels/cuda_backend_test
  check "models on the GPU against the CPU (dp4a, one by one)" \
    env SWIFTLET_CUDA_TENSOR_CORES=0 "${one_by_one[@]}" build-cuda/tests/model/cuda_forward_test
  check "models on the GPU against the CPU (tensor cores, one by one)" \
    env "${one_by_one[@]}" build-cuda/tests/model/cuda_forward_test
  check "models on the GPU against the CPU (tensor cores, graphs)" build-cuda/tests/model/cuda_forward_test
fi
# Benchmarks on what passed.
kernels=()
case " ${failed[*]} ${earlier[*]} " in
  *"tensor cores, one by one"*)
    echo "gpu-check: the tensor-core kernels failed: benchmarks on dp4a"; kernels+=(SWIFTLET_CUDA_TENSOR_CORES=0) ;;
esac
case " ${failed[*]} ${earlier[*]} " in
  *"graphs"*) echo "gpu-check: runs as CUDA graphs failed: benchmarks one by one"; kernels+=("${one_by_one[@]}") ;;
esac

models=${TMPDIR:-/tmp}/swiftlet-gpu-check
mkdir -p "$models"
[[ $parts == *" bench "* ]] || SWIFTLET_GPU_CHECK_TYPES=" "
# SWIFTLET_GPU_CHECK_TYPES="Q4_0 Q8_0 Q4_K_M" adds a K mix (its make-model
# takes minutes: the K-quant scale search).
for type in ${SWIFTLET_GPU_CHECK_TYPES:-Q4_0 Q8_0}; do
  model="$models/llama2-7b-v32000-$type.gguf"
  if [ ! -s "$model" ]; then
    say "make-model llama2-7b $type"
    build-cuda/src/cli/swiftlet tools make-model --preset llama2-7b --vocab-size 32000 --type "$type" -o "$model"
  fi
  # Two runs: the KV cache is sized for the longest prompt times the most
  # sequences, and 32 sequences of 512+ positions of a 7B (9 GiB) exceed
  # bench engine's 8 GiB cap. The first gives pp512 (the TTFT of a
  # 512-token prompt) and batch-1 decode; the second batch-32 decode.
  check "bench engine --device cuda, 7B shape, $type: pp512, tg32" \
    env "${kernels[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda --prompt-tokens 512 \
    --gen-tokens 32 --batch 1 --repeat 3
  check "bench engine --device cuda, 7B shape, $type: tg32, tg32@b32" \
    env "${kernels[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda --prompt-tokens 16 \
    --gen-tokens 32 --batch 1,32 --repeat 3
  if [ ${#kernels[@]} -eq 0 ] && [ "$type" = Q4_0 ]; then
    check "bench engine --device cuda, 7B shape, Q4_0 on dp4a, for comparison: pp512, tg32" \
      env SWIFTLET_CUDA_TENSOR_CORES=0 build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda \
      --prompt-tokens 512 --gen-tokens 32 --batch 1 --repeat 3
    check "bench engine --device cuda, 7B shape, Q4_0 launched one by one, for comparison: tg32" \
      env "${one_by_one[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda \
      --prompt-tokens 16 --gen-tokens 32 --batch 1 --repeat 3
    case " ${failed[*]} ${earlier[*]} " in
      *"output-split"*) ;;
      *) check "bench engine --device cuda, 7B shape, Q4_0 prompts on the output-split kernel: pp512" \
           env SWIFTLET_CUDA_PROMPT_KERNEL=output-split build-cuda/src/cli/swiftlet bench engine -m "$model" \
           --device cuda --prompt-tokens 512 --gen-tokens 4 --batch 1 --repeat 3 ;;
    esac
  fi
  if [ "$type" = Q4_0 ]; then
    # The OpenAI API's default, temperature 1: each row's 32,000 logits come
    # back (4.1 MB a step at batch 32) and are drawn from on the host; the
    # draw's µs a step are printed apart, the rest beside the greedy run's
    # step is the copy.
    check "bench engine --device cuda, 7B shape, Q4_0, sampled decode: tg32, tg32@b32" \
      env "${kernels[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda --prompt-tokens 16 \
      --gen-tokens 32 --batch 1,32 --repeat 3 --temperature 1
  fi
done
if [[ $parts == *" bench "* ]]; then
  # Qwen's vocabulary: 608 KB of logits a sampled row, 19.5 MB a step at
  # batch 32, against a small model's short step (docs/PERFORMANCE.md,
  # "Sampled rows into page-locked memory").
  model="$models/qwen2.5-0.5b-v151936-Q8_0.gguf"
  if [ ! -s "$model" ]; then
    say "make-model qwen2.5-0.5b Q8_0, 151,936 ids"
    build-cuda/src/cli/swiftlet tools make-model --preset qwen2.5-0.5b --vocab-size 151936 --type Q8_0 -o "$model"
  fi
  check "bench engine --device cuda, Qwen2.5-0.5B shape, 152 k ids, greedy decode: tg32, tg32@b32" \
    env "${kernels[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda --prompt-tokens 16 \
    --gen-tokens 32 --batch 1,32 --repeat 3
  check "bench engine --device cuda, Qwen2.5-0.5B shape, 152 k ids, sampled decode: tg32, tg32@b32" \
    env "${kernels[@]}" build-cuda/src/cli/swiftlet bench engine -m "$model" --device cuda --prompt-tokens 16 \
    --gen-tokens 32 --batch 1,32 --repeat 3 --temperature 1
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'gpu-check FAILED: %s\n' "${failed[@]}"
  exit 1
fi
say "gpu-check passed"
