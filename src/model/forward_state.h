// The inside of a ForwardContext: the backend and the per-step buffers in
// its memory. Private to model/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/str_cat.h"
#include "kernels/backend.h"
#include "model/forward_context.h"

namespace swiftlet {

// An array in a backend's memory that grows to the largest step seen and is
// reused afterwards (contents are not kept across a growth). It grows by
// half again at least: a decode's block tables gain an entry every block of
// positions, and each move of a GPU buffer waits for the device and changes
// the pointers its replayed CUDA graphs hold.
template <typename T>
class DeviceArray {
 public:
  absl::Status Reserve(Backend& backend, int64_t count) {
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    size_t grown = bytes;
    if (buffer_ != nullptr) {
      const size_t had = buffer_->bytes();
      if (had >= bytes) return absl::OkStatus();
      grown = std::max(bytes, had + had / 2);
    }
    buffer_.reset();  // Free the old one first: device memory may be tight.
    buffer_ = backend.Allocate(grown);
    // Tight memory takes what the step needs and no more.
    if (buffer_ == nullptr && grown > bytes) buffer_ = backend.Allocate(bytes);
    if (buffer_ == nullptr) {
      return absl::ResourceExhaustedError(
          StrCat("the compute device is out of memory for a step buffer of ", bytes, " bytes"));
    }
    return absl::OkStatus();
  }
  T* data() { return reinterpret_cast<T*>(buffer_->data()); }
  size_t capacity() const { return buffer_ == nullptr ? 0 : buffer_->bytes() / sizeof(T); }

 private:
  std::unique_ptr<DeviceBuffer> buffer_;
};

struct ForwardContext::State {
  int threads = 1;
  ComputeDevice device = ComputeDevice::Cpu();
  std::unique_ptr<Backend> backend;
  // Activations, in the backend's memory.
  DeviceArray<float> x, h, q, k, v, attn, gate, up, tmp, out_rows, hidden, logits;
  // A step's indices, built on the host and uploaded once: token ids,
  // positions, the block tables of the batch's sequences (KvBatch), and the
  // rows asked for (logit_rows: the output rows, then the argmax rows).
  DeviceArray<int32_t> tokens, positions, tables, table_start, logit_rows, hidden_rows;
  std::vector<int32_t> host_tables, host_table_start, host_logit_rows;
  // The argmax rows' token ids.
  DeviceArray<int32_t> argmax;
};

}  // namespace swiftlet
