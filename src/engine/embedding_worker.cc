#include "engine/embedding_worker.h"

#include <cmath>
#include <utility>

#include "core/str_cat.h"
#include "kv/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace swiftlet {
namespace {

constexpr int64_t kMaxEmbeddingTokens = 8192;

}  // namespace

const char* PoolingName(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kFirst: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

struct EmbeddingWorker::Parts {
  KvCache cache;
  ForwardContext ctx;
  ForwardOutput out;
};

absl::StatusOr<Pooling> PoolingFor(const ModelConfig& config) {
  const std::string key = StrCat(ArchitectureName(config.arch), ".pooling_type");
  const int64_t type = config.pooling_type;
  if (type == ModelConfig::kPoolingAbsent) return Pooling::kMean;
  if (type == ModelConfig::kPoolingMalformed) {
    return absl::InvalidArgumentError(StrCat(key, " is not a non-negative integer"));
  }
  switch (type) {
    case 0:
    case 1: return Pooling::kMean;
    case 2: return Pooling::kFirst;
    case 3: return Pooling::kLast;
    default:
      return absl::InvalidArgumentError(StrCat(key, " = ", type, ": this pooling type is not supported"));
  }
}

std::vector<float> PoolAndNormalize(const float* rows, int64_t n_rows, int64_t width, Pooling pooling) {
  std::vector<double> acc(static_cast<size_t>(width), 0.0);
  auto add = [&](int64_t r) {
    for (int64_t i = 0; i < width; ++i) acc[i] += rows[r * width + i];
  };
  switch (pooling) {
    case Pooling::kMean:
      for (int64_t r = 0; r < n_rows; ++r) add(r);
      break;
    case Pooling::kFirst: add(0); break;
    case Pooling::kLast: add(n_rows - 1); break;
  }
  // Mean and sum point the same way: normalising makes the 1/n moot.
  double norm = 0;
  for (double v : acc) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<float> out(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) out[i] = norm > 0 ? static_cast<float>(acc[i] / norm) : 0.0f;
  return out;
}

absl::StatusOr<std::unique_ptr<EmbeddingWorker>> EmbeddingWorker::Create(
    const Model& model, EmbeddingWorkerOptions options) {
  const ModelConfig& c = model.config();
  int64_t max_tokens = options.max_tokens > 0 ? options.max_tokens : c.n_ctx_train;
  max_tokens = std::min(max_tokens, kMaxEmbeddingTokens);
  if (options.chunk_tokens < 1) return absl::InvalidArgumentError("embedding chunk must be >= 1");
  SWIFTLET_ASSIGN_OR_RETURN(
      KvCache cache,
      KvCache::Create({c.n_layer, c.kv_dim(), 1, max_tokens, TensorType::kF16}, uint64_t{8} << 30));
  auto parts = std::unique_ptr<Parts>(
      new Parts{std::move(cache), ForwardContext(std::max(1, options.threads)), {}});
  return std::unique_ptr<EmbeddingWorker>(
      new EmbeddingWorker(model, std::move(options), std::move(parts), max_tokens));
}

EmbeddingWorker::EmbeddingWorker(const Model& model, EmbeddingWorkerOptions options,
                                 std::unique_ptr<Parts> parts, int64_t max_tokens)
    : model_(model),
      options_(std::move(options)),
      max_tokens_(max_tokens),
      parts_(std::move(parts)) {
  thread_ = std::thread([this] { Loop(); });
}

EmbeddingWorker::~EmbeddingWorker() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (Job& job : left) job.done(absl::UnavailableError("the server is shutting down"));
}

bool EmbeddingWorker::Submit(std::vector<std::vector<int32_t>> inputs, Callback done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || queue_.size() >= options_.max_queue) return false;
    queue_.push_back({std::move(inputs), std::move(done)});
  }
  wake_.notify_one();
  return true;
}

void EmbeddingWorker::Loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job.done(Run(job));
  }
}

absl::StatusOr<EmbeddingResult> EmbeddingWorker::Run(const Job& job) {
  EmbeddingResult result;
  const int64_t width = model_.config().n_embd;
  for (const std::vector<int32_t>& input : job.inputs) {
    const int64_t n = static_cast<int64_t>(input.size());
    if (n < 1 || n > max_tokens_) {
      return absl::InvalidArgumentError(StrCat("input: ", n, " tokens; 1 to ", max_tokens_, " allowed"));
    }
    // Summed hidden rows (mean) or the one row pooling wants.
    std::vector<float> pooled_rows;
    int64_t pooled_count = 0;
    for (int64_t start = 0; start < n; start += options_.chunk_tokens) {
      const int64_t end = std::min(n, start + options_.chunk_tokens);
      Batch batch;
      batch.want_hidden = true;
      for (int64_t t = start; t < end; ++t) {
        const bool wanted = options_.pooling == Pooling::kMean ||
                            (options_.pooling == Pooling::kFirst && t == 0) ||
                            (options_.pooling == Pooling::kLast && t == n - 1);
        batch.Add(input[t], static_cast<int32_t>(t), 0, wanted);
      }
      const ForwardOutput& out = parts_->out;
      SWIFTLET_RETURN_IF_ERROR(model_.Forward(batch, parts_->cache, parts_->ctx, parts_->out));
      pooled_rows.insert(pooled_rows.end(), out.values.begin(),
                         out.values.begin() + static_cast<ptrdiff_t>(batch.output_rows.size() * width));
      pooled_count += static_cast<int64_t>(batch.output_rows.size());
    }
    const Pooling over = options_.pooling == Pooling::kMean ? Pooling::kMean : Pooling::kFirst;
    result.embeddings.push_back(PoolAndNormalize(pooled_rows.data(), pooled_count, width, over));
    result.prompt_tokens += n;
  }
  return result;
}

}  // namespace swiftlet
