// HostVector's memory comes from, and goes back to, the source it was given
// (a GPU backend's page-locked memory), and stays with it through moves,
// swaps and assignments; without a source it is std::allocator's.
#include "core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <utility>

namespace swiftlet {
namespace {

// Hands out malloc'd blocks and records each one live, with its size.
class RecordingSource final : public HostMemorySource {
 public:
  void* Allocate(size_t bytes) override {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    live_[p] = bytes;
    ++allocations_;
    return p;
  }
  void Free(void* p, size_t bytes) noexcept override {
    const auto it = live_.find(p);
    // A block it never gave, or freed with another size, is the bug here.
    if (it == live_.end() || it->second != bytes) {
      ++bad_frees_;
      return;
    }
    live_.erase(it);
    std::free(p);
  }
  bool Owns(const void* p) const { return live_.count(const_cast<void*>(p)) > 0; }
  size_t live() const { return live_.size(); }
  int allocations() const { return allocations_; }
  int bad_frees() const { return bad_frees_; }

 private:
  std::map<void*, size_t> live_;
  int allocations_ = 0;
  int bad_frees_ = 0;
};

TEST(HostMemoryTest, AVectorTakesAndReturnsItsMemoryThroughTheSource) {
  auto source = std::make_shared<RecordingSource>();
  {
    HostVector<float> v{HostAllocator<float>(source)};
    v.resize(1000);
    EXPECT_TRUE(source->Owns(v.data()));
    v[999] = 2.5f;
    v.resize(100000);  // grows: a new block, the old one returned
    EXPECT_TRUE(source->Owns(v.data()));
    EXPECT_EQ(v[999], 2.5f);
    EXPECT_EQ(source->live(), 1u);
    EXPECT_GE(source->allocations(), 2);
  }
  EXPECT_EQ(source->live(), 0u);
  EXPECT_EQ(source->bad_frees(), 0);
}

TEST(HostMemoryTest, MovesSwapsAndAssignmentsKeepEachBlockWithItsSource) {
  auto a = std::make_shared<RecordingSource>();
  auto b = std::make_shared<RecordingSource>();
  {
    HostVector<int32_t> x{HostAllocator<int32_t>(a)};
    HostVector<int32_t> y{HostAllocator<int32_t>(b)};
    x.assign(10, 1);
    y.assign(20, 2);
    std::swap(x, y);
    EXPECT_TRUE(b->Owns(x.data()));
    EXPECT_TRUE(a->Owns(y.data()));
    x = y;  // a copy: x now draws from y's source
    EXPECT_TRUE(a->Owns(x.data()));
    EXPECT_EQ(x, y);
    HostVector<int32_t> z = std::move(x);
    EXPECT_TRUE(a->Owns(z.data()));
    // The allocator moved from still equals the one moved to, and still
    // draws from the same source.
    EXPECT_TRUE(x.get_allocator() == z.get_allocator());
    x.assign(5, 3);
    EXPECT_TRUE(a->Owns(x.data()));
    EXPECT_EQ(b->live(), 0u);
  }
  EXPECT_EQ(a->live(), 0u);
  EXPECT_EQ(a->bad_frees() + b->bad_frees(), 0);
}

TEST(HostMemoryTest, UseHostMemorySwitchesSourcesOnlyWhenTheyDiffer) {
  auto source = std::make_shared<RecordingSource>();
  HostVector<float> v;  // std::allocator's memory
  v.assign(50, 1.0f);
  EXPECT_FALSE(source->Owns(v.data()));
  UseHostMemory(v, source);
  EXPECT_TRUE(v.empty());
  v.resize(50);
  const float* kept = v.data();
  EXPECT_TRUE(source->Owns(kept));
  UseHostMemory(v, source);  // already there: contents and block kept
  EXPECT_EQ(v.data(), kept);
  EXPECT_EQ(v.size(), 50u);
  UseHostMemory(v, nullptr);  // back to plain memory
  EXPECT_EQ(source->live(), 0u);
  v.resize(10);
  EXPECT_FALSE(source->Owns(v.data()));
}

TEST(HostMemoryTest, AVectorKeepsItsSourceAliveAfterEveryOtherOwnerIsGone) {
  // As ForwardOutput may outlive the backend whose memory it holds.
  auto source = std::make_shared<RecordingSource>();
  const std::weak_ptr<RecordingSource> watch = source;
  auto v = std::make_unique<HostVector<double>>(HostAllocator<double>(source));
  v->resize(64);
  source.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(watch.lock()->live(), 1u);
  v.reset();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace swiftlet
