// A read-only memory map of a whole file. Owns the mapping; the bytes stay
// valid until the MappedFile is destroyed. Immutable, so safe to share
// across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace swiftlet {

class MappedFile {
 public:
  // Maps `path` read-only. Errors name the path and the failing call.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(
      const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Tells the kernel this process no longer needs the whole pages inside
  // [p, p + n) (bytes copied elsewhere, e.g. repacked weights), so they stop
  // counting in its resident memory. Reading them again still works: the
  // pages fault back in from the file. Ranges outside the mapping are
  // ignored.
  void DropPages(const uint8_t* p, size_t n) const;
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace swiftlet
