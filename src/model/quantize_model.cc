#include "model/quantize_model.h"

#include <cmath>
#include <cstring>
#include <mutex>

#include "core/parallel_for.h"
#include "core/str_cat.h"
#include "gguf/gguf_writer.h"
#include "kernels/dequantize.h"
#include "kernels/quantize.h"

namespace swiftlet {

double TensorQuantStats::rms_error() const {
  return n_elements == 0 ? 0.0 : std::sqrt(sum_sq_error / static_cast<double>(n_elements));
}

double TensorQuantStats::relative_rms_error() const {
  return sum_sq_value == 0 ? 0.0 : std::sqrt(sum_sq_error / sum_sq_value);
}

namespace {

// Block count from metadata, or one more than the highest blk.N seen.
int LayerCount(const GgufFile& in) {
  if (auto arch = in.GetString("general.architecture"); arch.ok()) {
    if (auto n = in.GetInt(*arch + ".block_count"); n.ok() && *n > 0 && *n < (1 << 20)) {
      return static_cast<int>(*n);
    }
  }
  int n = 0;
  for (const GgufTensor& t : in.tensors()) n = std::max(n, LayerOfTensor(t.name) + 1);
  return n;
}

// Converts one tensor row by row and accumulates its error statistics.
void ConvertTensor(const GgufTensor& t, TensorType to, int threads, std::span<uint8_t> out,
                   TensorQuantStats& stats) {
  const int64_t row = t.ne[0];
  const int64_t rows = t.rows();
  const size_t in_row_bytes = t.n_bytes / static_cast<size_t>(rows);
  const size_t out_row_bytes = out.size() / static_cast<size_t>(rows);
  std::mutex mu;
  ParallelFor(rows, threads, [&](int64_t begin, int64_t end) {
    std::vector<float> source(static_cast<size_t>(row));
    std::vector<float> back(static_cast<size_t>(row));
    double err = 0, val = 0;
    for (int64_t r = begin; r < end; ++r) {
      uint8_t* dst = out.data() + static_cast<size_t>(r) * out_row_bytes;
      DequantizeRow(t.type, t.data + static_cast<size_t>(r) * in_row_bytes, source.data(), row);
      QuantizeRow(to, source.data(), dst, row);
      DequantizeRow(to, dst, back.data(), row);
      for (int64_t i = 0; i < row; ++i) {
        const double d = static_cast<double>(source[i]) - back[i];
        err += d * d;
        val += static_cast<double>(source[i]) * source[i];
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    stats.sum_sq_error += err;
    stats.sum_sq_value += val;
  });
}

}  // namespace

absl::StatusOr<QuantizeReport> QuantizeModel(const GgufFile& in, const std::string& out_path,
                                             const QuantTarget& target, int threads,
                                             const QuantizeProgressFn& progress) {
  GgufWriter w(static_cast<uint32_t>(in.alignment()));
  for (const GgufKv& kv : in.metadata()) {
    if (kv.key != "general.alignment") w.Set(kv.key, kv.value);
  }
  w.Set("general.file_type", GgufValue::Uint32(target.llama_file_type));
  w.Set("general.quantization_version", GgufValue::Uint32(2));

  const bool tied_head = in.FindTensor("output.weight") == nullptr;
  const int n_layer = LayerCount(in);
  QuantizeReport report;
  report.tensors.resize(in.tensors().size());
  uint64_t bytes_total = 0;
  for (const GgufTensor& t : in.tensors()) bytes_total += t.n_bytes;

  auto bytes_done = std::make_shared<uint64_t>(0);
  auto tensors_done = std::make_shared<size_t>(0);
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const GgufTensor& t = in.tensors()[i];
    std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    const TensorType to = ChooseTensorType(target, {t.name, shape, n_layer}, tied_head);
    if (to != t.type && !CanDequantize(t.type)) {
      return absl::InvalidArgumentError(StrCat(in.name(), ": tensor '", t.name, "' is ",
                                               NameOf(t.type), ", which swiftlet cannot convert to ",
                                               NameOf(to)));
    }
    TensorQuantStats& stats = report.tensors[i];
    stats = {t.name, t.type, to, t.n_elements};
    SWIFTLET_RETURN_IF_ERROR(w.AddTensor(
        t.name, to, shape,
        [&t, to, threads, &stats, &progress, bytes_done, tensors_done, bytes_total,
         n = in.tensors().size()](std::span<uint8_t> out) {
          if (to == t.type) {
            std::memcpy(out.data(), t.data, out.size());
          } else {
            ConvertTensor(t, to, threads, out, stats);
          }
          stats.bytes_out = out.size();
          *bytes_done += t.n_bytes;
          ++*tensors_done;
          if (progress) progress(*tensors_done, n, *bytes_done, bytes_total);
          return absl::OkStatus();
        }));
  }
  SWIFTLET_RETURN_IF_ERROR(w.WriteFile(out_path));

  report.bytes_in = bytes_total;
  report.total.name = "total";
  for (const TensorQuantStats& s : report.tensors) {
    report.bytes_out += s.bytes_out;
    report.total.n_elements += s.n_elements;
    report.total.bytes_out += s.bytes_out;
    report.total.sum_sq_error += s.sum_sq_error;
    report.total.sum_sq_value += s.sum_sq_value;
  }
  return report;
}

}  // namespace swiftlet
