// The embedded files' bytes, one function per file (defined by CMake's
// swiftlet_embed_text in the build tree). Private to src/web: users go
// through web/assets.h.
#pragma once

#include <string_view>

namespace swiftlet::web::embedded {

std::string_view DashboardHtml();
std::string_view PlaygroundHtml();
std::string_view LiveHtml();
std::string_view StyleCss();
std::string_view CommonJs();
std::string_view ChartsJs();
std::string_view DashboardJs();
std::string_view PlaygroundJs();
std::string_view LiveJs();
std::string_view LanguagesJson();
std::string_view CommentsJson();

}  // namespace swiftlet::web::embedded
