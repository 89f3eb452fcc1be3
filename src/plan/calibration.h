// Calibration: efficiency factors (achieved / modelled) fitted from our own
// measurements, so that a plan predicts what swiftlet does rather than what
// the roofline allows.
//
//   `swiftlet bench engine --json` files give, per test, the measured tok/s
//   of one model on one machine: the best of the test's timed runs (the
//   neighbours of a shared machine only ever slow a run down; the machine
//   limits the file records are best-of measurements too). Each test is modelled with the planner's
//   own formulas (plan/capacity.h) on the machine limits the file records:
//     prefill factor         = pp tok/s / (P / prefill roofline seconds)
//     decode factor at b     = tg@b tok/s / (b / decode-step roofline seconds)
//   Several files average their factors per batch size; the decode factors
//   form the batching curve Efficiency::DecodeAt interpolates.
//
//   `swiftlet bench --json` files (a load test of `swiftlet serve`) give the
//   measured goodput of each load point. Each is paired with the nearest
//   bench engine file before it on the command line (the same model on the
//   same machine, whose shape and limits the load file does not record):
//     serving factor = best measured goodput / modelled peak goodput
//   where the model uses the engine factors fitted above, the load's mean
//   uncached prompt and output tokens, and its targets.
//
// Calibration files are untrusted input; errors name the file and field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/capacity.h"

namespace swiftlet::plan {

inline constexpr int kMaxCalibrationFiles = 32;
inline constexpr int64_t kMaxCalibrationFileBytes = int64_t{64} << 20;

// One fitted figure and what it came from, for the report.
struct CalibrationPoint {
  std::string file;
  std::string what;       // "decode b16", "prefill p128", "goodput"
  double measured = 0;    // tok/s, or req/s for goodput
  double modelled = 0;    // The same by the formulas, efficiency 1 (goodput: engine factors).
  double factor = 0;      // measured / modelled
};

struct Calibration {
  Efficiency efficiency;     // Factors 1 where nothing was measured.
  bool decode_fitted = false;
  bool prefill_fitted = false;
  bool serving_fitted = false;
  std::vector<std::string> machines;  // The CPUs the engine files ran on.
  std::vector<CalibrationPoint> points;
};

// A calibration input: its name (a path, for errors) and its text.
struct CalibrationInput {
  std::string origin;
  std::string text;
};

// Fits the factors. `max_batch` bounds the batch sizes the goodput model
// may use (as the server's --max-running bounds them).
absl::StatusOr<Calibration> Calibrate(const std::vector<CalibrationInput>& inputs,
                                      int64_t max_batch);

// Reads the files (each at most kMaxCalibrationFileBytes) and calibrates.
absl::StatusOr<Calibration> CalibrateFromFiles(const std::vector<std::string>& paths,
                                               int64_t max_batch);

}  // namespace swiftlet::plan
