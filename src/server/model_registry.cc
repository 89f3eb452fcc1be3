#include "server/model_registry.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <set>
#include <utility>

#include "core/str_cat.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {
namespace {

// Load times: a small model loads in tens of milliseconds, a 70B one in
// minutes.
std::vector<double> LoadBucketsSeconds() { return {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}; }

int64_t CeilMs(int64_t ns) { return std::max<int64_t>(1, (ns + kNsPerMs - 1) / kNsPerMs); }

}  // namespace

std::string_view ModelStateName(ModelState s) {
  switch (s) {
    case ModelState::kCold: return "cold";
    case ModelState::kLoading: return "loading";
    case ModelState::kHot: return "hot";
    case ModelState::kUnloading: return "unloading";
  }
  return "cold";
}

ModelLease::~ModelLease() { registry_->Release(name_, use_); }

absl::StatusOr<std::unique_ptr<ModelRegistry>> ModelRegistry::Create(std::vector<ModelSpec> specs, Loader loader,
                                                                     ModelRegistryOptions options) {
  if (specs.empty()) return absl::InvalidArgumentError("no model to serve");
  std::set<std::string> names;
  for (const ModelSpec& s : specs) {
    if (s.name.empty()) return absl::InvalidArgumentError(StrCat(s.path, ": a model needs a name"));
    if (s.name.size() > 256) return absl::InvalidArgumentError(StrCat("model name of ", s.name.size(), " bytes: at most 256"));
    if (!names.insert(s.name).second) {
      return absl::InvalidArgumentError(StrCat("two models are named '", s.name, "' (use --model-name)"));
    }
    if (s.keep_alive_ns < 0) return absl::InvalidArgumentError(StrCat(s.name, ": negative keep-alive"));
  }
  specs.front().pinned = true;  // The default model is always hot.
  if (options.idle_check_ns <= 0) options.idle_check_ns = kNsPerSecond;
  if (options.assumed_load_bytes_per_s <= 0) options.assumed_load_bytes_per_s = 1e9;
  return std::unique_ptr<ModelRegistry>(new ModelRegistry(std::move(specs), std::move(loader), options));
}

ModelRegistry::ModelRegistry(std::vector<ModelSpec> specs, Loader loader, ModelRegistryOptions options)
    : specs_(std::move(specs)),
      loader_(std::move(loader)),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : SystemClock()),
      load_ns_per_byte_(1e9 / options.assumed_load_bytes_per_s) {
  for (const ModelSpec& s : specs_) {
    Entry& e = entries_[s.name];
    e.spec = s;
    std::error_code ec;
    const auto size = std::filesystem::file_size(s.path, ec);
    e.file_bytes = ec ? 0 : static_cast<uint64_t>(size);
    e.load_seconds = std::make_unique<Histogram>(LoadBucketsSeconds());
  }
}

ModelRegistry::~ModelRegistry() {
  Stop();
  // Freed only now: until the server is destroyed its threads (the
  // dashboard's sampler, live streams) may still read the stopped engines.
  for (auto& [name, e] : entries_) e.hosted.reset();
}

int64_t ModelRegistry::NowNs() const { return clock_.NowNs(); }

absl::Status ModelRegistry::Start() {
  // The default model and the pinned ones are hot before the server
  // answers; the budget must hold them all.
  uint64_t fixed = 0;
  for (const ModelSpec& s : specs_) {
    if (!s.pinned) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Entry& e = entries_.at(s.name);
      e.state = ModelState::kLoading;
      e.load_started_ns = NowNs();
    }
    DoLoad(s.name);
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(s.name);
    if (e.state != ModelState::kHot) {
      return absl::UnavailableError(StrCat("model '", s.name, "' (", s.path, ") did not load: ", e.last_failure));
    }
    fixed += e.measured_bytes;
    if (options_.memory_budget_bytes > 0 && fixed > options_.memory_budget_bytes) {
      return absl::InvalidArgumentError(StrCat("--memory-budget of ", options_.memory_budget_bytes,
                                               " bytes does not hold the default and pinned models (",
                                               fixed, " bytes with '", s.name, "')"));
    }
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ModelRegistry::Stop() {
  std::vector<Engine*> engines;
  std::vector<Waiter> waiters;
  std::vector<std::function<void(absl::Status)>> unloads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, e] : entries_) {
      if (e.hosted != nullptr && e.hosted->engine != nullptr) engines.push_back(e.hosted->engine.get());
      if (e.state != ModelState::kHot) e.state = ModelState::kCold;
      for (auto& w : e.waiters) waiters.push_back(std::move(w.first));
      e.waiters.clear();
      for (auto& u : e.unload_waiters) unloads.push_back(std::move(u));
      e.unload_waiters.clear();
    }
    jobs_.clear();
  }
  for (auto& u : unloads) u(absl::OkStatus());  // Unloaded with the rest below.
  for (Waiter& w : waiters) w(Answer{nullptr, absl::UnavailableError("the server is shutting down"), 0});
  // What runs is cancelled and answered; the models stay allocated until
  // the registry is destroyed. Stop is idempotent.
  for (Engine* engine : engines) engine->Stop();
}

const std::string& ModelRegistry::Resolve(const std::string& requested) const {
  return requested.empty() ? default_name() : requested;
}

bool ModelRegistry::Has(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(name) > 0;
}

std::vector<std::string> ModelRegistry::Names() const {
  std::vector<std::string> names;
  for (const ModelSpec& s : specs_) names.push_back(s.name);
  return names;
}

uint64_t ModelRegistry::BytesOf(const Entry& e) const {
  // Before a first load: the mapped file, a repacked copy of about its
  // size (an overestimate: the embedding table is not repacked), the KV
  // cache.
  return e.measured_bytes > 0 ? e.measured_bytes : 2 * e.file_bytes + options_.kv_bytes_per_model;
}

uint64_t ModelRegistry::LeastBytesOf(const Entry& e) const {
  return e.measured_bytes > 0 ? e.measured_bytes : e.file_bytes + options_.kv_bytes_per_model;
}

uint64_t ModelRegistry::NeedLocked(const Entry& e) const {
  if (e.measured_bytes > 0 || options_.memory_budget_bytes == 0) return BytesOf(e);
  // The estimate, but no more than the room the budget can ever give (the
  // estimate is high by the part that is not repacked).
  const uint64_t fixed = e.spec.pinned ? 0 : PinnedBytesLocked();
  const uint64_t room = options_.memory_budget_bytes > fixed ? options_.memory_budget_bytes - fixed : 0;
  return std::max(LeastBytesOf(e), std::min(BytesOf(e), room));
}

uint64_t ModelRegistry::PinnedBytesLocked() const {
  uint64_t bytes = 0;
  for (const auto& [name, e] : entries_) {
    if (e.spec.pinned) bytes += BytesOf(e);
  }
  return bytes;
}

int64_t ModelRegistry::ExpectedLoadNs(const Entry& e) const {
  if (e.last_load_ns > 0) return e.last_load_ns;
  // An hour at most: the estimate of a model never loaded is rough.
  return static_cast<int64_t>(std::min(3600.0 * kNsPerSecond, load_ns_per_byte_ * static_cast<double>(e.file_bytes)));
}

uint64_t ModelRegistry::InUseLocked() const {
  uint64_t bytes = 0;
  for (const auto& [name, e] : entries_) {
    if (e.state != ModelState::kCold) bytes += NeedLocked(e);
  }
  return bytes;
}

uint64_t ModelRegistry::memory_in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return InUseLocked();
}

LeasePtr ModelRegistry::LeaseLocked(Entry& e, bool use) {
  ++e.in_flight;
  if (!use) ++e.observers;
  return LeasePtr(new ModelLease(this, e.spec.name, e.hosted.get(), use));
}

void ModelRegistry::Release(const std::string& name, bool use) {
  std::vector<Waiter> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(name);
    --e.in_flight;
    if (!use) --e.observers;
    if (use) {
      e.last_used_ns = NowNs();
      e.last_used_unix_s = static_cast<int64_t>(std::time(nullptr));
    }
    // Its memory may be what a waiting model needs.
    if (e.in_flight == 0 && !stopping_) PlaceWaitingLocked(&expired);
  }
  Expire(expired);
}

void ModelRegistry::Expire(std::vector<Waiter>& expired) {
  for (Waiter& w : expired) {
    w(Answer{nullptr,
             absl::UnavailableError("the model is not loaded and the memory budget is held by models with requests "
                                    "in flight, longer than this request may wait"),
             1000});
  }
}

void ModelRegistry::StartLoadLocked(Entry& e) {
  e.state = ModelState::kLoading;
  e.load_started_ns = NowNs();
  jobs_.push_back(Job{e.spec.name, /*load=*/true, UnloadReason::kEvicted});
  wake_.notify_all();
}

void ModelRegistry::PlaceWaitingLocked(std::vector<Waiter>* expired) {
  const int64_t now = NowNs();
  for (const ModelSpec& s : specs_) {
    Entry& e = entries_.at(s.name);
    if (e.state != ModelState::kCold || e.waiters.empty()) continue;
    const int64_t ready = now + ExpectedLoadNs(e);
    std::erase_if(e.waiters, [&](auto& w) {
      if (w.second >= ready) return false;
      expired->push_back(std::move(w.first));
      return true;
    });
    if (!e.waiters.empty() && MakeRoom(NeedLocked(e), s.name)) StartLoadLocked(e);
  }
}

int64_t ModelRegistry::NextRoomDeadlineLocked() const {
  // A waiter gives up once its load could no longer end by its deadline.
  int64_t next = INT64_MAX;
  for (const auto& [name, e] : entries_) {
    if (e.state != ModelState::kCold) continue;
    for (const auto& w : e.waiters) next = std::min(next, w.second - ExpectedLoadNs(e));
  }
  return next;
}

bool ModelRegistry::MakeRoom(uint64_t need, const std::string& for_name) {
  if (options_.memory_budget_bytes == 0) return true;
  uint64_t used = InUseLocked();
  if (used + need <= options_.memory_budget_bytes) return true;
  // Candidates: hot, not pinned, no lease, nobody waiting; least recently
  // used first.
  std::vector<Entry*> idle;
  for (auto& [name, e] : entries_) {
    if (name == for_name || e.state != ModelState::kHot || e.spec.pinned || e.in_flight > 0 || !e.waiters.empty()) continue;
    idle.push_back(&e);
  }
  std::sort(idle.begin(), idle.end(), [](const Entry* a, const Entry* b) { return a->last_used_ns < b->last_used_ns; });
  std::vector<Entry*> chosen;
  for (Entry* e : idle) {
    if (used + need <= options_.memory_budget_bytes) break;
    chosen.push_back(e);
    used -= std::min(used, NeedLocked(*e));
  }
  if (used + need > options_.memory_budget_bytes) return false;
  for (Entry* e : chosen) {
    e->state = ModelState::kUnloading;
    jobs_.push_back(Job{e->spec.name, /*load=*/false, UnloadReason::kEvicted});
  }
  return true;
}

LeasePtr ModelRegistry::TryAcquireHot(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(Resolve(name));
  if (it == entries_.end() || it->second.state != ModelState::kHot) return nullptr;
  return LeaseLocked(it->second);
}

void ModelRegistry::Acquire(const std::string& requested, int64_t max_wait_ns, Waiter done) {
  const std::string& name = Resolve(requested);
  Answer answer;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::string served;
      for (const ModelSpec& s : specs_) served += StrCat(served.empty() ? "'" : ", '", s.name, "'");
      answer.status = absl::NotFoundError(StrCat("model '", name.substr(0, 256), "' does not exist; this server serves ", served));
    } else if (stopping_) {
      answer.status = absl::UnavailableError("the server is shutting down");
    } else {
      Entry& e = it->second;
      const int64_t now = NowNs();
      const uint64_t fixed = e.spec.pinned ? 0 : PinnedBytesLocked();
      if (e.state == ModelState::kHot) {
        answer.lease = LeaseLocked(e);
      } else if (options_.memory_budget_bytes > 0 && fixed + LeastBytesOf(e) > options_.memory_budget_bytes) {
        // Retrying cannot help: no Retry-After.
        answer.status = absl::UnavailableError(StrCat("model '", name, "' (", LeastBytesOf(e), e.measured_bytes > 0 ? "" : " or more",
                                                      " bytes) does not fit the memory budget (",
                                                      options_.memory_budget_bytes, " bytes, ", fixed,
                                                      " of them held by the default and pinned models)"));
      } else {
        const int64_t left = e.state == ModelState::kLoading
                                 ? std::max<int64_t>(0, e.load_started_ns + ExpectedLoadNs(e) - now)
                                 : ExpectedLoadNs(e);
        if (left > max_wait_ns) {
          // Refused, but the load starts when room can be made at once, so
          // the request's retry finds the model hot.
          if (e.state == ModelState::kCold && MakeRoom(NeedLocked(e), name)) StartLoadLocked(e);
          answer.status = absl::UnavailableError(StrCat("model '", name, "' is ", ModelStateName(e.state),
                                                        " (a load takes about ", CeilMs(left),
                                                        " ms), longer than this request's time to first token allows"));
          answer.retry_after_ms = CeilMs(left);
        } else {
          const int64_t deadline = max_wait_ns >= INT64_MAX - now ? INT64_MAX : now + max_wait_ns;
          e.waiters.emplace_back(std::move(done), deadline);
          // Cold: loads now if room can be made, else waits for room. An
          // unloading model is placed again once it is out.
          std::vector<Waiter> expired;
          if (e.state == ModelState::kCold) PlaceWaitingLocked(&expired);
          wake_.notify_all();
          if (expired.empty()) return;
          // Cannot happen (its deadline is after the load), but answer it.
          lock.unlock();
          Expire(expired);
          return;
        }
      }
    }
  }
  done(std::move(answer));
}

void ModelRegistry::Unload(const std::string& requested, std::function<void(absl::Status)> done) {
  const std::string& name = Resolve(requested);
  absl::Status refusal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      refusal = absl::NotFoundError(StrCat("model '", name.substr(0, 256), "' does not exist"));
    } else {
      Entry& e = it->second;
      if (e.spec.pinned) {
        refusal = absl::FailedPreconditionError(
            StrCat("model '", name, "' is ", name == default_name() ? "the default model" : "pinned", ": it stays loaded"));
      } else if (e.state != ModelState::kHot) {
        refusal = absl::FailedPreconditionError(StrCat("model '", name, "' is ", ModelStateName(e.state), ", not hot"));
      } else if (e.in_flight > 0 || !e.waiters.empty()) {
        refusal = absl::FailedPreconditionError(StrCat("model '", name, "' has ", e.in_flight, " requests in flight"));
      } else {
        e.state = ModelState::kUnloading;
        e.unload_waiters.push_back(std::move(done));
        jobs_.push_back(Job{name, /*load=*/false, UnloadReason::kAdmin});
        wake_.notify_all();
        return;
      }
    }
  }
  done(refusal);
}

void ModelRegistry::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  int64_t next_idle_check = NowNs() + options_.idle_check_ns;
  while (!stopping_) {
    if (jobs_.empty()) {
      const int64_t until = std::min(next_idle_check, NextRoomDeadlineLocked());
      wake_.wait_for(lock, std::chrono::nanoseconds(std::clamp<int64_t>(until - NowNs(), 1, options_.idle_check_ns)));
      if (stopping_) break;
    }
    {
      std::vector<Waiter> expired;
      PlaceWaitingLocked(&expired);
      if (!expired.empty()) {
        lock.unlock();
        Expire(expired);
        lock.lock();
      }
    }
    if (NowNs() >= next_idle_check) {
      lock.unlock();
      UnloadIdle();
      lock.lock();
      next_idle_check = NowNs() + options_.idle_check_ns;
    }
    if (jobs_.empty()) continue;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    if (job.load) {
      DoLoad(job.name);
    } else {
      DoUnload(job.name, job.reason);
    }
    lock.lock();
  }
}

void ModelRegistry::UnloadIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = NowNs();
  for (auto& [name, e] : entries_) {
    if (e.state != ModelState::kHot || e.spec.pinned || e.spec.keep_alive_ns == 0) continue;
    if (e.in_flight > 0 || !e.waiters.empty() || now - e.last_used_ns < e.spec.keep_alive_ns) continue;
    e.state = ModelState::kUnloading;
    jobs_.push_back(Job{name, /*load=*/false, UnloadReason::kIdle});
  }
}

void ModelRegistry::DoUnload(const std::string& name, UnloadReason reason) {
  std::unique_ptr<HostedModel> hosted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(name);
    if (e.state != ModelState::kUnloading) return;
    hosted = std::move(e.hosted);
  }
  hosted.reset();  // The engine stops and the memory goes back, outside the lock.
  std::vector<std::function<void(absl::Status)>> done;
  std::vector<Waiter> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(name);
    e.state = ModelState::kCold;
    (reason == UnloadReason::kIdle ? e.unloads_idle : reason == UnloadReason::kAdmin ? e.unloads_admin : e.unloads_evicted)++;
    done.swap(e.unload_waiters);
    if (!stopping_) PlaceWaitingLocked(&expired);
  }
  for (auto& d : done) d(absl::OkStatus());
  Expire(expired);
}

void ModelRegistry::RunPendingUnloads() {
  while (true) {
    Job unload;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return !j.load; });
      if (it == jobs_.end()) return;
      unload = *it;
      jobs_.erase(it);
    }
    DoUnload(unload.name, unload.reason);
  }
}

void ModelRegistry::DoLoad(const std::string& name) {
  // Models going out to make room go first, so their memory is back
  // before this one's is taken.
  RunPendingUnloads();
  ModelSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(name);
    // Hot: loaded by an earlier job. Cold or unloading: its waiters are
    // placed again when room comes (PlaceWaitingLocked). Stopping: no new
    // load (Stop answers the waiters).
    if (e.state != ModelState::kLoading) return;
    if (stopping_) {
      e.state = ModelState::kCold;
      return;
    }
    spec = e.spec;
  }
  const int64_t t0 = NowNs();
  absl::StatusOr<std::unique_ptr<HostedModel>> loaded = loader_(spec);
  const int64_t took = std::max<int64_t>(1, NowNs() - t0);
  std::vector<Waiter> waiters;
  std::vector<LeasePtr> leases;
  std::vector<Waiter> expired;
  absl::Status failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_.at(name);
    for (auto& w : e.waiters) waiters.push_back(std::move(w.first));
    e.waiters.clear();
    if (!loaded.ok()) {
      e.state = ModelState::kCold;
      ++e.load_failures;
      e.last_failure = std::string(loaded.status().message());
      failure = absl::UnavailableError(StrCat("model '", name, "' failed to load: ", e.last_failure));
    } else {
      e.hosted = *std::move(loaded);
      e.measured_bytes = std::max<uint64_t>(1, e.hosted->memory_bytes);
      e.state = ModelState::kHot;
      e.last_load_ns = took;
      e.last_used_ns = NowNs();
      e.last_used_unix_s = static_cast<int64_t>(std::time(nullptr));
      ++e.loads;
      e.load_seconds->Observe(static_cast<double>(took) / kNsPerSecond);
      // The fastest rate seen: a load's fixed part (engine start,
      // calibration) weighs most on small files, and would make a large
      // model's first estimate many times too long.
      if (e.file_bytes > 0) {
        const double rate = static_cast<double>(took) / static_cast<double>(e.file_bytes);
        load_ns_per_byte_ = loads_measured_ == 0 ? rate : std::min(load_ns_per_byte_, rate);
        ++loads_measured_;
      }
      for (size_t i = 0; i < waiters.size(); ++i) leases.push_back(LeaseLocked(e));
      // The measured size may be over the estimate: make room after the
      // fact (idle models only; a model in use is never unloaded).
      (void)MakeRoom(0, name);
    }
    // Failed, or measured smaller than estimated: room for waiting models.
    PlaceWaitingLocked(&expired);
  }
  Expire(expired);
  wake_.notify_all();
  for (size_t i = 0; i < waiters.size(); ++i) {
    if (failure.ok()) {
      waiters[i](Answer{std::move(leases[i]), absl::OkStatus(), 0});
    } else {
      waiters[i](Answer{nullptr, failure, 1000});
    }
  }
}

std::vector<ModelStatus> ModelRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelStatus> out;
  for (const ModelSpec& s : specs_) {
    const Entry& e = entries_.at(s.name);
    ModelStatus m;
    m.name = s.name;
    m.state = e.state;
    m.pinned = s.pinned;
    m.memory_bytes = BytesOf(e);
    m.memory_measured = e.measured_bytes > 0;
    m.last_used_unix_s = e.last_used_unix_s;
    m.in_flight = e.in_flight - e.observers;
    m.last_load_ms = e.last_load_ns < 0 ? -1 : e.last_load_ns / kNsPerMs;
    out.push_back(m);
  }
  return out;
}

HostedModel* ModelRegistry::Pinned(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.spec.pinned || it->second.state != ModelState::kHot) return nullptr;
  return it->second.hosted.get();
}

std::vector<LeasePtr> ModelRegistry::HotLeases() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LeasePtr> out;
  for (const ModelSpec& s : specs_) {
    Entry& e = entries_.at(s.name);
    if (e.state == ModelState::kHot) out.push_back(LeaseLocked(e, /*use=*/false));
  }
  return out;
}

std::string ModelRegistry::FormatMetrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  auto label = [](const std::string& name) { return StrCat("model=\"", EscapePrometheusLabel(name), "\""); };
  out += "# HELP swiftlet_model_state Whether a model is in each state now (1) or not (0).\n";
  out += "# TYPE swiftlet_model_state gauge\n";
  for (const ModelSpec& s : specs_) {
    const Entry& e = entries_.at(s.name);
    for (ModelState st : {ModelState::kCold, ModelState::kLoading, ModelState::kHot, ModelState::kUnloading}) {
      out += StrCat("swiftlet_model_state{", label(s.name), ",state=\"", ModelStateName(st), "\"} ",
                    e.state == st ? 1 : 0, "\n");
    }
  }
  out += "# HELP swiftlet_model_memory_bytes Memory a model holds when hot (weights, repacked copies, KV cache): measured, or estimated before its first load.\n";
  out += "# TYPE swiftlet_model_memory_bytes gauge\n";
  for (const ModelSpec& s : specs_) out += StrCat("swiftlet_model_memory_bytes{", label(s.name), "} ", BytesOf(entries_.at(s.name)), "\n");
  out += "# HELP swiftlet_models_memory_in_use_bytes Memory held by hot and loading models.\n";
  out += "# TYPE swiftlet_models_memory_in_use_bytes gauge\n";
  out += StrCat("swiftlet_models_memory_in_use_bytes ", InUseLocked(), "\n");
  out += "# HELP swiftlet_models_memory_budget_bytes The --memory-budget (0: none).\n";
  out += "# TYPE swiftlet_models_memory_budget_bytes gauge\n";
  out += StrCat("swiftlet_models_memory_budget_bytes ", options_.memory_budget_bytes, "\n");
  out += "# HELP swiftlet_model_loads_total Models loaded.\n";
  out += "# TYPE swiftlet_model_loads_total counter\n";
  for (const ModelSpec& s : specs_) out += StrCat("swiftlet_model_loads_total{", label(s.name), "} ", entries_.at(s.name).loads, "\n");
  out += "# HELP swiftlet_model_load_failures_total Model loads that failed.\n";
  out += "# TYPE swiftlet_model_load_failures_total counter\n";
  for (const ModelSpec& s : specs_) {
    out += StrCat("swiftlet_model_load_failures_total{", label(s.name), "} ", entries_.at(s.name).load_failures, "\n");
  }
  out += "# HELP swiftlet_model_unloads_total Models unloaded, by reason: idle (keep-alive over), evicted (room for another model), admin.\n";
  out += "# TYPE swiftlet_model_unloads_total counter\n";
  for (const ModelSpec& s : specs_) {
    const Entry& e = entries_.at(s.name);
    out += StrCat("swiftlet_model_unloads_total{", label(s.name), ",reason=\"idle\"} ", e.unloads_idle, "\n");
    out += StrCat("swiftlet_model_unloads_total{", label(s.name), ",reason=\"evicted\"} ", e.unloads_evicted, "\n");
    out += StrCat("swiftlet_model_unloads_total{", label(s.name), ",reason=\"admin\"} ", e.unloads_admin, "\n");
  }
  std::vector<std::pair<std::string, HistogramSnapshot>> load_seconds;
  for (const ModelSpec& s : specs_) load_seconds.emplace_back(s.name, entries_.at(s.name).load_seconds->Snapshot());
  out += FormatHistogramFamily("model_load_seconds", "model", load_seconds,
                               "Time to load a model (map, repack, engine start and calibration), in seconds.");
  return out;
}

}  // namespace swiftlet::server
