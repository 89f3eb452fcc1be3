#include "server/router.h"

#include <utility>

namespace swiftlet::server {

void Router::Add(std::string method, std::string path, RouteHandler handler, bool prefix) {
  routes_.push_back({std::move(method), std::move(path), prefix, std::move(handler)});
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  Match m;
  auto matches = [&](const Route& r) {
    return r.prefix ? path.size() > r.path.size() && path.substr(0, r.path.size()) == r.path
                    : path == r.path;
  };
  // Exact routes win over prefixes.
  for (bool prefix_pass : {false, true}) {
    for (const Route& r : routes_) {
      if (r.prefix != prefix_pass || !matches(r)) continue;
      if (r.method == method) {
        m.handler = &r.handler;
        m.route = r.prefix ? r.path + "{id}" : r.path;
        m.allow.clear();
        return m;
      }
      if (m.allow.find(r.method) == std::string::npos) {
        m.allow += m.allow.empty() ? r.method : ", " + r.method;
      }
      m.route = r.prefix ? r.path + "{id}" : r.path;
    }
    if (!m.allow.empty()) return m;
  }
  return m;
}

}  // namespace swiftlet::server
