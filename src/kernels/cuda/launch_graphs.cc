#include "kernels/cuda/launch_graphs.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace swiftlet::cuda_graphs {
namespace {

// One 64-bit value into the running hash: a multiply and a fold per value
// (a step hashes ~600 launches, and a hash only has to tell shapes apart:
// a match is confirmed by SameShapes).
uint64_t Mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

}  // namespace

void LaunchList::Begin(const LaunchShape& shape, const char* name) {
  launches_.push_back({shape, name, static_cast<uint32_t>(args_.size()), 0});
  uint64_t h = Mix(shape_hash_ == 0 ? 0xcbf29ce484222325ull : shape_hash_,
                   reinterpret_cast<uintptr_t>(shape.kernel));
  h = Mix(h, shape.grid.x | uint64_t{shape.grid.y} << 32);
  h = Mix(h, shape.grid.z | uint64_t{shape.block.x} << 32);
  h = Mix(h, shape.block.y | uint64_t{shape.block.z} << 32);
  shape_hash_ = Mix(h, shape.shared_bytes);
}

void LaunchList::Grow(size_t end, size_t align) {
  SWIFTLET_CHECK(!launches_.empty() && align > 0 && align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  if (end > bytes_.size()) bytes_.resize(std::max(2 * bytes_.size(), end + 4096));
}

bool LaunchList::SameShapes(const LaunchList& other) const {
  if (launches_.size() != other.launches_.size()) return false;
  for (size_t i = 0; i < launches_.size(); ++i) {
    if (!(launches_[i].shape == other.launches_[i].shape)) return false;
  }
  return true;
}

template <typename F>
bool LaunchList::ForEachArgPair(const LaunchList& other, size_t i, F&& f) const {
  const Launch& a = launches_[i];
  const Launch& b = other.launches_[i];
  SWIFTLET_CHECK(a.shape.kernel == b.shape.kernel && a.n_args == b.n_args);
  for (uint32_t k = 0; k < a.n_args; ++k) {
    const Arg& x = args_[a.first_arg + k];
    const Arg& y = other.args_[b.first_arg + k];
    SWIFTLET_CHECK(x.size == y.size);  // One kernel, one parameter list.
    if (!f(x.offset, other.bytes_.data() + y.offset, x.size)) return false;
  }
  return true;
}

bool LaunchList::SameArgs(const LaunchList& other, size_t i) const {
  return ForEachArgPair(other, i, [&](uint32_t offset, const std::byte* theirs, uint32_t size) {
    return std::memcmp(bytes_.data() + offset, theirs, size) == 0;
  });
}

void LaunchList::CopyArgs(const LaunchList& other, size_t i) {
  ForEachArgPair(other, i, [&](uint32_t offset, const std::byte* theirs, uint32_t size) {
    std::memcpy(bytes_.data() + offset, theirs, size);
    return true;
  });
}

bool LaunchList::SameArgs(const LaunchList& other) const {
  return args_.size() == other.args_.size() && used_ == other.used_ &&
         (used_ == 0 || std::memcmp(bytes_.data(), other.bytes_.data(), used_) == 0);
}

void** LaunchList::ArgPointers(size_t i) {
  if (pointers_base_ == nullptr || pointers_base_ != bytes_.data()) {
    pointers_.resize(args_.size());
    for (size_t k = 0; k < args_.size(); ++k) pointers_[k] = bytes_.data() + args_[k].offset;
    pointers_base_ = bytes_.data();
  }
  return pointers_.data() + launches_[i].first_arg;
}

void LaunchList::Clear() {
  launches_.clear();
  args_.clear();
  used_ = 0;
  pointers_base_ = nullptr;
  shape_hash_ = 0;
}

}  // namespace swiftlet::cuda_graphs
