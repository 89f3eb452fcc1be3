#include "model/model_header.h"

#include <memory>

#include "gguf/gguf_file.h"
#include "model/tensor_layout.h"

namespace swiftlet {

absl::StatusOr<ModelHeader> ReadModelHeader(const std::string& path) {
  SWIFTLET_ASSIGN_OR_RETURN(const std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  ModelHeader h;
  SWIFTLET_ASSIGN_OR_RETURN(h.config, ReadModelConfig(*file));
  SWIFTLET_RETURN_IF_ERROR(ValidateTensors(h.config, *file));
  h.tensors.reserve(file->tensors().size());
  for (const GgufTensor& t : file->tensors()) {
    h.tensors.push_back({t.name, t.type, t.n_elements, t.n_bytes});
  }
  h.file_bytes = file->file_size();
  return h;
}

}  // namespace swiftlet
