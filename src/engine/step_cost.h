// What an engine step costs, as a linear model the engine learns from its
// own steps, and the two ways a row's token is found.
//
// A step is the forward pass (fixed + per_token * tokens) and the work
// around it, which grows with the rows that produce a token: choosing the
// token, detokenizing, the stream event, planning. Left out, that work made
// overloaded steps run ~10% past the plan. Choosing the token differs by
// the row's kind: a row drawn on the host from its logits (a sampled
// request, or one asking for logprobs) copies and filters n_vocab floats;
// a greedy row's token is the backend's argmax, taken inside the forward
// pass, so the host only reads an id. On a GPU the two differ by 10-100x,
// so one blended cost per row mispredicts whichever kind is rarer.
#pragma once

#include <cstdint>

namespace swiftlet {

// A step's output rows by kind.
struct OutputRows {
  int64_t sampled = 0;  // Drawn on the host from their logits.
  int64_t argmax = 0;   // Their token is the backend's argmax.
  int64_t total() const { return sampled + argmax; }
  void Add(bool is_argmax, int64_t rows = 1) { (is_argmax ? argmax : sampled) += rows; }
};

struct StepCostModel {
  double fixed_ns = 0;
  double per_token_ns = 0;
  double per_output_ns = 0;  // Around the forward, per sampled row.
  double per_argmax_ns = 0;  // Around the forward, per argmax row.

  double PredictNs(int64_t tokens, OutputRows outputs) const {
    return fixed_ns + per_token_ns * static_cast<double>(tokens) +
           per_output_ns * static_cast<double>(outputs.sampled) +
           per_argmax_ns * static_cast<double>(outputs.argmax);
  }
  // The work around the forward pass of `outputs` rows.
  double AroundNs(OutputRows outputs) const { return PredictNs(0, outputs) - fixed_ns; }

  // Learns from one step: its forward pass took forward_ns for `tokens`
  // tokens, the rest of the step around_ns. Exponentially weighted: each
  // step moves the model a tenth of the way to what it measured.
  void Learn(double forward_ns, int64_t tokens, double around_ns, OutputRows outputs);
};

}  // namespace swiftlet
