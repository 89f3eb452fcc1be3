#include "core/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/str_cat.h"

namespace swiftlet {

absl::StatusOr<HugePageBuffer> HugePageBuffer::Allocate(size_t bytes) {
  if (bytes == 0) return HugePageBuffer();
  if (bytes > (SIZE_MAX >> 2)) {
    return absl::ResourceExhaustedError(StrCat("cannot allocate ", bytes, " bytes: too large"));
  }
  const size_t size = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // mmap aligns to 4 KiB only: map one huge page more, then unmap the
  // unaligned head and the rest of the tail, so every 2 MiB of the buffer
  // can be one page.
  const size_t mapped = size + kHugePageBytes;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return absl::ResourceExhaustedError(
        StrCat("cannot allocate ", size >> 20, " MiB: mmap: ", std::strerror(err)));
  }
  const auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > base) ::munmap(p, aligned - base);
  const uintptr_t end = aligned + size, mapped_end = base + mapped;
  if (mapped_end > end) ::munmap(reinterpret_cast<void*>(end), mapped_end - end);
  // Advice only: a kernel without transparent huge pages refuses it, and
  // the memory is still good.
  (void)::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return HugePageBuffer(reinterpret_cast<uint8_t*>(aligned), size);
}

HugePageBuffer::~HugePageBuffer() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace swiftlet
