// Kernel launches recorded rather than issued, and run either one by one or
// as one CUDA graph: a decode step is ~600 small kernels, and launching
// each costs the CPU about as long as the GPU takes to read a 7B Q4_0
// model's weights once. A graph is launched with one call.
//
// The CUDA backend records every launch (kernel, grid, block, shared
// memory, and the bytes of each argument) into a LaunchList and runs the
// list when something must come after it (a copy, a download, freeing a
// buffer). LaunchGraphs decides how: a list whose shapes (kernels, grids,
// blocks, shared memory) match a graph already built replays that graph,
// after changing the arguments of exactly the launches whose bytes differ;
// a list seen once before gets a graph built; anything else runs one launch
// at a time. A graph therefore only ever runs what the list says: what
// changes from step to step (token ids, positions, block tables) lives in
// device memory the kernels read, and a pointer or size that changes is an
// argument that changes.
//
// No CUDA here: the policy is plain C++, checked on the CPU with an
// executor that runs host functions (launch_graphs_test.cc); the CUDA
// executor is in cuda_queue.cu.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace swiftlet::cuda_graphs {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// What a launch is apart from its arguments: a graph's node is built for it.
struct LaunchShape {
  const void* kernel = nullptr;
  Dim3 grid, block;
  uint32_t shared_bytes = 0;
  friend bool operator==(const LaunchShape&, const LaunchShape&) = default;
};

// A run of launches in order, with their arguments' bytes.
class LaunchList {
 public:
  // Starts a launch; its arguments follow (AddArg) in the kernel's
  // parameter order. `name` (a literal) is for error messages.
  void Begin(const LaunchShape& shape, const char* name);
  // An argument's bytes as the kernel's parameter holds them, with any
  // padding bytes cleared by the caller (so equal values compare equal).
  // Inline: a step records ~5,000 of them, and with `size` and `align`
  // known at the call the copy is a move or two.
  [[gnu::always_inline]] void AddArg(const void* bytes, size_t size, size_t align) {
    if (launches_.empty() || align == 0 || align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) [[unlikely]] Grow(0, align);
    const size_t offset = (used_ + align - 1) / align * align;
    if (offset + size > bytes_.size()) [[unlikely]] Grow(offset + size, align);
    for (size_t k = used_; k < offset; ++k) bytes_[k] = std::byte{0};  // Padding compares equal.
    std::memcpy(bytes_.data() + offset, bytes, size);
    used_ = offset + size;
    args_.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
    ++launches_.back().n_args;
    pointers_base_ = nullptr;
  }

  size_t size() const { return launches_.size(); }
  bool empty() const { return launches_.empty(); }
  const LaunchShape& shape(size_t i) const { return launches_[i].shape; }
  const char* name(size_t i) const { return launches_[i].name; }

  // A hash of the shapes in order (not of the arguments).
  uint64_t shape_hash() const { return shape_hash_; }
  bool SameShapes(const LaunchList& other) const;
  // Whether launch i's argument bytes equal launch i of `other`, whose
  // shapes are the same (SameShapes).
  bool SameArgs(const LaunchList& other, size_t i) const;
  // Whether every launch's arguments equal `other`'s (SameShapes): one
  // comparison of the two lists' bytes, whose layouts are the same (a
  // kernel's parameters are its parameters, and padding is cleared), for
  // a steady decode step, where none changed.
  bool SameArgs(const LaunchList& other) const;
  // Launch i's arguments from `other` (SameShapes).
  void CopyArgs(const LaunchList& other, size_t i);

  // Pointers to launch i's arguments, one per parameter, as
  // cudaLaunchKernel and a kernel node take them; valid until the list
  // next changes.
  void** ArgPointers(size_t i);

  void Clear();

 private:
  struct Launch {
    LaunchShape shape;
    const char* name;
    uint32_t first_arg = 0, n_args = 0;
  };
  struct Arg {
    uint32_t offset = 0, size = 0;
  };
  // f(offset of an argument of launch i here, its bytes in `other`, size)
  // for each argument while f says true (launch i of both the same kernel).
  // AddArg's checks (a launch begun, an alignment operator new gives) and
  // room for `end` bytes.
  void Grow(size_t end, size_t align);
  template <typename F>
  bool ForEachArgPair(const LaunchList& other, size_t i, F&& f) const;
  std::vector<Launch> launches_;
  std::vector<Arg> args_;
  // The arguments' bytes are bytes_[0, used_), padding zeroed; bytes_ keeps
  // its size through Clear, so recording a step neither allocates nor
  // zero-fills. operator new's alignment (16) or more.
  std::vector<std::byte> bytes_;
  size_t used_ = 0;
  // Built by ArgPointers for the bytes at pointers_base_; null after a
  // change, and a copied list's differs from its own bytes: either builds
  // them again.
  std::vector<void*> pointers_;
  const std::byte* pointers_base_ = nullptr;
  uint64_t shape_hash_ = 0;
};

struct GraphOptions {
  bool enabled = true;
  size_t capacity = 16;      // Graphs kept; the least recently run goes first.
  size_t min_launches = 16;  // Shorter lists run launch by launch.
};

struct GraphStats {
  uint64_t eager = 0;          // Lists run launch by launch.
  uint64_t built = 0;          // Graphs built (and run).
  uint64_t replayed = 0;       // Lists run by a graph built before.
  uint64_t updated_nodes = 0;  // Launches whose arguments a replay changed.
};

// How a LaunchList runs. Executor provides:
//   using Graph = ...;                          // move-only, frees itself
//   void RunEager(LaunchList&);                 // every launch, in order
//   Graph Build(LaunchList&);                   // a graph of the launches in order
//   void Update(Graph&, LaunchList&, size_t i); // node i takes launch i's arguments
//   void Launch(Graph&);
template <typename Executor>
class LaunchGraphs {
 public:
  using Graph = typename Executor::Graph;

  LaunchGraphs(Executor& executor, GraphOptions options) : executor_(executor), options_(options) {}

  // Runs `list` (which it may read and leave as it was).
  void Run(LaunchList& list) {
    if (list.empty()) return;
    if (!options_.enabled || list.size() < options_.min_launches) {
      RunEager(list);
      return;
    }
    const uint64_t hash = list.shape_hash();
    for (std::unique_ptr<Entry>& e : entries_) {
      if (e->hash != hash || !e->launches.SameShapes(list)) continue;
      // A steady decode step changes no argument: one comparison says so.
      for (size_t i = 0, n = e->launches.SameArgs(list) ? 0 : list.size(); i < n; ++i) {
        if (e->launches.SameArgs(list, i)) continue;
        executor_.Update(e->graph, list, i);
        e->launches.CopyArgs(list, i);
        ++stats_.updated_nodes;
      }
      e->last_run = ++clock_;
      executor_.Launch(e->graph);
      ++stats_.replayed;
      return;
    }
    // Shapes seen once before are worth a graph; a one-off (a prompt chunk
    // of an odd length) is not: building costs more than launching.
    const auto seen = std::find(seen_.begin(), seen_.end(), hash);
    if (seen == seen_.end()) {
      seen_.insert(seen_.begin(), hash);
      if (seen_.size() > 4 * options_.capacity) seen_.pop_back();
      RunEager(list);
      return;
    }
    seen_.erase(seen);
    if (entries_.size() >= std::max<size_t>(options_.capacity, 1)) {
      auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                     [](const auto& a, const auto& b) { return a->last_run < b->last_run; });
      entries_.erase(oldest);
    }
    auto entry = std::make_unique<Entry>(Entry{hash, list, executor_.Build(list), ++clock_});
    executor_.Launch(entry->graph);
    entries_.push_back(std::move(entry));
    ++stats_.built;
  }

  const GraphStats& stats() const { return stats_; }
  size_t graphs() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t hash;
    LaunchList launches;  // As the graph's nodes now are.
    Graph graph;
    uint64_t last_run;
  };

  void RunEager(LaunchList& list) {
    executor_.RunEager(list);
    ++stats_.eager;
  }

  Executor& executor_;
  GraphOptions options_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<uint64_t> seen_;  // Shape hashes of lists run eagerly, newest first.
  uint64_t clock_ = 0;
  GraphStats stats_;
};

}  // namespace swiftlet::cuda_graphs
