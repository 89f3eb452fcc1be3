#include "web/assets.h"

#include <array>

#include "web/embedded.h"

namespace swiftlet::web {
namespace {

constexpr std::string_view kHtml = "text/html; charset=utf-8";
constexpr std::string_view kCss = "text/css; charset=utf-8";
constexpr std::string_view kJs = "text/javascript; charset=utf-8";
constexpr std::string_view kJson = "application/json; charset=utf-8";

// Built on first use: the embedded arrays are constant-initialized, so
// this runs after them whatever the static initialization order.
const std::array<Asset, 11>& Table() {
  static const std::array<Asset, 11> table = {{
      {"/", kHtml, embedded::DashboardHtml()},
      {"/playground", kHtml, embedded::PlaygroundHtml()},
      {"/live", kHtml, embedded::LiveHtml()},
      {"/ui/style.css", kCss, embedded::StyleCss()},
      {"/ui/common.js", kJs, embedded::CommonJs()},
      {"/ui/charts.js", kJs, embedded::ChartsJs()},
      {"/ui/dashboard.js", kJs, embedded::DashboardJs()},
      {"/ui/playground.js", kJs, embedded::PlaygroundJs()},
      {"/ui/live.js", kJs, embedded::LiveJs()},
      // The live demo's language picker and sample feed: the same files
      // the translation service and the load generator ship.
      {"/ui/languages.json", kJson, embedded::LanguagesJson()},
      {"/ui/comments.json", kJson, embedded::CommentsJson()},
  }};
  return table;
}

}  // namespace

const Asset* FindAsset(std::string_view path) {
  for (const Asset& a : Table()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

std::span<const Asset> AllAssets() { return Table(); }

std::string_view ContentSecurityPolicy() {
  // 'self' covers ws:/wss: to the same host in CSP level 3 (Chromium,
  // Firefox, Safari); img data: is the empty favicon that stops the
  // browser asking for /favicon.ico.
  return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
         "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
}

}  // namespace swiftlet::web
