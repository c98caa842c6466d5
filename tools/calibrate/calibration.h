// `sparsefuse calibrate`'s work, apart from the command line: split measured
// samples into a fitted part and a held-out part, fit each collective
// piecewise, evaluate every row, and write a calibration file that
// `network.model = "calibrated"` reads (its "collectives" table holds the
// fitted times; "calibration" holds the parameters and the errors).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "tools/calibrate/piecewise_fit.h"

namespace sparsefuse::calibrate {

// Which rows are not fitted: one rank count (another node count), or every
// size from min_bytes up (another size range). Neither: nothing held out.
struct Holdout {
  std::optional<int> ranks;
  std::optional<double> min_bytes;
  bool holds(const Sample& s) const;
  std::string describe() const;
};

// The default: the largest rank count when there are several, else the top
// quarter of the distinct sizes.
Holdout default_holdout(const std::vector<Sample>& samples);

struct Row {
  Sample sample;
  double fitted_us = 0;
  bool held_out = false;
  double error() const { return (fitted_us - sample.time_us) / sample.time_us; }
};

struct Calibration {
  std::vector<PiecewiseFit> fits;  // one per measured collective
  // Collectives nobody measured, costed with the allreduce fit's per-step
  // alpha and bus bandwidth through their own step counts (same law): the
  // simulator asks a calibrated table for allgather and reduce-scatter too.
  std::vector<PiecewiseFit> derived;
  std::vector<Row> rows;           // every input row, sorted by collective, ranks, bytes
  Holdout holdout;
};

Calibration calibrate(std::vector<Sample> samples, const Holdout& holdout, const FitOptions& options);

// Median |error| of the rows that pass KEEP; nullopt when none do.
std::optional<double> median_abs_error(const std::vector<Row>& rows, bool held_out, double min_bytes);

// The printed report: segments, thresholds, one line per row, error summary.
std::string format_calibration(const Calibration& calibration);

struct Labels {
  std::string link_class, transport;
  std::vector<std::string> inputs;
};
Json calibration_file(const Calibration& calibration, const Labels& labels);

}  // namespace sparsefuse::calibrate
