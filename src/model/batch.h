// A ragged batch for one forward pass: tokens of several sequences at once,
// each with its position and KV slot, and the rows whose results are wanted.
// Prefill chunks and decode steps share one batch; a single sequence is a
// batch of one.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_memory.h"

namespace swiftlet {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;  // Position of each token in its sequence.
  std::vector<int32_t> slots;      // KV cache slot of each token's sequence.
  // Indices into tokens whose logits are returned, in this order.
  std::vector<int32_t> output_rows;
  // Indices into tokens whose final hidden states (after the output norm:
  // what embeddings pool) are returned, in this order. A row may be in
  // both lists.
  std::vector<int32_t> hidden_rows;
  // Indices into tokens whose logits' argmax is returned instead of the
  // logits (Backend::ArgMax: ties to the lowest id, as Sampler's
  // temperature 0): a greedy sequence's next token costs one id off the
  // device, not n_vocab floats. A row may be in both this list and
  // output_rows.
  std::vector<int32_t> argmax_rows;

  void Add(int32_t token, int32_t position, int32_t slot, bool output, bool hidden = false) {
    if (output) output_rows.push_back(static_cast<int32_t>(tokens.size()));
    if (hidden) hidden_rows.push_back(static_cast<int32_t>(tokens.size()));
    tokens.push_back(token);
    positions.push_back(position);
    slots.push_back(slot);
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

// Results of a forward pass: one row of n_vocab logits per
// Batch::output_rows entry, one row of n_embd hidden values per
// Batch::hidden_rows entry, one token id per Batch::argmax_rows entry. In
// the host memory the backend copies into fastest (Backend::HostMemory:
// page-locked for a GPU), which Model::Forward gives them; keeping one
// ForwardOutput across steps keeps that memory.
struct ForwardOutput {
  HostVector<float> values;
  int64_t row_size = 0;
  HostVector<float> hidden;
  int64_t hidden_row_size = 0;
  HostVector<int32_t> argmax;
  const float* Row(int64_t i) const { return values.data() + i * row_size; }
  // For a reader that may use a row as scratch (its only reader: the
  // engine's draw of a row no other choice draws from).
  float* MutableRow(int64_t i) { return values.data() + i * row_size; }
  const float* HiddenRow(int64_t i) const { return hidden.data() + i * hidden_row_size; }
};

}  // namespace swiftlet
