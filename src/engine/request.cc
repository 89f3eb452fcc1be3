#include "engine/request.h"

namespace swiftlet {

const char* LatencyClassName(LatencyClass c) {
  switch (c) {
    case LatencyClass::kInteractive: return "interactive";
    case LatencyClass::kBatch: return "batch";
    case LatencyClass::kEmbedding: return "embedding";
  }
  return "interactive";
}

int LatencyClassRank(LatencyClass c) {
  switch (c) {
    case LatencyClass::kInteractive: return 0;
    case LatencyClass::kEmbedding: return 1;
    case LatencyClass::kBatch: return 2;
  }
  return 0;
}

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kRefused: return "refused";
    case FinishReason::kError: return "error";
  }
  return "error";
}

const char* RefusalReasonName(RefusalReason r) {
  switch (r) {
    case RefusalReason::kNone: return "none";
    case RefusalReason::kInvalid: return "invalid";
    case RefusalReason::kQueueFull: return "queue_full";
    case RefusalReason::kQueuedTokens: return "queued_tokens";
    case RefusalReason::kKvMemory: return "kv_memory";
    case RefusalReason::kTtftTarget: return "ttft_target";
    case RefusalReason::kNotReady: return "not_ready";
  }
  return "none";
}

}  // namespace swiftlet
