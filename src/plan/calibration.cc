#include "plan/calibration.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "core/number_format.h"
#include "core/str_cat.h"
#include "core/tensor_type.h"
#include "perf/engine_bench.h"
#include "perf/model_shape.h"
#include "plan/hardware.h"
#include "plan/json_input.h"

namespace swiftlet::plan {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 62;
constexpr size_t kMaxResults = 1000;
constexpr double kMaxTokS = 1e9;

// One `swiftlet bench engine --json` file.
struct EngineRun {
  std::string origin;
  std::string cpu;
  MachineRates machine;
  ModelCost cost;
  uint64_t kv_bytes_per_token = 0;
  // How the decode tests chose tokens: empty for greedy (argmax rows),
  // else ", sampled (temperature T...)": its decode factors then include
  // the host's draw of every row.
  std::string decode_sampling;
  struct Test {
    std::string name;
    bool prompt = false;
    int64_t batch = 1;
    int64_t tokens_per_pass = 1;
    double mean_context = 0;
    double tok_s = 0;
  };
  std::vector<Test> tests;
};

bool IsEngineReport(const Json& doc) {
  return FindField(doc, "machine") != nullptr && FindField(doc, "results") != nullptr;
}
bool IsLoadReport(const Json& doc) {
  return FindField(doc, "parameters") != nullptr && FindField(doc, "points") != nullptr;
}

absl::StatusOr<ModelShape> ReadShape(const Json& s, std::string_view origin) {
  const std::string where = "model.shape";
  ModelShape shape;
  SWIFTLET_ASSIGN_OR_RETURN(shape.arch, ReadString(s, "arch", origin, where, 16, true));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_vocab, ReadInteger(s, "n_vocab", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_ctx_train, ReadInteger(s, "n_ctx_train", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_embd, ReadInteger(s, "n_embd", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_layer, ReadInteger(s, "n_layer", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_head, ReadInteger(s, "n_head", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_head_kv, ReadInteger(s, "n_head_kv", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.head_dim, ReadInteger(s, "head_dim", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.n_ff, ReadInteger(s, "n_ff", origin, where, 1, kMaxCount));
  SWIFTLET_ASSIGN_OR_RETURN(shape.tied_embeddings, ReadBool(s, "tied_embeddings", origin, where, false));
  if (absl::Status st = CheckModelShape(shape); !st.ok()) {
    return absl::InvalidArgumentError(StrCat(origin, ": ", st.message()));
  }
  return shape;
}

// The test's geometry from its name, for reports written before the
// geometry was recorded: "pp128", "tg64", "tg64@b16".
std::optional<EngineRun::Test> GeometryFromName(const std::string& name) {
  auto number = [](std::string_view s, int64_t* out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size() && *out >= 1 &&
           *out <= (int64_t{1} << 24);
  };
  EngineRun::Test t;
  t.name = name;
  int64_t n = 0;
  if (name.rfind("pp", 0) == 0 && number(std::string_view(name).substr(2), &n)) {
    t.prompt = true;
    t.tokens_per_pass = n;
    t.mean_context = (static_cast<double>(n) + 1) / 2;
    return t;
  }
  if (name.rfind("tg", 0) != 0) return std::nullopt;
  std::string_view rest = std::string_view(name).substr(2);
  const size_t at = rest.find("@b");
  int64_t batch = 1;
  if (at != std::string_view::npos && !number(rest.substr(at + 2), &batch)) return std::nullopt;
  if (!number(rest.substr(0, at), &n)) return std::nullopt;
  t.batch = batch;
  t.tokens_per_pass = batch;
  t.mean_context = static_cast<double>(kShortPrompt) + (static_cast<double>(n) + 1) / 2;
  return t;
}

// bench engine's "decode" object: "" for greedy decode, else ", sampled
// (temperature T, top_k K, ...)" naming the settings that are on.
absl::StatusOr<std::string> ReadDecodeSampling(const Json& d, std::string_view origin) {
  const std::string where = "decode";
  if (!d.is_object()) return absl::InvalidArgumentError(StrCat(origin, ": decode: not an object"));
  SWIFTLET_ASSIGN_OR_RETURN(const bool sampled, ReadBool(d, "sampled", origin, where, false));
  if (!sampled) return std::string();
  SWIFTLET_ASSIGN_OR_RETURN(const double temperature, ReadNumber(d, "temperature", origin, where, 0, 100));
  SWIFTLET_ASSIGN_OR_RETURN(const std::optional<double> top_k,
                            ReadOptionalNumber(d, "top_k", origin, where, 0, 1 << 30));
  SWIFTLET_ASSIGN_OR_RETURN(const std::optional<double> top_p, ReadOptionalNumber(d, "top_p", origin, where, 0, 1));
  SWIFTLET_ASSIGN_OR_RETURN(const std::optional<double> min_p, ReadOptionalNumber(d, "min_p", origin, where, 0, 1));
  std::string s = StrCat(", sampled (temperature ", Fixed(temperature, 2));
  if (top_k && *top_k > 0) s += StrCat(", top_k ", Fixed(*top_k, 0));
  if (top_p && *top_p < 1) s += StrCat(", top_p ", Fixed(*top_p, 2));
  if (min_p && *min_p > 0) s += StrCat(", min_p ", Fixed(*min_p, 2));
  return s + ")";
}

absl::StatusOr<EngineRun> ReadEngineRun(const Json& doc, const std::string& origin) {
  EngineRun run;
  run.origin = origin;
  const Json& m = *FindField(doc, "machine");
  SWIFTLET_ASSIGN_OR_RETURN(run.cpu, ReadString(m, "cpu", origin, "machine", 1024, false, "unknown CPU"));
  SWIFTLET_ASSIGN_OR_RETURN(run.machine.bandwidth_gbs,
                            ReadNumber(m, "read_bandwidth_gbs", origin, "machine", 1e-3, kMaxBandwidthGbs));
  SWIFTLET_ASSIGN_OR_RETURN(const double int8_gops,
                            ReadNumber(m, "int8_peak_gops", origin, "machine", 1e-3, kMaxPeakTera * 1e3));
  SWIFTLET_ASSIGN_OR_RETURN(const double fp32_gflops,
                            ReadNumber(m, "fp32_peak_gflops", origin, "machine", 1e-3, kMaxPeakTera * 1e3));
  run.machine.int8_tops = int8_gops / 1e3;
  run.machine.float_tflops = fp32_gflops / 1e3;

  const Json* model = FindField(doc, "model");
  if (model == nullptr || !model->is_object()) {
    return absl::InvalidArgumentError(StrCat(origin, ": no \"model\" object"));
  }
  ModelShape shape;
  const Json* shape_json = FindField(*model, "shape");
  if (shape_json != nullptr && FindField(*model, "int8_macs_per_token") != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(shape, ReadShape(*shape_json, origin));
    const std::string where = "model";
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t bytes,
                              ReadInteger(*model, "weight_bytes_per_token", origin, where, 1, kMaxCount));
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t int8,
                              ReadInteger(*model, "int8_macs_per_token", origin, where, 0, kMaxCount));
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t fl,
                              ReadInteger(*model, "float_macs_per_token", origin, where, 0, kMaxCount));
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t attn,
                              ReadInteger(*model, "attn_macs_per_position", origin, where, 0, kMaxCount));
    run.cost.weight_bytes_per_token = static_cast<uint64_t>(bytes);
    run.cost.int8_macs_per_token = static_cast<uint64_t>(int8);
    run.cost.float_macs_per_token = static_cast<uint64_t>(fl);
    run.cost.attn_macs_per_position = static_cast<uint64_t>(attn);
  } else {
    // Written before the shape was recorded: count the model file itself,
    // if it is still where the run found it.
    SWIFTLET_ASSIGN_OR_RETURN(const std::string path,
                              ReadString(*model, "path", origin, "model", 4096, true));
    auto sizing = SizeModelFile(path);
    if (!sizing.ok()) {
      return absl::InvalidArgumentError(
          StrCat(origin, ": records no model shape (an older report), and its model cannot be "
                         "read: ", sizing.status().message()));
    }
    shape = sizing->shape;
    run.cost = sizing->cost;
  }
  SWIFTLET_ASSIGN_OR_RETURN(const std::string kv_name,
                            ReadString(*model, "kv_type", origin, "model", 16, false, "F16"));
  const std::optional<TensorType> kv = TensorTypeFromName(kv_name);
  if (!kv || (*kv != TensorType::kF16 && *kv != TensorType::kF32 && *kv != TensorType::kQ8_0)) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": model.kv_type: '", kv_name, "' is not F16, F32 or Q8_0"));
  }
  auto kv_bytes = KvBytesPerToken(shape, *kv);
  if (!kv_bytes.ok()) return absl::InvalidArgumentError(StrCat(origin, ": ", kv_bytes.status().message()));
  run.kv_bytes_per_token = *kv_bytes;

  const Json& results = *FindField(doc, "results");
  if (!results.is_array() || results.empty() || results.size() > kMaxResults) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": results must be an array of 1 to ", kMaxResults, " tests"));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    const std::string where = StrCat("results[", i, "]");
    SWIFTLET_ASSIGN_OR_RETURN(const std::string name, ReadString(r, "test", origin, where, 64, true));
    EngineRun::Test t;
    if (FindField(r, "batch") != nullptr) {
      t.name = name;
      SWIFTLET_ASSIGN_OR_RETURN(t.prompt, ReadBool(r, "prompt", origin, where, false));
      SWIFTLET_ASSIGN_OR_RETURN(t.batch, ReadInteger(r, "batch", origin, where, 1, kMaxBatch));
      SWIFTLET_ASSIGN_OR_RETURN(t.tokens_per_pass,
                                ReadInteger(r, "tokens_per_pass", origin, where, 1, int64_t{1} << 24));
      SWIFTLET_ASSIGN_OR_RETURN(t.mean_context,
                                ReadNumber(r, "mean_context", origin, where, 0, 1 << 24));
    } else {
      std::optional<EngineRun::Test> g = GeometryFromName(name);
      if (!g) {
        return absl::InvalidArgumentError(
            StrCat(origin, ": ", where, ".test: '", name, "' is not ppN, tgN or tgN@bB"));
      }
      t = *g;
    }
    SWIFTLET_ASSIGN_OR_RETURN(t.tok_s, ReadNumber(r, "tok_s", origin, where, 1e-9, kMaxTokS));
    // The best timed run, when the report lists them: a machine's neighbours
    // only ever slow a run down, so the fastest is the closest to what the
    // machine does undisturbed (the limits are best-of measurements too).
    if (const Json* runs = FindField(r, "runs"); runs != nullptr) {
      if (!runs->is_array() || runs->size() > kMaxResults) {
        return absl::InvalidArgumentError(
            StrCat(origin, ": ", where, ".runs: not an array of at most ", kMaxResults, " numbers"));
      }
      for (size_t k = 0; k < runs->size(); ++k) {
        const Json& x = (*runs)[k];
        if (!x.is_number() || !(x.get<double>() > 0) || x.get<double>() > kMaxTokS) {
          return absl::InvalidArgumentError(
              StrCat(origin, ": ", where, ".runs[", k, "]: not a speed in (0, ", kMaxTokS, "]"));
        }
        t.tok_s = std::max(t.tok_s, x.get<double>());
      }
    }
    run.tests.push_back(std::move(t));
  }
  if (const Json* d = FindField(doc, "decode"); d != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(run.decode_sampling, ReadDecodeSampling(*d, origin));
  }
  return run;
}

// "32" or "20-60": the mean.
absl::StatusOr<double> MeanLength(const std::string& text, std::string_view origin) {
  auto number = [](std::string_view s, int64_t* out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size() && *out >= 1 &&
           *out <= 1'000'000;
  };
  const size_t dash = text.find('-');
  int64_t lo = 0;
  int64_t hi = 0;
  const std::string_view t(text);
  if (dash == std::string::npos ? number(t, &lo) && (hi = lo, true)
                                : number(t.substr(0, dash), &lo) && number(t.substr(dash + 1), &hi) && lo <= hi) {
    return (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
  }
  return absl::InvalidArgumentError(
      StrCat(origin, ": parameters.output_tokens: '", text, "' is not N or MIN-MAX"));
}

struct LoadRun {
  std::string origin;
  SloSeconds slo;
  double output_tokens = 1;
  double best_goodput = 0;
  double prompt_tokens = 0;  // Uncached, at the best point.
};

absl::StatusOr<LoadRun> ReadLoadRun(const Json& doc, const std::string& origin) {
  LoadRun run;
  run.origin = origin;
  const Json& p = *FindField(doc, "parameters");
  const Json* slo = FindField(p, "slo_ms");
  if (slo == nullptr) return absl::InvalidArgumentError(StrCat(origin, ": parameters.slo_ms is missing"));
  const std::string where = "parameters.slo_ms";
  SWIFTLET_ASSIGN_OR_RETURN(const double ttft, ReadNumber(*slo, "ttft", origin, where, 0, 864e5));
  SWIFTLET_ASSIGN_OR_RETURN(const double tpot, ReadNumber(*slo, "tpot", origin, where, 0, 864e5));
  SWIFTLET_ASSIGN_OR_RETURN(const std::optional<double> e2e,
                            ReadOptionalNumber(*slo, "e2e", origin, where, 0, 864e5));
  run.slo = {ttft / 1e3, tpot / 1e3, e2e.value_or(0) / 1e3};
  SWIFTLET_ASSIGN_OR_RETURN(const std::string out,
                            ReadString(p, "output_tokens", origin, "parameters", 32, true));
  SWIFTLET_ASSIGN_OR_RETURN(run.output_tokens, MeanLength(out, origin));

  const Json& points = *FindField(doc, "points");
  if (!points.is_array() || points.empty() || points.size() > kMaxResults) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": points must be an array of 1 to ", kMaxResults, " load points"));
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string at = StrCat("points[", i, "]");
    SWIFTLET_ASSIGN_OR_RETURN(const double goodput,
                              ReadNumber(points[i], "goodput_req_s", origin, at, 0, kMaxTokS));
    SWIFTLET_ASSIGN_OR_RETURN(const double prompt,
                              ReadNumber(points[i], "mean_prompt_tokens", origin, at, 0, 1e7));
    SWIFTLET_ASSIGN_OR_RETURN(const double cached,
                              ReadNumber(points[i], "mean_cached_prompt_tokens", origin, at, 0, 1e7));
    if (goodput > run.best_goodput && prompt > 0) {
      run.best_goodput = goodput;
      run.prompt_tokens = std::max(1.0, prompt - cached);
    }
  }
  if (run.best_goodput <= 0) {
    return absl::InvalidArgumentError(
        StrCat(origin, ": no load point met its targets (goodput 0), so it cannot calibrate"));
  }
  return run;
}

}  // namespace

absl::StatusOr<Calibration> Calibrate(const std::vector<CalibrationInput>& inputs, int64_t max_batch) {
  if (inputs.size() > static_cast<size_t>(kMaxCalibrationFiles)) {
    return absl::InvalidArgumentError(
        StrCat("--calibrate: more than ", kMaxCalibrationFiles, " files"));
  }
  std::vector<EngineRun> engines;
  // Each load run with the index of the engine run before it.
  std::vector<std::pair<LoadRun, size_t>> loads;
  for (const CalibrationInput& in : inputs) {
    SWIFTLET_ASSIGN_OR_RETURN(const Json doc, ParseJsonInput(in.text, in.origin));
    if (IsEngineReport(doc)) {
      SWIFTLET_ASSIGN_OR_RETURN(EngineRun run, ReadEngineRun(doc, in.origin));
      engines.push_back(std::move(run));
    } else if (IsLoadReport(doc)) {
      if (engines.empty()) {
        return absl::InvalidArgumentError(StrCat(
            in.origin, ": a `swiftlet bench` file must follow the `swiftlet bench engine --json` "
                       "file of the same model and machine on the command line"));
      }
      SWIFTLET_ASSIGN_OR_RETURN(LoadRun run, ReadLoadRun(doc, in.origin));
      loads.emplace_back(std::move(run), engines.size() - 1);
    } else {
      return absl::InvalidArgumentError(
          StrCat(in.origin, ": neither `swiftlet bench engine --json` output (machine, results) "
                            "nor `swiftlet bench --json` output (parameters, points)"));
    }
  }

  Calibration cal;
  std::map<int64_t, std::vector<double>> decode;
  std::vector<double> prefill;
  for (const EngineRun& run : engines) {
    if (std::find(cal.machines.begin(), cal.machines.end(), run.cpu) == cal.machines.end()) {
      cal.machines.push_back(run.cpu);
    }
    for (const EngineRun::Test& t : run.tests) {
      CalibrationPoint p;
      p.file = run.origin;
      p.measured = t.tok_s;
      if (t.prompt) {
        const double tokens = static_cast<double>(t.tokens_per_pass);
        const RooflineTime r =
            RooflineSeconds(PrefillWork(run.cost, run.kv_bytes_per_token, tokens), run.machine);
        p.what = StrCat("prefill p", t.tokens_per_pass);
        p.modelled = tokens / r.seconds;
        p.factor = p.measured / p.modelled;
        prefill.push_back(p.factor);
      } else {
        const RooflineTime r = RooflineSeconds(
            DecodeStepWork(run.cost, run.kv_bytes_per_token, t.batch, t.mean_context), run.machine);
        p.what = StrCat("decode b", t.batch, run.decode_sampling);
        p.modelled = static_cast<double>(t.batch) / r.seconds;
        p.factor = p.measured / p.modelled;
        decode[t.batch].push_back(p.factor);
      }
      cal.points.push_back(std::move(p));
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  for (const auto& [batch, factors] : decode) cal.efficiency.decode.emplace_back(batch, mean(factors));
  cal.decode_fitted = !decode.empty();
  if (!prefill.empty()) {
    cal.efficiency.prefill = mean(prefill);
    cal.prefill_fitted = true;
  }

  std::vector<double> serving;
  for (const auto& [load, engine_index] : loads) {
    const EngineRun& engine = engines[engine_index];
    ReplicaModel m;
    m.cost = engine.cost;
    m.kv_bytes_per_token = engine.kv_bytes_per_token;
    m.machine = engine.machine;
    m.efficiency = cal.efficiency;
    m.prompt_tokens = load.prompt_tokens;
    m.output_tokens = std::max<int64_t>(1, static_cast<int64_t>(load.output_tokens + 0.5));
    const int64_t batch = LargestSloBatch(m, load.slo, max_batch);
    if (batch == 0) {
      return absl::InvalidArgumentError(StrCat(
          load.origin, ": by the model no batch size meets this run's targets on ", engine.origin,
          "'s machine, so its goodput cannot calibrate"));
    }
    CalibrationPoint p;
    p.file = load.origin;
    p.what = StrCat("goodput (model at batch ", batch, ")");
    p.measured = load.best_goodput;
    p.modelled = EvaluateReplica(m, batch).req_s;
    p.factor = p.measured / p.modelled;
    serving.push_back(p.factor);
    cal.points.push_back(std::move(p));
  }
  if (!serving.empty()) {
    cal.efficiency.serving = mean(serving);
    cal.serving_fitted = true;
  }
  return cal;
}

absl::StatusOr<Calibration> CalibrateFromFiles(const std::vector<std::string>& paths,
                                               int64_t max_batch) {
  std::vector<CalibrationInput> inputs;
  if (paths.size() > static_cast<size_t>(kMaxCalibrationFiles)) {
    return absl::InvalidArgumentError(StrCat("--calibrate: more than ", kMaxCalibrationFiles, " files"));
  }
  for (const std::string& path : paths) {
    SWIFTLET_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxCalibrationFileBytes));
    inputs.push_back({path, std::move(text)});
  }
  return Calibrate(inputs, max_batch);
}

}  // namespace swiftlet::plan
