// The CUDA backend's matmul kernels (matmul_kernels.cu) and the choice
// among them: quantized weights on the tensor cores (mma_q8.h), or with
// dp4a where there are none; the float types with float slices, one warp
// to each (output row, tile of 8 batch rows), its lanes decoding whole
// slices of the weight row with wide loads (weight_slices.h); rows that are
// not whole slices element by element. Each sums in a fixed order that does
// not depend on the batch. For .cu files only.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace swiftlet {

class CudaQueue;

namespace cuda_matmul {

// Activations quantized in blocks of 32 (weight_slices.h's
// kActivationBlock), rows of n_in contiguous: the quants, a float scale per
// block, and the sum of its quants (exact, as a float) for the K quants'
// mins (mma_q8.h).
struct QuantizedActivations {
  const int8_t* q;
  const float* d;
  const float* sums;
};

// Whether the sliced kernels take `w`: a type with a slice, rows a whole
// number of its blocks (always, for the quantized types).
bool Sliced(const WeightView& w);

// Whether `w` takes the integer kernels: quantized weights (whose rows are
// whole blocks, so whole activation blocks of 32).
bool IntegerDot(const WeightView& w);

// Whether this build's tensor-core kernel runs the mma: its code is for
// sm_80 or later (a build for older architectures too may run their PTX,
// where the mma traps). Asks the runtime, for the current device.
bool TensorCoreKernelBuilt();

// Records the quantization of x's first n_blocks blocks of 32, as
// QuantizeRowQ8_0 quantizes them, into q, d and sums (QuantizedActivations).
void LaunchQuantize(CudaQueue& queue, const float* x, int64_t n_blocks, int8_t* q, float* d, float* sums);

// Which kernels a backend's matmuls take (scripts/gpu-check.sh compares
// them; every choice gives the same bits).
struct MatMulKernels {
  // The integer mma (compute capability 8.0 and later), else dp4a.
  bool tensor_cores = true;
  // Prompts (more than 32 batch rows) on the mma kernel whose warps split
  // the outputs, not the blocks of 32 (SWIFTLET_CUDA_PROMPT_KERNEL=output-split).
  bool output_split_prompts = false;
};

// Records y[t * n_out + o] = W[o] · x[t] for the n_rows rows of x (n_in
// each): against xq where the weights are quantized and xq is given (on
// the tensor cores where kernels.tensor_cores), else on the floats.
void LaunchMatMul(CudaQueue& queue, const WeightView& w, const float* x, const QuantizedActivations* xq,
                  int64_t n_rows, float* y, MatMulKernels kernels);

}  // namespace cuda_matmul
}  // namespace swiftlet
