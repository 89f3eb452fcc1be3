// The pages swiftlet serves at / (dashboard), /playground and /live (live
// translation demo), and the files they load under /ui/: compiled into the
// binary at build time (src/web/CMakeLists.txt), so a copied binary serves
// them with no files beside it and no network — no CDN, no web fonts.
//
// What the pages call on the server (/stats, /v1/chat/completions,
// /v1/translate/stream, ...) is the server's; this folder holds only bytes.
//
// Thread-safe: everything here is immutable.
#pragma once

#include <span>
#include <string_view>

namespace swiftlet::web {

struct Asset {
  std::string_view path;          // As requested: "/", "/ui/charts.js".
  std::string_view content_type;  // With charset for text.
  std::string_view body;
};

// The asset served at `path` (exact match; no query), or null.
const Asset* FindAsset(std::string_view path);

// Every asset, pages first.
std::span<const Asset> AllAssets();

// The Content-Security-Policy the pages are written for: scripts, styles
// and connections only from the page's own origin (WebSocket included),
// no inline script, no framing.
std::string_view ContentSecurityPolicy();

}  // namespace swiftlet::web
