#include "engine/logits_processor.h"

#include <cstddef>

#include "core/check.h"

namespace swiftlet {

PenaltyProcessor::PenaltyProcessor(float repetition, float presence,
                                   float frequency, int32_t last_n)
    : repetition_(repetition),
      presence_(presence),
      frequency_(frequency),
      last_n_(last_n) {
  SWIFTLET_CHECK(repetition > 0.0f);
  SWIFTLET_CHECK(last_n >= -1);
}

void PenaltyProcessor::Apply(std::span<float> logits,
                             std::span<const int32_t> history) {
  if (last_n_ >= 0 && history.size() > static_cast<size_t>(last_n_)) {
    history = history.last(static_cast<size_t>(last_n_));
  }
  if (history.empty()) return;
  // Grows once to the vocabulary size; counting through a dense array keeps
  // each call O(window) with no allocation.
  if (counts_.size() < logits.size()) counts_.resize(logits.size(), 0);
  touched_.clear();
  for (int32_t t : history) {
    SWIFTLET_CHECK(t >= 0 && static_cast<size_t>(t) < logits.size());
    if (counts_[t]++ == 0) touched_.push_back(t);
  }
  for (int32_t t : touched_) {
    const int32_t count = counts_[t];
    counts_[t] = 0;
    float l = logits[t];
    if (repetition_ != 1.0f) l = l > 0.0f ? l / repetition_ : l * repetition_;
    l -= presence_ + frequency_ * static_cast<float>(count);
    logits[t] = l;
  }
}

}  // namespace swiftlet
