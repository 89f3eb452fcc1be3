// Token sampling: one Sampler per request turns a step's logits into the next
// token through a chain of logits processors and the usual truncations.
//
// Pipeline, in order:
//   1. processors: the penalties from SamplingParams, then each processor
//      added with AddProcessor, in the order added;
//   2. temperature == 0: argmax (ties go to the lowest id), done;
//   3. top-k: keep the k largest logits (ties to the lower id);
//   4. softmax of logits / temperature over what is left;
//   5. top-p: keep the smallest prefix, sorted by probability descending
//      (ties to the lower id), whose cumulative probability >= top_p;
//   6. min-p: keep tokens with p >= min_p * p_max;
//   7. renormalize and draw with a uniform double built from the top 53 bits
//      of a std::mt19937_64 seeded with params.seed.
// The RNG is the Sampler's own, so the same seed and the same logits give the
// same tokens whatever else runs in the process.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/logits_processor.h"

namespace swiftlet {

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy (argmax, ties -> lowest id)
  int32_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off; keep p >= min_p * p_max
  float repetition_penalty = 1.0f;  // CTRL: logit>0 ? logit/pen : logit*pen
  float presence_penalty = 0.0f;    // OpenAI: logit -= presence * (count>0)
  float frequency_penalty = 0.0f;   // OpenAI: logit -= frequency * count
  int32_t penalty_last_n = 64;      // penalty window (-1: whole history)
  uint64_t seed = 0;
};

// InvalidArgument naming the first field out of range: temperature [0, 100],
// top_k >= 0, top_p (0, 1], min_p [0, 1], repetition_penalty (0, 10],
// presence_penalty and frequency_penalty [-2, 2], penalty_last_n >= -1.
absl::Status ValidateSamplingParams(const SamplingParams& params);

// Whether a Sampler made with `params` returns the argmax of the logits as
// given (temperature 0, no penalty), until a processor is added: the logits
// need not leave the device then (Batch::argmax_rows).
bool SamplesArgMax(const SamplingParams& params);

// A token id with its (unnormalized) probability in the last draw.
struct TokenProb {
  int32_t id;
  float p;
};

namespace sampling_internal {
// std::allocator whose resize leaves new elements default-initialized (for
// TokenProb: unwritten): the candidates' scratch is sized to the vocabulary
// and written before it is read, and zeroing it first cost a pass.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace sampling_internal

// One per request; owns its processors, RNG and scratch buffers (sized to the
// vocabulary on first use, reused afterwards). Not thread-safe: one thread at
// a time.
class Sampler {
 public:
  // `params` must pass ValidateSamplingParams (checked).
  explicit Sampler(const SamplingParams& params);

  // Appends a processor; it runs after the penalties and any processor added
  // before it, and before temperature / top-k / top-p / min-p.
  void AddProcessor(std::unique_ptr<LogitsProcessor> processor);

  // Picks the next token. `logits` (one per vocabulary id, non-empty) is
  // rewritten in place as scratch. `history`: tokens so far, prompt + output.
  // kNoToken when none can be drawn: every logit masked (-inf) or NaN, or
  // (above temperature 0) one +inf; a broken model's logits, and the caller
  // fails the request, not the process.
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history);
  static constexpr int32_t kNoToken = -1;

  // The candidates the last non-greedy Sample() drew from, after every
  // truncation, with unnormalized probabilities; order unspecified. Valid
  // until the next Sample(). Empty after a greedy step, and after one that
  // truncated nothing (it drew from every id).
  std::span<const TokenProb> last_candidates() const { return candidates_; }

  const SamplingParams& params() const { return params_; }

  // Whether Sample() returns the argmax of the logits as given: the
  // parameters say so (SamplesArgMax) and no processor was added.
  bool ReturnsArgMax() const;

 private:
  // Every id a candidate, with its logit.
  void AllCandidates(std::span<const float> logits);
  // Candidates of the k best logits (Before's order: ties to the lower id).
  void TopK(std::span<const float> logits, size_t k);
  // p = exp((logit - max) / temperature); sets total_. False when the max
  // is not finite (no token can be drawn).
  bool Softmax();
  void TopP();
  void MinP();
  // TopP and MinP over every id of a row of weights (ExpOfLogitsInPlace's:
  // never NaN, the largest exactly 1) without copying the row into
  // candidates first: candidates_ gets only what is kept.
  void TopPOfRow(std::span<const float> p);
  void MinPOfRow(std::span<const float> p);
  // Both's candidates: the ids whose weights' bits are >= hi, then those in
  // [lo, hi), each in id order, with their weights; returns how many are
  // the first.
  size_t SplitRow(std::span<const float> p, uint32_t lo, uint32_t hi);
  int32_t Draw();  // From candidates_.
  // The index of the first of n items (p(i) their probabilities, total_
  // their sum) whose running sum passes a uniform draw times total_.
  template <typename P>
  size_t DrawIndex(size_t n, const P& p);
  double Uniform();  // The next draw's u in [0, 1).

  // TopP sorts at most this many candidates whole; more go through buckets.
  static constexpr size_t kSortedTopPCandidates = 1024;

  SamplingParams params_;
  std::vector<std::unique_ptr<LogitsProcessor>> processors_;
  std::mt19937_64 rng_;
  // Scratch, capacity = vocabulary.
  std::vector<TokenProb, sampling_internal::UninitializedAllocator<TokenProb>> candidates_;
  double total_ = 0.0;                 // sum of candidates_[i].p
  std::vector<double> block_sums_;     // A whole row's (WeightBlockSums): WeightBlocks(vocabulary).
  // TopPOfRow's and MinPOfRow's two lists of ids (SplitIdsByBits): 2 x SplitIdsRoom(vocabulary).
  std::vector<int32_t, sampling_internal::UninitializedAllocator<int32_t>> split_ids_;
};

}  // namespace swiftlet
