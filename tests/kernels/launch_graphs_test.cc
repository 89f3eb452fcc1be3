// LaunchGraphs (kernels/cuda/launch_graphs.h), on the CPU: "kernels" are
// host functions, a "graph" is the launches it was built from, with the
// node updates the policy asks for. Whatever the policy decides, running a
// list through it must leave memory exactly as running the list's launches
// in order does: a graph that kept a stale argument, or replayed for a list
// of other shapes, would not.
#include "kernels/cuda/launch_graphs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

namespace swiftlet::cuda_graphs {
namespace {

using HostKernel = void (*)(void**);

void AddTo(void** args) {
  float* p;
  float v;
  std::memcpy(&p, args[0], sizeof p);
  std::memcpy(&v, args[1], sizeof v);
  *p += v;
}
void ScaleBy(void** args) {
  float* p;
  int32_t k;
  std::memcpy(&p, args[0], sizeof p);
  std::memcpy(&k, args[1], sizeof k);
  *p *= static_cast<float>(k);
}
void CopyTo(void** args) {
  const float* src;
  float* dst;
  std::memcpy(&src, args[0], sizeof src);
  std::memcpy(&dst, args[1], sizeof dst);
  *dst = *src;
}
const HostKernel kKernels[] = {AddTo, ScaleBy, CopyTo};

template <typename T>
void Arg(LaunchList& list, T value) {
  list.AddArg(&value, sizeof value, alignof(T));
}

// One launch of kernel k (0..2) on grid `grid` with two arguments.
void Record(LaunchList& list, int k, uint32_t grid, float* a, float* b, float v, int32_t n, uint32_t block = 32,
            uint32_t shared_bytes = 0) {
  list.Begin({reinterpret_cast<const void*>(kKernels[k]), {grid, 1, 1}, {block, 1, 1}, shared_bytes}, "test");
  switch (k) {
    case 0:
      Arg(list, a);
      Arg(list, v);
      break;
    case 1:
      Arg(list, a);
      Arg(list, n);
      break;
    default:
      Arg(list, static_cast<const float*>(a));
      Arg(list, b);
  }
}

// Runs the launches in order; each one's shape goes to `trace` (the host
// "kernels" cannot see their grid, block or shared memory).
void RunInOrder(LaunchList& list, std::vector<LaunchShape>* trace = nullptr) {
  for (size_t i = 0; i < list.size(); ++i) {
    reinterpret_cast<HostKernel>(const_cast<void*>(list.shape(i).kernel))(list.ArgPointers(i));
    if (trace != nullptr) trace->push_back(list.shape(i));
  }
}

struct HostExecutor {
  struct Graph {
    LaunchList nodes;
  };
  void RunEager(LaunchList& list) { RunInOrder(list, &trace); }
  Graph Build(LaunchList& list) { return Graph{list}; }
  void Update(Graph& graph, LaunchList& list, size_t i) {
    graph.nodes.CopyArgs(list, i);
    ++updates;
  }
  void Launch(Graph& graph) { RunInOrder(graph.nodes, &trace); }

  std::vector<LaunchShape> trace;
  uint64_t updates = 0;
};

// A step of `length` launches of pattern p (the kernels and shapes depend
// on p only), with arguments from `rng` over `memory`. Patterns 3, 4 and 5
// are as long as 0 and differ from it only in their kernels, blocks and
// shared memory respectively.
void MakeStep(LaunchList& list, int pattern, int length, std::vector<float>& memory, std::mt19937& rng) {
  list.Clear();
  std::uniform_int_distribution<int> slot(0, static_cast<int>(memory.size()) - 1);
  std::uniform_int_distribution<int> small(1, 3);
  const int base = pattern >= 4 ? 0 : pattern;
  for (int i = 0; i < length; ++i) {
    const int k = (i + base + (pattern == 3 ? 1 : 0)) % 3;
    const uint32_t grid = static_cast<uint32_t>(1 + (i + base) % 4);
    Record(list, k, grid, &memory[slot(rng)], &memory[slot(rng)], 0.25f * small(rng), small(rng) == 1 ? -1 : 1,
           pattern == 4 ? 64 : 32, pattern == 5 ? 128 : 0);
  }
}

TEST(LaunchListTest, ArgumentsKeepTheirBytesAndAlignment) {
  LaunchList list;
  float x = 0;
  Record(list, 0, 3, &x, nullptr, 1.5f, 0);
  list.Begin({nullptr, {1, 2, 3}, {4, 5, 6}, 128}, "second");
  Arg(list, int8_t{7});
  Arg(list, double{2.5});
  Arg(list, int16_t{-3});
  ASSERT_EQ(list.size(), 2u);
  void** second = list.ArgPointers(1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second[1]) % alignof(double), 0u);
  EXPECT_EQ(*static_cast<int8_t*>(second[0]), 7);
  EXPECT_EQ(*static_cast<double*>(second[1]), 2.5);
  EXPECT_EQ(*static_cast<int16_t*>(second[2]), -3);
  float* p;
  std::memcpy(&p, list.ArgPointers(0)[0], sizeof p);
  EXPECT_EQ(p, &x);
  EXPECT_EQ(list.shape(1).shared_bytes, 128u);
  // A copy's pointers point into its own bytes.
  LaunchList copy = list;
  EXPECT_NE(copy.ArgPointers(1)[1], list.ArgPointers(1)[1]);
  EXPECT_EQ(*static_cast<double*>(copy.ArgPointers(1)[1]), 2.5);
}

TEST(LaunchListTest, ShapesAndArgumentsCompareApart) {
  std::vector<float> m(4);
  LaunchList a, b;
  Record(a, 0, 2, &m[0], nullptr, 1.0f, 0);
  Record(b, 0, 2, &m[0], nullptr, 1.0f, 0);
  EXPECT_TRUE(a.SameShapes(b));
  EXPECT_EQ(a.shape_hash(), b.shape_hash());
  EXPECT_TRUE(a.SameArgs(b, 0));
  EXPECT_TRUE(a.SameArgs(b));
  b.Clear();
  Record(b, 0, 2, &m[1], nullptr, 1.0f, 0);  // Another pointer: same shape.
  EXPECT_TRUE(a.SameShapes(b));
  EXPECT_FALSE(a.SameArgs(b, 0));
  EXPECT_FALSE(a.SameArgs(b));
  a.CopyArgs(b, 0);
  EXPECT_TRUE(a.SameArgs(b, 0));
  EXPECT_TRUE(a.SameArgs(b));
  // Another grid, block or shared memory size: another shape.
  for (const auto& [grid, block, shared] : {std::tuple{3u, 32u, 0u}, {2u, 64u, 0u}, {2u, 32u, 16u}}) {
    b.Clear();
    Record(b, 0, grid, &m[0], nullptr, 1.0f, 0, block, shared);
    EXPECT_FALSE(a.SameShapes(b)) << grid << " " << block << " " << shared;
    EXPECT_NE(a.shape_hash(), b.shape_hash());
  }
}

TEST(LaunchListTest, WholeListsCompareByTheirArgumentsNotTheirPadding) {
  // An int8 then a double: 7 bytes of padding between them, which a list
  // reused after Clear once held other bytes in.
  auto record = [](LaunchList& list, int8_t small, double wide) {
    list.Begin({nullptr, {1, 1, 1}, {32, 1, 1}, 0}, "padded");
    Arg(list, small);
    Arg(list, wide);
  };
  LaunchList fresh, reused;
  record(fresh, 1, 2.0);
  reused.Begin({nullptr, {1, 1, 1}, {32, 1, 1}, 0}, "filler");
  for (int i = 0; i < 4; ++i) Arg(reused, int64_t{-1});  // All bits set where the padding goes.
  reused.Clear();
  record(reused, 1, 2.0);
  EXPECT_TRUE(fresh.SameArgs(reused));
  EXPECT_TRUE(reused.SameArgs(fresh));
  // Any argument's byte differs: not the same, whole or launch by launch.
  for (const auto& [small, wide] : {std::pair<int8_t, double>{2, 2.0}, {1, 2.5}}) {
    LaunchList other;
    record(other, small, wide);
    EXPECT_FALSE(fresh.SameArgs(other)) << int{small} << " " << wide;
    EXPECT_FALSE(fresh.SameArgs(other, 0));
  }
  // More launches or arguments: not the same either.
  LaunchList longer;
  record(longer, 1, 2.0);
  record(longer, 1, 2.0);
  EXPECT_FALSE(fresh.SameArgs(longer));
  EXPECT_TRUE(LaunchList().SameArgs(LaunchList()));
}

// 18 launches over `memory`, every argument fixed but launch 6's value
// (an AddTo).
void MakeFixedStep(LaunchList& list, std::vector<float>& memory, float value6) {
  list.Clear();
  for (int i = 0; i < 18; ++i) {
    float* a = &memory[static_cast<size_t>(i) % memory.size()];
    float* b = &memory[static_cast<size_t>(i + 1) % memory.size()];
    Record(list, i % 3, 1, a, b, i == 6 ? value6 : 0.5f, 2);
  }
}

TEST(LaunchGraphsTest, BuildsOnTheSecondSightingAndUpdatesWhatChanged) {
  HostExecutor executor;
  LaunchGraphs<HostExecutor> graphs(executor, {true, 4, 8});
  std::vector<float> memory(5, 1.0f), reference(5, 1.0f);
  LaunchList list, list_reference;
  auto step = [&](float value6) {
    MakeFixedStep(list, memory, value6);
    MakeFixedStep(list_reference, reference, value6);
    graphs.Run(list);
    RunInOrder(list_reference);
    return std::memcmp(memory.data(), reference.data(), memory.size() * sizeof(float)) == 0;
  };
  for (int run = 0; run < 4; ++run) ASSERT_TRUE(step(0.5f)) << run;
  EXPECT_EQ(graphs.stats().eager, 1u);
  EXPECT_EQ(graphs.stats().built, 1u);
  EXPECT_EQ(graphs.stats().replayed, 2u);
  EXPECT_EQ(graphs.stats().updated_nodes, 0u);
  // One argument changed: exactly that node is updated, and used.
  ASSERT_TRUE(step(-3.0f));
  EXPECT_EQ(graphs.stats().replayed, 3u);
  EXPECT_EQ(graphs.stats().updated_nodes, 1u);
  ASSERT_TRUE(step(-3.0f));
  EXPECT_EQ(graphs.stats().updated_nodes, 1u);
  ASSERT_TRUE(step(0.5f));
  EXPECT_EQ(graphs.stats().updated_nodes, 2u);
  EXPECT_EQ(graphs.graphs(), 1u);
}

TEST(LaunchGraphsTest, ShortListsAndDisabledGraphsRunLaunchByLaunch) {
  HostExecutor executor;
  std::vector<float> memory(5, 1.0f);
  LaunchList list;
  MakeFixedStep(list, memory, 0.5f);
  LaunchGraphs<HostExecutor> too_long(executor, {true, 4, 19});
  LaunchGraphs<HostExecutor> disabled(executor, {false, 4, 1});
  for (int run = 0; run < 3; ++run) {
    too_long.Run(list);
    disabled.Run(list);
  }
  EXPECT_EQ(too_long.stats().eager, 3u);
  EXPECT_EQ(disabled.stats().eager, 3u);
  EXPECT_EQ(too_long.graphs() + disabled.graphs(), 0u);
}

// Memory after running steps through LaunchGraphs equals memory after
// running each step's launches in order, for random steps of a few shapes
// whose arguments change often, with room for fewer graphs than shapes.
TEST(LaunchGraphsTest, AnyPolicyRunsWhatTheListSays) {
  for (const GraphOptions options : {GraphOptions{true, 2, 8}, GraphOptions{true, 16, 8},
                                     GraphOptions{true, 1, 1}, GraphOptions{false, 16, 8}}) {
    HostExecutor executor;
    LaunchGraphs<HostExecutor> graphs(executor, options);
    std::vector<float> memory(6), reference(6);
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = reference[i] = 0.5f + static_cast<float>(i);
    std::mt19937 rng(7), rng_reference(7);
    std::uniform_int_distribution<int> pattern(0, 5);
    std::mt19937 pick(3);
    LaunchList list, list_reference;
    std::vector<LaunchShape> trace_reference;
    for (int step = 0; step < 300; ++step) {
      const int p = pattern(pick);
      // Pattern 2 is shorter than min_launches (8).
      const int length = p == 2 ? 4 : p == 1 ? 13 : 12;
      // The same random arguments, over each memory.
      MakeStep(list, p, length, memory, rng);
      MakeStep(list_reference, p, length, reference, rng_reference);
      graphs.Run(list);
      RunInOrder(list_reference, &trace_reference);
      ASSERT_EQ(std::memcmp(memory.data(), reference.data(), memory.size() * sizeof(float)), 0)
          << "step " << step;
      ASSERT_EQ(executor.trace, trace_reference) << "step " << step;
    }
    const GraphStats& s = graphs.stats();
    EXPECT_EQ(s.eager + s.built + s.replayed, 300u);
    EXPECT_EQ(s.updated_nodes, executor.updates);
    if (options.enabled) {
      EXPECT_GT(s.replayed, options.capacity >= 3 ? 100u : 0u);
      EXPECT_GT(s.updated_nodes, 0u);  // The arguments changed: nodes were updated, and results held.
      EXPECT_LE(graphs.graphs(), options.capacity);
    } else {
      EXPECT_EQ(s.eager, 300u);
    }
  }
}

}  // namespace
}  // namespace swiftlet::cuda_graphs
