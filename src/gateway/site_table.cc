#include "gateway/site_table.h"

#include <algorithm>
#include <random>

#include "gateway/site_choice.h"

namespace swiftlet::gateway {
namespace {

uint64_t Random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

SiteTable::SiteTable(HealthPolicy policy, SiteClientOptions options, const Clock& clock)
    : policy_(policy), options_(std::move(options)), clock_(clock) {}

SiteTable::~SiteTable() { Shutdown(); }

void SiteTable::Replace(const std::vector<SiteSpec>& specs) {
  std::vector<std::shared_ptr<Site>> next;
  next.reserve(specs.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (const SiteSpec& spec : specs) {
    auto same = std::find_if(sites_.begin(), sites_.end(),
                             [&](const std::shared_ptr<Site>& s) { return s->spec() == spec; });
    next.push_back(same != sites_.end() ? *same : std::make_shared<Site>(spec, policy_, options_));
  }
  for (std::shared_ptr<Site>& old : sites_) {
    if (std::find(next.begin(), next.end(), old) == next.end()) retired_.push_back(std::move(old));
  }
  sites_ = std::move(next);
}

std::vector<std::shared_ptr<Site>> SiteTable::sites() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sites_;
}

std::shared_ptr<Site> SiteTable::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : sites_) {
    if (s->name() == name) return s;
  }
  return nullptr;
}

SiteTable::Choice SiteTable::Choose(const std::vector<const Site*>& exclude,
                                    std::optional<std::string_view> pinned) {
  const int64_t now = clock_.NowNs();
  std::vector<std::shared_ptr<Site>> all = sites();
  std::vector<ScoredSite> scored;
  std::vector<Site*> eligible;
  scored.reserve(all.size());
  double best = 0;
  for (const auto& site : all) {
    if (std::find(exclude.begin(), exclude.end(), site.get()) != exclude.end()) continue;
    double score = 0;
    if (!site->Eligible(now, &score)) continue;
    if (scored.empty() || score < best) best = score;
    scored.push_back({eligible.size(), score});
    eligible.push_back(site.get());
  }
  if (scored.empty()) return {};
  size_t pick = scored.size();
  bool by_affinity = false;
  if (pinned.has_value()) {
    for (size_t i = 0; i < eligible.size(); ++i) {
      if (eligible[i]->name() == *pinned && KeepsAffinity(scored[i].score_ms, best)) {
        pick = i;
        by_affinity = true;
      }
    }
  }
  if (pick == scored.size()) pick = ChooseSite(scored, Random());
  Choice choice;
  for (const auto& site : all) {
    if (site.get() == eligible[pick]) choice.site = site;
  }
  choice.score_ms = scored[pick].score_ms;
  choice.by_affinity = by_affinity;
  choice.site->BeginRequest(now);
  return choice;
}

std::optional<double> SiteTable::BestScore() const {
  const int64_t now = clock_.NowNs();
  std::optional<double> best;
  for (const auto& site : sites()) {
    double score = 0;
    if (site->Eligible(now, &score) && (!best || score < *best)) best = score;
  }
  return best;
}

std::optional<int64_t> SiteTable::SoonestBenchEnd() const {
  const int64_t now = clock_.NowNs();
  std::optional<int64_t> soonest;
  for (const auto& site : sites()) {
    const int64_t until = site->BenchedUntil(now);
    if (until > 0 && (!soonest || until < *soonest)) soonest = until;
  }
  return soonest;
}

void SiteTable::CollectRetired() {
  std::vector<std::shared_ptr<Site>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = retired_.begin(); it != retired_.end();) {
      // Only this table holds it: no request, poll or stream uses it now,
      // and none can start (it is not in sites_).
      if (it->use_count() == 1) {
        done.push_back(std::move(*it));
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }
  done.clear();  // Outside the lock: destroying a site joins its clients' threads.
}

void SiteTable::Shutdown() {
  std::vector<std::shared_ptr<Site>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all = sites_;
    all.insert(all.end(), retired_.begin(), retired_.end());
  }
  // Every client first: their cancelled callbacks may still reach other
  // sites (a failover attempt finds them stopped).
  for (const auto& site : all) site->StopClients();
  {
    std::lock_guard<std::mutex> lock(mu_);
    sites_.clear();
    retired_.clear();
  }
  all.clear();
}

}  // namespace swiftlet::gateway
