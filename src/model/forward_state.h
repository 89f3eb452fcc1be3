// The inside of a ForwardContext: the backend and the per-step scratch
// buffers. Private to model/.
#pragma once

#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "model/forward_context.h"

namespace swiftlet {

struct ForwardContext::State {
  int threads = 1;
  std::unique_ptr<Backend> backend;
  std::vector<float> x, h, q, k, v, attn, gate, up, tmp, out_rows;
  std::vector<KvRows> kv_rows;
};

}  // namespace swiftlet
