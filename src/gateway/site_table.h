// The gateway's current sites, and the choice among them.
//
// Replace swaps in a new list (a reloaded sites file): a site whose name and
// URL are unchanged keeps its Site (state, connections, counters); the
// others start fresh; a removed site retires: it takes no new work, and its
// Site is destroyed by CollectRetired once nothing uses it any more.
//
// Threads: Choose, sites, Find and Replace are thread-safe. CollectRetired
// and Shutdown destroy Sites and so must run on a control thread (not an
// I/O thread of any client), see gateway/site.h.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/clock.h"
#include "gateway/site.h"
#include "gateway/site_config.h"
#include "gateway/site_health.h"

namespace swiftlet::gateway {

class SiteTable {
 public:
  SiteTable(HealthPolicy policy, SiteClientOptions options, const Clock& clock);
  // Shutdown() if not done.
  ~SiteTable();

  SiteTable(const SiteTable&) = delete;
  SiteTable& operator=(const SiteTable&) = delete;

  void Replace(const std::vector<SiteSpec>& specs);

  // The current sites, in configured order.
  std::vector<std::shared_ptr<Site>> sites() const;
  std::shared_ptr<Site> Find(std::string_view name) const;

  struct Choice {
    std::shared_ptr<Site> site;  // Null: no eligible site outside `exclude`.
    double score_ms = 0;
    bool by_affinity = false;
  };
  // Picks a site for one new request and begins it there
  // (Site::BeginRequest): the pinned site if it is eligible and within 2x
  // the best score, else the rule of gateway/site_choice.h among eligible
  // sites not in `exclude`.
  Choice Choose(const std::vector<const Site*>& exclude, std::optional<std::string_view> pinned);

  // The earliest time a site now benched only by a Retry-After takes work
  // again; nullopt if no site is merely benched.
  std::optional<int64_t> SoonestBenchEnd() const;

  // The best eligible score now (for affinity checks); nullopt if none.
  std::optional<double> BestScore() const;

  // Destroys retired sites that nothing else references.
  void CollectRetired();
  // Stops every site's clients (their in-flight work is cancelled, its
  // callbacks run), then drops the sites. Idempotent.
  void Shutdown();

  const Clock& clock() const { return clock_; }

 private:
  const HealthPolicy policy_;
  const SiteClientOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Site>> sites_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Site>> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace swiftlet::gateway
