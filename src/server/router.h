// Maps (method, path) to a handler. A path that exists under another
// method is 405 with the methods it takes (for the Allow header); a path
// that does not exist is 404. A route added as a prefix ("/v1/models/")
// takes every path below it.
//
// Built once before the server starts; Find is then read-only and
// thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "http/response_writer.h"
#include "server/caller.h"

namespace swiftlet::server {

using RouteHandler = std::function<void(const http::HttpRequest& request, std::shared_ptr<http::ResponseWriter> writer,
                                        const Caller& caller)>;

class Router {
 public:
  // `path`: exact, or with `prefix` every path starting with it.
  void Add(std::string method, std::string path, RouteHandler handler, bool prefix = false);

  struct Match {
    const RouteHandler* handler = nullptr;  // Null: no route for this method.
    std::string route;                      // The route's path (a metrics label).
    std::string allow;                      // With handler null: "GET, POST" or empty (404).
  };
  Match Find(std::string_view method, std::string_view path) const;

 private:
  struct Route {
    std::string method;
    std::string path;
    bool prefix = false;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace swiftlet::server
