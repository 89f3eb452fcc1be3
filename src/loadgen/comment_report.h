// Reports of the live-translation load (loadgen/comment_load.h): a text
// block per point, a table of the sweep, JSON and a self-contained HTML
// page.
#pragma once

#include <string>
#include <vector>

#include "loadgen/comment_load.h"

namespace swiftlet::loadgen {

struct CommentPoint {
  double comment_rate = 0;  // Per stream.
  CommentReport report;
  CommentRun run;
};

struct CommentSweepParameters {
  std::string url;
  std::string model;
  std::string transport;
  std::vector<std::string> languages;
  int64_t streams = 0;
  int64_t budget_ms = 0;
  int32_t output_tokens = 0;
  std::string started_utc;
  std::string client_machine;
};

std::string FormatCommentPoint(const CommentSweepParameters& p, const CommentPoint& point);
std::string FormatCommentTable(const CommentSweepParameters& p, const std::vector<CommentPoint>& points);
std::string CommentReportJson(const CommentSweepParameters& p, const std::vector<CommentPoint>& points);
std::string CommentReportHtml(const CommentSweepParameters& p, const std::vector<CommentPoint>& points);

}  // namespace swiftlet::loadgen
