#include "kv/kv_store.h"

#include "kernels/backend.h"

namespace swiftlet {

KvRows KvStore::Rows(int64_t layer, int32_t seq) const {
  return {Layer(layer), BlockTable(seq).data()};
}

}  // namespace swiftlet
