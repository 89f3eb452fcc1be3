// The models one server serves, hot and cold within a memory budget.
//
// Each model is named (the `model` clients send) and is cold (on disk),
// loading, hot (weights mapped and repacked, an engine running with its KV
// cache) or unloading. A request names a model and takes a lease on it:
//
//  - hot: the lease is handed over at once;
//  - cold or loading: the model is loaded (on the registry's own thread)
//    and the request waits for it, when the load is expected to end within
//    what the request may wait (its TTFT target: TTFT counts from the
//    request's first byte, so the wait is in it); else it is refused at
//    once, 503 with a Retry-After of the expected load time, and the load
//    goes on so that its retry finds the model hot;
//  - to make room in the budget, the least recently used hot models that
//    are not pinned and hold no lease are unloaded first. A model with a
//    request in flight is never unloaded; when no room can be made the
//    request waits for a lease to end, within what it may wait, and is
//    then refused 503 ("the memory budget is held by models in use").
//
// A hot model unused for its keep-alive (and not pinned) is unloaded.
// Expected load times are the model's last measured load, or before its
// first one its file size at the fastest throughput measured by other
// loads (an underestimate for small files: a load has a fixed part).
//
// Thread-safe. Callbacks (waiters, unload results) run on the registry's
// thread or on the caller's when the answer is known at once; they must not
// call back into the registry while holding their own locks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/clock.h"
#include "core/status.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "engine/pooling.h"
#include "server/model_card.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace swiftlet::server {

struct ModelSpec {
  std::string name;  // The id clients send.
  std::string path;  // The GGUF file.
  bool pinned = false;  // Never unloaded (loaded at start).
  int64_t keep_alive_ns = 5 * 60 * kNsPerSecond;  // Idle this long: unloaded. 0: never.
};

// A loaded model and what serves it, made by the registry's loader.
// Destroyed engine first: it refers to the weights and the tokenizer.
struct HostedModel {
  std::shared_ptr<const void> weights;  // The model (model/model.h, opaque here).
  std::unique_ptr<Tokenizer> tokenizer;
  absl::StatusOr<ChatTemplate> chat = absl::UnavailableError("no chat template");
  absl::StatusOr<Pooling> pooling = absl::UnavailableError("no pooling");
  ModelCard card;
  uint64_t memory_bytes = 0;  // Weights (file and repacked copies) + KV cache.
  std::unique_ptr<Engine> engine;  // Started.

  ~HostedModel() {
    if (engine != nullptr) engine->Stop();
    engine.reset();
  }
};

enum class ModelState { kCold, kLoading, kHot, kUnloading };
std::string_view ModelStateName(ModelState s);

// One model as /v1/models shows it.
struct ModelStatus {
  std::string name;
  ModelState state = ModelState::kCold;
  bool pinned = false;
  uint64_t memory_bytes = 0;    // Measured when it was last hot, else estimated.
  bool memory_measured = false;
  int64_t last_used_unix_s = 0;  // 0: never.
  int64_t in_flight = 0;
  int64_t last_load_ms = -1;     // -1: never loaded.
};

class ModelRegistry;

// A request's hold on a hot model: while any lease exists the model is not
// unloaded. Released (and the model's last use stamped) by the destructor.
class ModelLease {
 public:
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  ~ModelLease();

  const std::string& name() const { return name_; }
  HostedModel& model() const { return *model_; }
  Engine& engine() const { return *model_->engine; }

 private:
  friend class ModelRegistry;
  ModelLease(ModelRegistry* registry, std::string name, HostedModel* model, bool use)
      : registry_(registry), name_(std::move(name)), model_(model), use_(use) {}
  ModelRegistry* registry_;
  std::string name_;
  HostedModel* model_;
  bool use_;  // A request's (stamps the last use); else an observer's (/metrics).
};
using LeasePtr = std::shared_ptr<ModelLease>;

struct ModelRegistryOptions {
  uint64_t memory_budget_bytes = 0;  // 0: no budget (every model may be hot).
  // KV cache bytes each model's engine reserves: part of the estimate of a
  // model never loaded yet.
  uint64_t kv_bytes_per_model = 0;
  // Load throughput assumed before any load was measured (bytes of file/s).
  double assumed_load_bytes_per_s = 1e9;
  const Clock* clock = nullptr;  // null: SystemClock()
  // How often idle models are looked for.
  int64_t idle_check_ns = kNsPerSecond;
};

// How a refusal to wait for a model is answered: the status (503, naming
// the model) and after how long to retry.
struct ModelWaitRefusal {
  absl::Status status;
  int64_t retry_after_ms = 0;
};

class ModelRegistry {
 public:
  using Loader = std::function<absl::StatusOr<std::unique_ptr<HostedModel>>(const ModelSpec&)>;
  // A lease, or why there is none: NotFound (no such model, 404),
  // Unavailable (503: the wait would be too long, the budget is held, the
  // load failed, the server is stopping) with retry_after_ms.
  struct Answer {
    LeasePtr lease;
    absl::Status status;
    int64_t retry_after_ms = 0;
  };
  using Waiter = std::function<void(Answer)>;

  // `specs` in order; the first is the default model (what a request that
  // names none gets), pinned. Names must be unique and non-empty (checked by
  // Create).
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Create(std::vector<ModelSpec> specs, Loader loader,
                                                               ModelRegistryOptions options);
  ~ModelRegistry();

  // Loads the pinned models and the default one, in order, on the calling
  // thread, then starts the registry's thread. An error names the model.
  absl::Status Start();
  // Stops every model's engine (what runs is cancelled and answered),
  // answers every waiter and joins the thread; later Acquires get
  // Unavailable. The models are freed by the destructor, so whoever still
  // holds one (the server's threads) may read it until then.
  void Stop();

  // The default model's name.
  const std::string& default_name() const { return specs_.front().name; }
  // The name a request means: `requested`, or the default when empty.
  const std::string& Resolve(const std::string& requested) const;
  bool Has(const std::string& name) const;
  std::vector<std::string> Names() const;

  // Calls `done` with a lease on `name` (empty: the default) once it is
  // hot, at once when it is; `max_wait_ns` bounds how long the request
  // may wait for room and its load (a load expected to take longer is
  // refused at once, and still starts when room can be made at once). A
  // model larger than the budget less the pinned models is refused at
  // once: it can never be loaded.
  void Acquire(const std::string& name, int64_t max_wait_ns, Waiter done);
  // A lease when `name` is hot now, else null (no load started).
  LeasePtr TryAcquireHot(const std::string& name);
  // Admin: unloads `name`. FailedPrecondition when it is pinned, has
  // requests in flight, or is not hot; `done` runs when it is unloaded.
  void Unload(const std::string& name, std::function<void(absl::Status)> done);

  std::vector<ModelStatus> List() const;
  // The model of a pinned `name` (the default one is), hot from Start to
  // Stop; null for any other. Takes no lease.
  HostedModel* Pinned(const std::string& name);
  // A lease on every hot model (for /metrics, cache clearing): they stay
  // hot while the caller holds the leases, which are not uses (the
  // keep-alive and LRU order do not see them).
  std::vector<LeasePtr> HotLeases();
  uint64_t memory_budget_bytes() const { return options_.memory_budget_bytes; }
  // Bytes held by hot and loading models now.
  uint64_t memory_in_use_bytes() const;

  // Prometheus text: per-model state, memory, loads, failures, unloads by
  // reason and the load-time histogram.
  std::string FormatMetrics() const;

 private:
  friend class ModelLease;
  enum class UnloadReason { kIdle, kEvicted, kAdmin };
  struct Entry {
    ModelSpec spec;
    uint64_t file_bytes = 0;
    ModelState state = ModelState::kCold;
    std::unique_ptr<HostedModel> hosted;
    uint64_t measured_bytes = 0;  // 0: never loaded.
    int64_t in_flight = 0;   // Leases: requests and observers.
    int64_t observers = 0;   // Of those, observers' (not requests).
    int64_t last_used_ns = 0;
    int64_t last_used_unix_s = 0;
    int64_t last_load_ns = -1;
    int64_t load_started_ns = 0;
    // Requests waiting for this model: while it loads, or (cold) for room
    // in the budget until their deadline.
    std::vector<std::pair<Waiter, int64_t>> waiters;
    std::vector<std::function<void(absl::Status)>> unload_waiters;
    uint64_t loads = 0, load_failures = 0, unloads_idle = 0, unloads_evicted = 0, unloads_admin = 0;
    std::string last_failure;  // Why the last load failed (the loader's message).
    std::unique_ptr<Histogram> load_seconds;
  };
  struct Job {
    std::string name;
    bool load = true;  // Else an unload.
    UnloadReason reason = UnloadReason::kEvicted;
  };

  ModelRegistry(std::vector<ModelSpec> specs, Loader loader, ModelRegistryOptions options);
  int64_t NowNs() const;
  void Release(const std::string& name, bool use);
  void Run();
  void DoLoad(const std::string& name);
  void DoUnload(const std::string& name, UnloadReason reason);
  void RunPendingUnloads();
  void UnloadIdle();
  // What a model holds when hot: measured, else estimated (file, a
  // repacked copy as large, KV); at least (file + KV); and what loading it
  // needs the budget to have room for.
  uint64_t BytesOf(const Entry& e) const;
  uint64_t LeastBytesOf(const Entry& e) const;
  uint64_t NeedLocked(const Entry& e) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t ExpectedLoadNs(const Entry& e) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks least-recently-used idle hot models for unloading until `need`
  // more bytes fit; false (nothing marked) when they cannot.
  bool MakeRoom(uint64_t need, const std::string& for_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t InUseLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LeasePtr LeaseLocked(Entry& e, bool use = true) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bytes the default and pinned models hold (or are expected to).
  uint64_t PinnedBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLoadLocked(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cold models with requests waiting: loads where room can be made now
  // (in the order of the specs); the waiters that can no longer get their
  // model within their deadline are moved to `expired`.
  void PlaceWaitingLocked(std::vector<Waiter>* expired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The earliest deadline of a request waiting for room (INT64_MAX: none).
  int64_t NextRoomDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Expire(std::vector<Waiter>& expired);

  const std::vector<ModelSpec> specs_;
  const Loader loader_;
  const ModelRegistryOptions options_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  double load_ns_per_byte_ ABSL_GUARDED_BY(mu_);
  int64_t loads_measured_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet::server
