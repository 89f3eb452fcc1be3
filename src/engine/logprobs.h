// The log-probabilities a request with logprobs gets with each token: the
// chosen id's and the `top` likeliest ids', under the model's own
// distribution (the softmax of the raw logits: before penalties,
// temperature, truncation or min_tokens' masks, as OpenAI reports them).
//
// A NaN logit has probability 0 (logprob -inf, were it chosen) and is
// never among the top ids.
// A row with a +inf logit gives those ids the mass in equal shares, and
// one with none above -inf gives every id -inf: never a NaN. The sum runs
// in double over exps of float (within 2 ulp each), so a logprob is within
// ~1e-6 of the exact one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/request.h"

namespace swiftlet {

struct TokenLogprobs {
  TokenLogprob chosen;
  // The `top` ids with the largest logits, largest first; ties in order of
  // id. Fewer when the row has fewer non-NaN ids.
  std::vector<TokenLogprob> top;
};

// `logits`: one row, non-empty; 0 <= chosen < logits.size(); top >= 0.
// `scratch` is overwritten (the row's size).
TokenLogprobs ComputeLogprobs(std::span<const float> logits, int32_t chosen, int32_t top,
                              std::vector<float>& scratch);

}  // namespace swiftlet
