#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/dequantize.h"
#include "kernels/vec_dot.h"
#include "kv/kv_row.h"
#include "kv/kv_store.h"
#include "model/forward_state.h"
#include "model/model_weights.h"
#include "model/tensor_layout.h"

namespace swiftlet {
namespace {

class Binder {
 public:
  Binder(const GgufFile& f, Backend& device) : f_(f), device_(device) {}

  absl::StatusOr<WeightView> Matrix(const std::string& name) const {
    const GgufTensor* t = f_.FindTensor(name);
    if (t == nullptr) return Missing(name);
    if (!CanMatMul(t->type)) {
      return absl::InvalidArgumentError(StrCat(f_.name(), ": tensor '", name, "' is ",
                                               NameOf(t->type),
                                               ", which swiftlet cannot compute with yet"));
    }
    WeightView w;
    w.type = t->type;
    w.n_in = t->ne[0];
    w.n_out = t->rows();
    w.data = t->data;
    w.row_bytes = t->n_bytes / static_cast<size_t>(w.n_out);
    return w;
  }

  // A vector in the device's memory.
  absl::StatusOr<DeviceVector> Vector(const std::string& name) const {
    SWIFTLET_ASSIGN_OR_RETURN(std::vector<float> v, HostVector(name));
    return ToDevice(v);
  }

  absl::StatusOr<DeviceVector> ToDevice(const std::vector<float>& v) const {
    const size_t bytes = v.size() * sizeof(float);
    std::unique_ptr<DeviceBuffer> buffer = device_.Allocate(bytes);
    if (buffer == nullptr) {
      return absl::ResourceExhaustedError(
          StrCat(f_.name(), ": the compute device is out of memory for the weights"));
    }
    if (bytes > 0) device_.Upload(buffer->data(), v.data(), bytes);
    return DeviceVector(std::move(buffer), static_cast<int64_t>(v.size()));
  }

  absl::StatusOr<std::vector<float>> HostVector(const std::string& name) const {
    const GgufTensor* t = f_.FindTensor(name);
    if (t == nullptr) return Missing(name);
    if (!CanDequantize(t->type)) {
      return absl::InvalidArgumentError(
          StrCat(f_.name(), ": tensor '", name, "' has unsupported type ", NameOf(t->type)));
    }
    std::vector<float> v(t->n_elements);
    DequantizeRow(t->type, t->data, v.data(), static_cast<int64_t>(t->n_elements));
    return v;
  }

 private:
  absl::Status Missing(const std::string& name) const {
    return absl::InvalidArgumentError(StrCat(f_.name(), ": tensor '", name, "' is missing"));
  }
  const GgufFile& f_;
  Backend& device_;
};

}  // namespace

std::vector<float> Llama3FreqFactors(const ModelConfig& c) {
  // Long wavelengths (beyond original_context / low_freq_factor) are slowed
  // by the full factor, short ones (below original_context /
  // high_freq_factor) kept, and the band between blended smoothly.
  std::vector<float> factors(static_cast<size_t>(c.rope_dim / 2));
  const double old_ctx = static_cast<double>(c.rope_original_context);
  const double low_wavelen = old_ctx / c.rope_low_freq_factor;
  const double high_wavelen = old_ctx / c.rope_high_freq_factor;
  for (size_t i = 0; i < factors.size(); ++i) {
    const double freq = std::pow(c.rope_freq_base, -2.0 * static_cast<double>(i) /
                                                       static_cast<double>(c.rope_dim));
    const double wavelen = 2 * M_PI / freq;
    double scaled;
    if (wavelen < high_wavelen) {
      scaled = freq;
    } else if (wavelen > low_wavelen) {
      scaled = freq / c.rope_scaling_factor;
    } else {
      const double smooth = (old_ctx / wavelen - c.rope_low_freq_factor) /
                            (c.rope_high_freq_factor - c.rope_low_freq_factor);
      scaled = (1 - smooth) * freq / c.rope_scaling_factor + smooth * freq;
    }
    factors[i] = static_cast<float>(freq / scaled);
  }
  return factors;
}

namespace {

absl::StatusOr<ModelWeights> BindWeights(const GgufFile& f, const ModelConfig& c, Backend& device) {
  Binder bind(f, device);
  ModelWeights w;
  SWIFTLET_ASSIGN_OR_RETURN(w.token_embd, bind.Matrix("token_embd.weight"));
  SWIFTLET_ASSIGN_OR_RETURN(w.output_norm, bind.Vector("output_norm.weight"));
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(w.output, bind.Matrix("output.weight"));
  }
  std::vector<float> rope_factors;
  if (f.FindTensor("rope_freqs.weight") != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(rope_factors, bind.HostVector("rope_freqs.weight"));
    if (static_cast<int64_t>(rope_factors.size()) != c.rope_dim / 2) {
      return absl::InvalidArgumentError(StrCat(f.name(), ": tensor 'rope_freqs.weight' has ",
                                               rope_factors.size(), " values, expected ",
                                               c.rope_dim / 2));
    }
    for (float v : rope_factors) {
      if (!(v > 0) || !std::isfinite(v)) {
        return absl::InvalidArgumentError(
            StrCat(f.name(), ": tensor 'rope_freqs.weight' holds a non-positive factor"));
      }
    }
  } else if (c.rope_scaling == RopeScaling::kLlama3) {
    rope_factors = Llama3FreqFactors(c);
  }
  if (!rope_factors.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(w.rope_freq_factors, bind.ToDevice(rope_factors));
  }
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    const std::string b = StrCat("blk.", i, ".");
    SWIFTLET_ASSIGN_OR_RETURN(l.attn_norm, bind.Vector(b + "attn_norm.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.wq, bind.Matrix(b + "attn_q.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.wk, bind.Matrix(b + "attn_k.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.wv, bind.Matrix(b + "attn_v.weight"));
    if (c.qkv_bias) {
      SWIFTLET_ASSIGN_OR_RETURN(l.bq, bind.Vector(b + "attn_q.bias"));
      SWIFTLET_ASSIGN_OR_RETURN(l.bk, bind.Vector(b + "attn_k.bias"));
      SWIFTLET_ASSIGN_OR_RETURN(l.bv, bind.Vector(b + "attn_v.bias"));
    }
    if (c.qk_norm) {
      SWIFTLET_ASSIGN_OR_RETURN(l.q_norm, bind.Vector(b + "attn_q_norm.weight"));
      SWIFTLET_ASSIGN_OR_RETURN(l.k_norm, bind.Vector(b + "attn_k_norm.weight"));
    }
    SWIFTLET_ASSIGN_OR_RETURN(l.wo, bind.Matrix(b + "attn_output.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.ffn_norm, bind.Vector(b + "ffn_norm.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.w_gate, bind.Matrix(b + "ffn_gate.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.w_up, bind.Matrix(b + "ffn_up.weight"));
    SWIFTLET_ASSIGN_OR_RETURN(l.w_down, bind.Matrix(b + "ffn_down.weight"));
  }
  return w;
}

}  // namespace

Model::Model() = default;
Model::~Model() = default;

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadProgressFn& progress,
                                                   ComputeDevice where) {
  std::unique_ptr<Model> m(new Model());
  m->device_ = where;
  SWIFTLET_ASSIGN_OR_RETURN(m->file_, GgufFile::Open(path));
  SWIFTLET_ASSIGN_OR_RETURN(m->config_, ReadModelConfig(*m->file_));
  SWIFTLET_RETURN_IF_ERROR(ValidateTensors(m->config_, *m->file_));
  // The weights go where forwards will run, through a backend of that
  // device made for the load (the weights outlive it: DeviceBuffer's
  // contract).
  std::unique_ptr<Backend> device;
  if (where.is_cuda()) {
    if (m->config_.head_dim > kMaxCudaHeadDim) {
      return absl::UnimplementedError(StrCat(path, ": head dimension ", m->config_.head_dim,
                                             " is over the CUDA backend's ", kMaxCudaHeadDim));
    }
    SWIFTLET_ASSIGN_OR_RETURN(device, MakeCudaBackend(where.gpu));
  } else {
    device = MakeCpuBackend(1);
  }
  SWIFTLET_ASSIGN_OR_RETURN(ModelWeights weights, BindWeights(*m->file_, m->config_, *device));
  m->weights_ = std::make_unique<ModelWeights>(std::move(weights));
  SWIFTLET_RETURN_IF_ERROR(m->PrepareMatrices(*device, progress));
  return m;
}

std::vector<TensorInfo> Model::Tensors() const {
  std::vector<TensorInfo> out;
  out.reserve(file_->tensors().size());
  for (const GgufTensor& t : file_->tensors()) out.push_back({t.name, t.type, t.n_elements, t.n_bytes});
  return out;
}

uint64_t Model::PackedBytes() const {
  uint64_t bytes = 0;
  for (const auto& r : weights_->resident) bytes += r->bytes();
  return bytes;
}

absl::Status Model::PrepareMatrices(Backend& device, const LoadProgressFn& progress) {
  const int threads = PhysicalCores();
  const int64_t total = static_cast<int64_t>(weights_->layers.size()) * 7 + 2;
  int64_t done = 0;
  auto prepare = [&](WeightView& w, Backend::WeightUse use) {
    if (progress) progress(done, total);
    ++done;
    absl::StatusOr<std::unique_ptr<ResidentWeight>> r = device.PrepareWeight(w, use, threads);
    if (!r.ok()) return absl::Status(r.status().code(), StrCat(file_->name(), ": ", r.status().message()));
    const WeightView& v = (*r)->view();
    // A copy replaces the file's bytes (except a tail it keeps reading), so
    // their pages need not stay resident; the embedding table's stay while
    // any view reads them in place.
    if (v.data != w.data && w.data != weights_->token_embd.data) {
      const uint8_t* kept = v.tail != nullptr ? v.tail : w.data + static_cast<size_t>(w.n_out) * w.row_bytes;
      file_->DropPages(w.data, static_cast<size_t>(kept - w.data));
    }
    w = v;
    weights_->resident.push_back(std::move(*r));
    return absl::OkStatus();
  };
  for (LayerWeights& l : weights_->layers) {
    for (WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      SWIFTLET_RETURN_IF_ERROR(prepare(*w, Backend::WeightUse::kMatMul));
    }
  }
  // A tied head gets a matmul copy of its own; the table its lookup one.
  SWIFTLET_RETURN_IF_ERROR(prepare(weights_->output, Backend::WeightUse::kMatMul));
  SWIFTLET_RETURN_IF_ERROR(prepare(weights_->token_embd, Backend::WeightUse::kLookup));
  if (progress) progress(done, total);
  return absl::OkStatus();
}

absl::Status Model::Forward(const Batch& batch, KvStore& cache, ForwardContext& context,
                            ForwardOutput& out) const {
  const ModelConfig& c = config_;
  const ModelWeights& weights = *weights_;
  ForwardContext::State& ctx = context.state();
  if (ctx.device != device_) {
    return absl::InvalidArgumentError(StrCat("the model's weights are on the ", NameOf(device_),
                                             "; this forward context computes on the ", NameOf(ctx.device)));
  }
  Backend& be = *ctx.backend;
  const int64_t n = batch.size();
  if (n == 0) return absl::InvalidArgumentError("empty batch");
  if (static_cast<int64_t>(batch.positions.size()) != n ||
      static_cast<int64_t>(batch.slots.size()) != n) {
    return absl::InvalidArgumentError("batch arrays differ in length");
  }
  for (int64_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= c.n_vocab) {
      return absl::InvalidArgumentError(StrCat("token id ", batch.tokens[t],
                                               " is outside the vocabulary (", c.n_vocab, ")"));
    }
    SWIFTLET_RETURN_IF_ERROR(cache.CheckWritable(batch.slots[t], batch.positions[t]));
  }
  for (const auto* rows : {&batch.output_rows, &batch.hidden_rows, &batch.argmax_rows}) {
    for (int32_t r : *rows) {
      if (r < 0 || r >= n) return absl::InvalidArgumentError("output row outside the batch");
    }
  }
  if (const char* problem = KvTypeProblem(cache.type(), c.head_dim); *problem != '\0') {
    return absl::InvalidArgumentError(StrCat(problem, " (this model's is ", c.head_dim, ")"));
  }

  const int64_t E = c.n_embd, Q = c.q_dim(), KV = c.kv_dim(), F = c.n_ff;
  const float eps = static_cast<float>(c.rms_eps);
  const int64_t n_out = static_cast<int64_t>(batch.output_rows.size());
  const int64_t n_hidden = static_cast<int64_t>(batch.hidden_rows.size());
  const int64_t n_argmax = static_cast<int64_t>(batch.argmax_rows.size());
  // The head runs once over the rows that want logits and those that want
  // their argmax, in that order.
  const int64_t n_logits = n_out + n_argmax;
  ctx.host_logit_rows.assign(batch.output_rows.begin(), batch.output_rows.end());
  ctx.host_logit_rows.insert(ctx.host_logit_rows.end(), batch.argmax_rows.begin(), batch.argmax_rows.end());

  // The block tables of the batch's sequences, once per run of rows of one
  // sequence (a prompt's chunk is one run).
  ctx.host_tables.clear();
  ctx.host_table_start.resize(static_cast<size_t>(n));
  int64_t run = 0, longest_run = 1;
  for (int64_t t = 0; t < n; ++t) {
    if (t > 0 && batch.slots[t] == batch.slots[t - 1]) {
      ctx.host_table_start[t] = ctx.host_table_start[t - 1];
      longest_run = std::max(longest_run, ++run);
      continue;
    }
    run = 1;
    ctx.host_table_start[t] = static_cast<int32_t>(ctx.host_tables.size());
    const std::span<const int32_t> table = cache.BlockTable(batch.slots[t]);
    ctx.host_tables.insert(ctx.host_tables.end(), table.begin(), table.end());
  }

  // Where the host reads the backend's memory, results go straight into
  // `out`; otherwise they are computed in staging buffers and copied back.
  const bool direct = be.SharesHostMemory();
  // `out` in the host memory the backend copies into fastest (page-locked
  // for a GPU); kept across steps, since `out` is.
  const std::shared_ptr<HostMemorySource> host_memory = be.HostMemory();
  UseHostMemory(out.values, host_memory);
  UseHostMemory(out.hidden, host_memory);
  UseHostMemory(out.argmax, host_memory);
  const int64_t staged = direct ? 0 : 1;
  // Logits straight into `out` only when every row asked for them is
  // returned: argmax rows' logits never leave the backend's memory.
  const bool logits_direct = direct && n_argmax == 0;
  for (auto [array, count] : {std::pair{&ctx.x, n * E}, {&ctx.h, n * E}, {&ctx.q, n * Q},
                              {&ctx.k, n * KV}, {&ctx.v, n * KV}, {&ctx.attn, n * Q},
                              {&ctx.gate, n * F}, {&ctx.up, n * F}, {&ctx.tmp, n * E},
                              {&ctx.out_rows, n_logits * E}, {&ctx.hidden, staged * n_hidden * E},
                              {&ctx.logits, (logits_direct ? 0 : n_logits) * c.n_vocab}}) {
    SWIFTLET_RETURN_IF_ERROR(array->Reserve(be, count));
  }
  SWIFTLET_RETURN_IF_ERROR(ctx.argmax.Reserve(be, staged * n_argmax));
  auto upload = [&](DeviceArray<int32_t>& array, const std::vector<int32_t>& host) {
    SWIFTLET_RETURN_IF_ERROR(array.Reserve(be, static_cast<int64_t>(host.size())));
    if (!host.empty()) be.Upload(array.data(), host.data(), host.size() * sizeof(int32_t));
    return absl::OkStatus();
  };
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.tokens, batch.tokens));
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.positions, batch.positions));
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.tables, ctx.host_tables));
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.table_start, ctx.host_table_start));
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.logit_rows, ctx.host_logit_rows));
  SWIFTLET_RETURN_IF_ERROR(upload(ctx.hidden_rows, batch.hidden_rows));

  RopeShape rope_q{c.n_head, c.head_dim, c.rope_dim, c.rope_neox,
                   static_cast<float>(c.rope_freq_base), 1.0f};
  if (c.rope_scaling == RopeScaling::kLinear) {
    rope_q.position_scale = static_cast<float>(1.0 / c.rope_scaling_factor);
  }
  if (!weights.rope_freq_factors.empty()) rope_q.freq_factors = weights.rope_freq_factors.data();
  RopeShape rope_k = rope_q;
  rope_k.n_head = c.n_head_kv;
  const AttentionShape attn{c.n_head, c.n_head_kv, c.head_dim,
                            static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)))};

  float* x = ctx.x.data();
  float* h = ctx.h.data();
  float* q = ctx.q.data();
  float* k = ctx.k.data();
  float* v = ctx.v.data();
  float* tmp = ctx.tmp.data();
  const int32_t* positions = ctx.positions.data();
  KvBatch kv{{}, ctx.tables.data(), ctx.table_start.data(), longest_run};

  be.GetRows(weights.token_embd, ctx.tokens.data(), n, x);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = weights.layers[static_cast<size_t>(l)];
    be.RmsNorm(x, w.attn_norm.data(), E, n, eps, h);
    const MatMulJob qkv[] = {{w.wq, q}, {w.wk, k}, {w.wv, v}};
    be.MatMuls(qkv, h, n);
    if (c.qkv_bias) {
      be.AddBias(q, w.bq.data(), Q, n);
      be.AddBias(k, w.bk.data(), KV, n);
      be.AddBias(v, w.bv.data(), KV, n);
    }
    if (c.qk_norm) {
      be.RmsNorm(q, w.q_norm.data(), c.head_dim, n * c.n_head, eps, q);
      be.RmsNorm(k, w.k_norm.data(), c.head_dim, n * c.n_head_kv, eps, k);
    }
    be.Rope(q, n, positions, rope_q);
    be.Rope(k, n, positions, rope_k);
    kv.layer = cache.Layer(l);
    be.StoreKv(k, v, n, positions, kv, KV);
    be.Attention(q, n, positions, kv, attn, ctx.attn.data());
    be.MatMul(w.wo, ctx.attn.data(), n, tmp);
    be.Add(x, tmp, n * E);

    be.RmsNorm(x, w.ffn_norm.data(), E, n, eps, h);
    const MatMulJob gate_up[] = {{w.w_gate, ctx.gate.data()}, {w.w_up, ctx.up.data()}};
    be.MatMuls(gate_up, h, n);
    be.SiluMul(ctx.gate.data(), ctx.up.data(), n * F);
    be.MatMul(w.w_down, ctx.gate.data(), n, tmp);
    be.Add(x, tmp, n * E);
  }
  for (int64_t t = 0; t < n; ++t) cache.MarkStored(batch.slots[t], batch.positions[t]);

  // Only the requested rows go through the final norm (and, for logits,
  // the head). The norm is per row, so a row's result does not depend on
  // which list it is in or what else is asked.
  auto final_norm = [&](const int32_t* rows, int64_t count, float* dst) {
    if (count == 0) return;
    be.GatherRows(x, E, rows, count, dst);
    be.RmsNorm(dst, weights.output_norm.data(), E, count, eps, dst);
  };
  out.hidden_row_size = E;
  out.hidden.resize(n_hidden * E);
  float* hidden = direct ? out.hidden.data() : ctx.hidden.data();
  final_norm(ctx.hidden_rows.data(), n_hidden, hidden);
  if (n_hidden > 0) be.Download(out.hidden.data(), hidden, out.hidden.size() * sizeof(float));

  out.row_size = c.n_vocab;
  out.values.resize(n_out * c.n_vocab);
  out.argmax.resize(n_argmax);
  float* logits = logits_direct ? out.values.data() : ctx.logits.data();
  if (n_logits > 0) {
    final_norm(ctx.logit_rows.data(), n_logits, ctx.out_rows.data());
    be.MatMul(weights.output, ctx.out_rows.data(), n_logits, logits);
  }
  if (n_argmax > 0) {
    int32_t* ids = direct ? out.argmax.data() : ctx.argmax.data();
    be.ArgMax(logits + n_out * c.n_vocab, c.n_vocab, n_argmax, ids);
    be.Download(out.argmax.data(), ids, out.argmax.size() * sizeof(int32_t));
  }
  if (n_out > 0) be.Download(out.values.data(), logits, out.values.size() * sizeof(float));
  be.Flush();  // A step that asks for no rows (a prompt's early chunk) starts now, not at the next step.
  return absl::OkStatus();
}

}  // namespace swiftlet
