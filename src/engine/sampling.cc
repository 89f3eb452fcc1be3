#include "engine/sampling.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "core/check.h"
#include "core/str_cat.h"
#include "model/logit_math.h"

namespace swiftlet {
namespace {

absl::Status OutOfRange(const char* field, const char* range, float value) {
  return absl::InvalidArgumentError(
      StrCat("sampling parameter ", field, " must be in ", range, ", got ",
             value));
}

// A NaN logit as a masked one (-inf): never drawn, as ArgMaxRow never picks
// it, and the orders below stay strict weak orders.
float NotNaN(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

// Higher probability (or logit) first, ties to the lower id.
bool Before(const TokenProb& a, const TokenProb& b) {
  return a.p > b.p || (a.p == b.p && a.id < b.id);
}

// Top-p's buckets of p's leading bits. p is in [0, 1] (the largest weight
// is exactly 1): bits 19.. of a non-negative float are its exponent and 4
// mantissa bits, at most 1.0f's 0x7f0; a larger p never has a smaller
// bucket.
constexpr int kTopPBucketShift = 19;
constexpr uint32_t kTopPBuckets = (0x3f800000u >> kTopPBucketShift) + 1;
uint32_t TopPBucket(float p) {
  return std::min(std::bit_cast<uint32_t>(p) >> kTopPBucketShift, kTopPBuckets - 1);
}

// The mass of n weights p(i) in each bucket. Four histograms, by i mod 4:
// most weights of a row fall in a few buckets, and one histogram made each
// add wait on the last one's store to the same bucket.
template <typename P>
std::array<double, kTopPBuckets> TopPBucketMass(size_t n, const P& p) {
  std::array<std::array<double, kTopPBuckets>, 4> parts{};
  const size_t whole = n - n % 4;
  for (size_t i = 0; i < whole; i += 4) {
    parts[0][TopPBucket(p(i))] += p(i);
    parts[1][TopPBucket(p(i + 1))] += p(i + 1);
    parts[2][TopPBucket(p(i + 2))] += p(i + 2);
    parts[3][TopPBucket(p(i + 3))] += p(i + 3);
  }
  for (size_t i = whole; i < n; ++i) parts[0][TopPBucket(p(i))] += p(i);
  std::array<double, kTopPBuckets> mass;
  for (uint32_t b = 0; b < kTopPBuckets; ++b) mass[b] = (parts[0][b] + parts[1][b]) + (parts[2][b] + parts[3][b]);
  return mass;
}

// The buckets from the top: the one where the head's mass reaches
// `threshold`, with the mass of the buckets above it in `head`; or
// kTopPBuckets when rounding left the whole mass short of it.
uint32_t TopPBoundary(const std::array<double, kTopPBuckets>& mass, double threshold, double& head) {
  head = 0.0;
  for (uint32_t b = kTopPBuckets; b-- > 0;) {
    if (head + mass[b] >= threshold) return b;
    head += mass[b];
  }
  return kTopPBuckets;
}

}  // namespace

absl::Status ValidateSamplingParams(const SamplingParams& p) {
  // Each test is written as !(in range) so that NaN is rejected too.
  if (!(p.temperature >= 0.0f && p.temperature <= 100.0f)) {
    return OutOfRange("temperature", "[0, 100]", p.temperature);
  }
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(
        StrCat("sampling parameter top_k must be >= 0, got ", p.top_k));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return OutOfRange("top_p", "(0, 1]", p.top_p);
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return OutOfRange("min_p", "[0, 1]", p.min_p);
  }
  if (!(p.repetition_penalty > 0.0f && p.repetition_penalty <= 10.0f)) {
    return OutOfRange("repetition_penalty", "(0, 10]", p.repetition_penalty);
  }
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f)) {
    return OutOfRange("presence_penalty", "[-2, 2]", p.presence_penalty);
  }
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f)) {
    return OutOfRange("frequency_penalty", "[-2, 2]", p.frequency_penalty);
  }
  if (p.penalty_last_n < -1) {
    return absl::InvalidArgumentError(
        StrCat("sampling parameter penalty_last_n must be >= -1, got ",
               p.penalty_last_n));
  }
  return absl::OkStatus();
}

namespace {

bool Penalizes(const SamplingParams& p) {
  const bool penalty = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
                       p.frequency_penalty != 0.0f;
  return penalty && p.penalty_last_n != 0;
}

}  // namespace

bool SamplesArgMax(const SamplingParams& params) {
  return params.temperature == 0.0f && !Penalizes(params);
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed) {
  SWIFTLET_CHECK(ValidateSamplingParams(params).ok());
  if (Penalizes(params)) {
    processors_.push_back(std::make_unique<PenaltyProcessor>(
        params.repetition_penalty, params.presence_penalty,
        params.frequency_penalty, params.penalty_last_n));
  }
}

bool Sampler::ReturnsArgMax() const {
  return SamplesArgMax(params_) && processors_.empty();
}

void Sampler::AddProcessor(std::unique_ptr<LogitsProcessor> processor) {
  SWIFTLET_CHECK(processor != nullptr);
  processors_.push_back(std::move(processor));
}

int32_t Sampler::Sample(std::span<float> logits,
                        std::span<const int32_t> history) {
  SWIFTLET_CHECK(!logits.empty());
  SWIFTLET_CHECK(logits.size() <=
                 static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  for (auto& processor : processors_) processor->Apply(logits, history);

  candidates_.clear();
  if (params_.temperature == 0.0f) {
    // The same answer as a device's ArgMax: the engine takes either.
    const int32_t id = ArgMaxOfLogits(logits.data(), static_cast<int64_t>(logits.size()));
    return id >= 0 ? id : kNoToken;  // Nothing above -inf but NaN.
  }

  const size_t k = static_cast<size_t>(params_.top_k);
  if (k > 0 && k < logits.size()) {
    TopK(logits, k);
    if (!Softmax()) return kNoToken;
  } else {
    // Every id: the exps over the row on the kernels' SIMD exp, in place.
    const float max = ExpOfLogitsInPlace(logits.data(), static_cast<int64_t>(logits.size()), params_.temperature);
    if (!std::isfinite(max)) return kNoToken;  // Every id masked or NaN, or a +inf.
    const auto n = static_cast<int64_t>(logits.size());
    if (params_.top_p == 1.0f && params_.min_p == 0.0f) {
      // Nothing truncates: the draw reads the row itself, through its
      // block sums (one running sum an id would wait on every add).
      block_sums_.resize(static_cast<size_t>(WeightBlocks(n)));
      total_ = WeightBlockSums(logits.data(), n, block_sums_.data());
      return static_cast<int32_t>(DrawFromWeights(logits.data(), n, block_sums_.data(), Uniform() * total_));
    }
    if (params_.top_p == 1.0f) {
      MinPOfRow(logits);  // Sums what it keeps.
      return Draw();
    }
    total_ = SumOfWeights(logits.data(), n);  // Top-p's threshold is a share of it.
    if (logits.size() > kSortedTopPCandidates) {
      TopPOfRow(logits);
      if (params_.min_p > 0.0f) MinP();
      return Draw();
    }
    AllCandidates(logits);
  }
  if (params_.top_p < 1.0f) TopP();
  if (params_.min_p > 0.0f) MinP();
  return Draw();
}

void Sampler::AllCandidates(std::span<const float> logits) {
  // clear + push_back: resize would zero what the loop then writes.
  candidates_.clear();
  candidates_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_.push_back({static_cast<int32_t>(i), NotNaN(logits[i])});
}

void Sampler::TopK(std::span<const float> logits, size_t k) {
  if (k > logits.size() / 16) {
    // Many survivors: an O(V) selection over all the candidates.
    AllCandidates(logits);
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(k), candidates_.end(),
                     Before);
    candidates_.resize(k);
    return;
  }
  // Few: one pass keeping the best k seen in a heap whose front is the
  // worst of them (Before orders the heap). Ids rise through the scan, so a
  // logit displaces the front only when strictly greater (a tie goes to the
  // lower id, already kept); past the first few thousand ids that test
  // almost always fails, so the pass is a SIMD search for the next logit
  // above the worst kept (NextAbove: never a NaN).
  candidates_.resize(k);
  for (size_t i = 0; i < k; ++i) candidates_[i] = {static_cast<int32_t>(i), NotNaN(logits[i])};
  std::make_heap(candidates_.begin(), candidates_.end(), Before);
  float worst = candidates_.front().p;
  const auto n = static_cast<int64_t>(logits.size());
  for (int64_t i = NextAbove(logits.data(), static_cast<int64_t>(k), n, worst); i < n;
       i = NextAbove(logits.data(), i + 1, n, worst)) {
    std::pop_heap(candidates_.begin(), candidates_.end(), Before);
    candidates_.back() = {static_cast<int32_t>(i), logits[static_cast<size_t>(i)]};
    std::push_heap(candidates_.begin(), candidates_.end(), Before);
    worst = candidates_.front().p;
  }
}

bool Sampler::Softmax() {
  // Top-k's few candidates (every id goes through ExpOfLogitsInPlace).
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const TokenProb& c : candidates_) max_logit = std::max(max_logit, c.p);
  if (!std::isfinite(max_logit)) return false;  // All masked (NaN is, here), or a +inf.
  const float temperature = params_.temperature;
  double total = 0.0;
  for (TokenProb& c : candidates_) {
    c.p = std::exp((c.p - max_logit) / temperature);
    total += c.p;
  }
  total_ = total;
  return true;
}

void Sampler::TopP() {
  const double threshold = static_cast<double>(params_.top_p) * total_;
  // The smallest head of the candidates in Before's order whose mass
  // reaches the threshold. Few candidates (after top-k): sort them. Many:
  // one pass sums the mass in buckets of p's leading bits (a larger p never
  // has a smaller bucket), the buckets from the top find the one where the
  // head ends, and only that bucket's candidates are sorted. The head is
  // then every candidate above that bucket (in any order: Draw needs none)
  // and a sorted prefix of it; sorting the whole head (most of a flat
  // vocabulary) took 2 ms for 32 k ids, 16 ms for 152 k.
  // Candidates [0, first) are kept whole; [first, last) is sorted and cut.
  size_t first = 0, last = candidates_.size();
  double head = 0.0;  // The mass of [0, first).
  if (candidates_.size() > kSortedTopPCandidates) {
    const uint32_t boundary = TopPBoundary(
        TopPBucketMass(candidates_.size(), [&](size_t i) { return candidates_[i].p; }), threshold, head);
    if (boundary == kTopPBuckets) {
      // Rounding left the whole mass short of it: keep every candidate.
      first = last;
    } else {
      auto is_above = [&](const TokenProb& c) { return TopPBucket(c.p) > boundary; };
      auto is_boundary = [&](const TokenProb& c) { return TopPBucket(c.p) == boundary; };
      const auto mid = std::partition(candidates_.begin(), candidates_.end(), is_above);
      const auto end = std::partition(mid, candidates_.end(), is_boundary);
      first = static_cast<size_t>(mid - candidates_.begin());
      last = static_cast<size_t>(end - candidates_.begin());
    }
  }
  std::sort(candidates_.begin() + static_cast<std::ptrdiff_t>(first),
            candidates_.begin() + static_cast<std::ptrdiff_t>(last), Before);
  double cumulative = head;
  size_t keep = last;  // If rounding leaves the sum short, keep them all.
  for (size_t i = first; i < last; ++i) {
    cumulative += candidates_[i].p;
    if (cumulative >= threshold) {
      keep = i + 1;
      break;
    }
  }
  candidates_.resize(keep);
  total_ = 0.0;
  for (const TokenProb& c : candidates_) total_ += c.p;
}

void Sampler::TopPOfRow(std::span<const float> p) {
  const double threshold = static_cast<double>(params_.top_p) * total_;
  // TopP's buckets, summed straight from the row.
  const size_t n = p.size();
  double head = 0.0;  // The mass of the buckets above the boundary.
  const uint32_t boundary = TopPBoundary(TopPBucketMass(n, [&](size_t i) { return p[i]; }), threshold, head);
  if (boundary == kTopPBuckets) {
    // Rounding left the whole mass short of it: keep every candidate.
    AllCandidates(p);
    return;
  }
  // The ids above the boundary bucket, then those in it. A bucket is a
  // range of the weights' bits (TopPBucket); the last takes every larger
  // one.
  const uint32_t lo = boundary << kTopPBucketShift;
  const uint32_t hi =
      boundary + 1 == kTopPBuckets ? std::numeric_limits<uint32_t>::max() : (boundary + 1) << kTopPBucketShift;
  const size_t above = SplitRow(p, lo, hi);
  // The boundary bucket sorted and cut where the head reaches the
  // threshold.
  TokenProb* c = candidates_.data();
  std::sort(c + above, c + candidates_.size(), Before);
  double cumulative = head;
  size_t keep = candidates_.size() - above;  // If rounding leaves the sum short, keep them all.
  for (size_t j = above; j < candidates_.size(); ++j) {
    cumulative += c[j].p;
    if (cumulative >= threshold) {
      keep = j + 1 - above;
      break;
    }
  }
  candidates_.resize(above + keep);
  total_ = 0.0;
  for (const TokenProb& t : candidates_) total_ += t.p;
}

void Sampler::MinPOfRow(std::span<const float> p) {
  // MinP's cut against the largest weight, which is 1: the ids it keeps,
  // in id order (p >= min_p is their bits' order, both being >= +0), with
  // no range between.
  const uint32_t cut = std::bit_cast<uint32_t>(params_.min_p);
  SplitRow(p, cut, cut);
  double total = 0.0;
  for (const TokenProb& t : candidates_) total += t.p;
  total_ = total;
}

size_t Sampler::SplitRow(std::span<const float> p, uint32_t lo, uint32_t hi) {
  // One SIMD pass over the row (model/logit_math.h) writes the two lists
  // of ids; only the kept ids are then read back with their weights.
  const auto n = static_cast<int64_t>(p.size());
  const auto room = static_cast<size_t>(SplitIdsRoom(n));
  split_ids_.resize(2 * room);
  const int32_t* above_ids = split_ids_.data();
  const int32_t* at_ids = above_ids + room;
  int64_t n_at = 0;
  const auto above =
      static_cast<size_t>(SplitIdsByBits(p.data(), n, lo, hi, split_ids_.data(), split_ids_.data() + room, &n_at));
  candidates_.resize(above + static_cast<size_t>(n_at));
  for (size_t j = 0; j < candidates_.size(); ++j) {
    const int32_t id = j < above ? above_ids[j] : at_ids[j - above];
    candidates_[j] = {id, p[static_cast<size_t>(id)]};
  }
  return above;
}

void Sampler::MinP() {
  float p_max = 0.0f;
  for (const TokenProb& c : candidates_) p_max = std::max(p_max, c.p);
  const float threshold = params_.min_p * p_max;
  std::erase_if(candidates_,
                [threshold](const TokenProb& c) { return c.p < threshold; });
  double total = 0.0;
  for (const TokenProb& c : candidates_) total += c.p;
  total_ = total;
}

int32_t Sampler::Draw() {
  SWIFTLET_CHECK(!candidates_.empty());
  return candidates_[DrawIndex(candidates_.size(), [&](size_t i) { return candidates_[i].p; })].id;
}

double Sampler::Uniform() {
  // 53 random bits -> [0, 1) exactly as a double holds them; independent of
  // the standard library's distribution implementations.
  return static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0);
}

template <typename P>
size_t Sampler::DrawIndex(size_t n, const P& p) {
  const double target = Uniform() * total_;
  double cumulative = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cumulative += p(i);
    if (cumulative > target) return i;
  }
  // Rounding left target at or past the sum: take the last item that has
  // any probability at all.
  for (size_t i = n; i-- > 0;) {
    if (p(i) > 0.0f) return i;
  }
  return n - 1;
}

}  // namespace swiftlet
