// Anonymous memory for large arrays that are streamed again and again
// (repacked weights, the bandwidth benchmark's buffer), asked of the kernel
// on 2 MiB pages.
//
// A decode step reads every weight once; on 4 KiB pages that is a TLB miss
// every 4 KiB, each a page walk (two-dimensional under a hypervisor), and
// the matmul then streams 10-20% fewer bytes per second than on 2 MiB
// pages (docs/PERFORMANCE.md). The buffer is 2 MiB aligned and
// madvise(MADV_HUGEPAGE)d, which is enough where transparent huge pages are
// "always" or "madvise"; where they are "never", or the kernel has no huge
// page free, it is ordinary memory and only slower.
//
// Owns the mapping. Movable, not copyable; the bytes start zeroed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace swiftlet {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // `bytes` rounded up to whole 2 MiB pages; an error (not an abort) when
  // the address space or memory is not there.
  static absl::StatusOr<HugePageBuffer> Allocate(size_t bytes);

  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // Whole 2 MiB pages.

 private:
  HugePageBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace swiftlet
