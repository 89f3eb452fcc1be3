// Host memory from a source a backend chooses, for the buffers its results
// are copied into: page-locked for a GPU, whose copy engine writes such
// memory at the bus's rate (pageable memory goes through the driver's own
// staging buffer at a fraction of it), plain memory otherwise. A standard
// allocator over the source, so the buffers stay std::vectors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace swiftlet {

class HostMemorySource {
 public:
  virtual ~HostMemorySource() = default;
  // `bytes` (> 0) of host memory aligned as operator new's
  // (__STDCPP_DEFAULT_NEW_ALIGNMENT__); throws std::bad_alloc when there is
  // none.
  virtual void* Allocate(size_t bytes) = 0;
  // Memory from Allocate, `bytes` as asked.
  virtual void Free(void* p, size_t bytes) noexcept = 0;
};

// std::allocator's memory where the source is null. A vector holds its
// source alive, so it may outlive the backend that gave it.
template <typename T>
class HostAllocator {
 public:
  using value_type = T;
  // A vector moved or assigned takes its allocator along: the memory stays
  // with the source it came from.
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;

  // A source's memory is aligned as operator new's.
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  HostAllocator() = default;
  explicit HostAllocator(std::shared_ptr<HostMemorySource> source) : source_(std::move(source)) {}
  // Copies only, no moves: an allocator moved from must still equal the
  // one moved to (the standard's requirement; a vector moves its
  // allocator along and may free through the moved-from one).
  HostAllocator(const HostAllocator&) noexcept = default;
  HostAllocator& operator=(const HostAllocator&) noexcept = default;
  template <typename U>
  HostAllocator(const HostAllocator<U>& other) noexcept : source_(other.shared_source()) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (source_ == nullptr) return std::allocator<T>().allocate(n);
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(source_->Allocate(std::max<size_t>(n, 1) * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (source_ == nullptr) {
      std::allocator<T>().deallocate(p, n);
    } else {
      source_->Free(p, std::max<size_t>(n, 1) * sizeof(T));
    }
  }

  HostMemorySource* source() const { return source_.get(); }
  const std::shared_ptr<HostMemorySource>& shared_source() const { return source_; }

  template <typename U>
  bool operator==(const HostAllocator<U>& other) const {
    return source_.get() == other.source();
  }

 private:
  std::shared_ptr<HostMemorySource> source_;
};

template <typename T>
using HostVector = std::vector<T, HostAllocator<T>>;

// Makes v draw its memory from `source` (emptying it) unless it already
// does.
template <typename T>
void UseHostMemory(HostVector<T>& v, const std::shared_ptr<HostMemorySource>& source) {
  if (v.get_allocator().source() != source.get()) v = HostVector<T>(HostAllocator<T>(source));
}

}  // namespace swiftlet
