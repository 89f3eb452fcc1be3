// Helpers shared by the forward tests (CPU and GPU): small random models of
// each architecture, and sequences run alone, together or in chunks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "model/model.h"

namespace swiftlet {

// Writes a 2-layer random model of `arch` ("llama", "qwen2", "qwen3") with
// `type` weights into the test's temporary directory; returns its path.
std::string WriteTestModel(const std::string& arch, const std::string& type);

// A 2-layer model of `arch` ("llama", "qwen2", "qwen3") with `type`
// weights, loaded on `device`; null (after a test failure) if that fails.
std::unique_ptr<Model> MakeModel(const std::string& arch, const std::string& type,
                                 ComputeDevice device = ComputeDevice::Cpu());

inline const std::vector<int32_t> kSeqA = {1, 40, 77, 300, 12, 5, 99, 200, 31, 8, 150, 42};
inline const std::vector<int32_t> kSeqB = {1, 9, 410, 3, 66, 120, 7};

// Logits for every position of each sequence, on the model's device.
// `chunk` tokens of each sequence per step; sequences interleaved in one
// batch when `together`.
std::vector<std::vector<float>> RunSeqs(const Model& m, const std::vector<std::vector<int32_t>>& seqs,
                                        int chunk, bool together, int threads, TensorType kv);

// The same floats, bit for bit.
void ExpectBitIdentical(const std::vector<float>& a, const std::vector<float>& b);

// Two prompts in one batch on the model's device, with rows asked for their
// logits, their argmax or both: each argmax is the first largest of the
// row's logits (from a run asking every row's logits), and each row's
// logits are the bits they are when every row's are asked for.
void ExpectArgMaxRowsAreTheirLogitsFirstLargest(const Model& m);

}  // namespace swiftlet
