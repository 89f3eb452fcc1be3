// Logits processors: steps that rewrite a step's logits in place before a
// token is drawn (penalties, masks, and later constrained output).
//
// A processor belongs to one request's Sampler and is called from whichever
// single thread runs that request; implementations need not be thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace swiftlet {

class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;

  // Rewrites `logits` (one per vocabulary id) in place. `history` is every
  // token so far, prompt then output; each id in it is < logits.size().
  virtual void Apply(std::span<float> logits,
                     std::span<const int32_t> history) = 0;
};

// Repetition, presence and frequency penalties over the last `last_n` tokens
// of history (-1: all of it). For each distinct token t in that window,
// seen `count` times:
//   logit = logit > 0 ? logit / repetition : logit * repetition   (CTRL)
//   logit -= presence * (count > 0) + frequency * count            (OpenAI)
// in that order. Reuses its buffers across calls.
class PenaltyProcessor : public LogitsProcessor {
 public:
  PenaltyProcessor(float repetition, float presence, float frequency,
                   int32_t last_n);

  void Apply(std::span<float> logits,
             std::span<const int32_t> history) override;

 private:
  float repetition_;
  float presence_;
  float frequency_;
  int32_t last_n_;
  std::vector<int32_t> counts_;   // [vocab]; all zero between calls
  std::vector<int32_t> touched_;  // distinct ids seen in this call's window
};

}  // namespace swiftlet
