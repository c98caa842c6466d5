// Parameter sweeps: the cartesian product of grid axes over one scenario, each
// point simulated once and stored as DIR/points/<id>/result.json, then
// summarised in DIR/results.csv and described in DIR/sweep.json.
//
// Resumability rests on three facts: a point's result file is written
// atomically, a point whose file already holds the same resolved scenario is
// not simulated again, and results.csv is always rebuilt from the point files
// (never from memory), so a killed run loses no completed point and a resumed
// run produces the same bytes as an uninterrupted one.
//
// This library knows nothing about MPI or terminals: the CLI passes the rank
// and rank count, and a progress callback.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace sparsefuse::sim {

struct GridAxis {
  std::string key;                  // dotted scenario path, as --set takes it
  std::vector<std::string> values;  // each applied as the override KEY=VALUE
};

// Parses "--grid KEY=v1,v2,...". Commas inside JSON brackets, braces or
// double quotes do not split, so KEY={"a":1,"b":2},... works. InputError on a
// missing '=', an empty value or a repeated value.
GridAxis parse_grid_axis(const std::string& text);

// --schemes a,b,c: the axis "scheme" over preset names.
GridAxis schemes_axis(const std::string& list);

struct SweepPoint {
  size_t index = 0;                    // position in enumeration order
  std::vector<std::string> values;     // one per axis, as given
  std::vector<std::string> overrides;  // the base overrides, then KEY=VALUE per axis
  std::string id;                      // directory name under DIR/points/
};

struct SweepPlan {
  std::string scenario_path;
  std::vector<std::string> base_overrides;
  std::vector<GridAxis> axes;
  std::vector<SweepPoint> points;

  // The sweep.json document: keys, values, and every point's id and values.
  Json description() const;
};

// A stable, filesystem-safe name for a point: "key=value" pairs joined by ','
// in axis order. Characters outside [A-Za-z0-9._+=,-] become '_'; when that
// changed anything, or the name is longer than 160 characters, the name is
// shortened and a hash of the exact pairs is appended, so distinct points
// never share a name.
std::string point_id(const std::vector<GridAxis>& axes, const std::vector<std::string>& values);

// Enumerates the cartesian product of AXES (first axis outermost, last axis
// varying fastest). With VALIDATE, every point's scenario is loaded (parsed
// and checked, not simulated) so a bad grid value fails before anything runs;
// the InputError names the point (the first bad one in enumeration order,
// whatever THREADS is). Also rejects no axes and repeated keys.
SweepPlan plan_sweep(const std::string& scenario_path, const std::vector<std::string>& base_overrides,
                     const std::vector<GridAxis>& axes, bool validate = true, int threads = 1);

std::string point_dir(const std::string& out_dir, const SweepPoint& point);
std::string point_result_path(const std::string& out_dir, const SweepPoint& point);

// The parsed result file of a point, or nothing when it is missing, unreadable
// or lacks the fields results.csv needs.
std::optional<Json> read_point_result(const std::string& path);

struct SweepRunOptions {
  int threads = 1;  // worker threads in this process
  int rank = 0;     // this process takes the points with index % ranks == rank
  int ranks = 1;
  // Called after each of this process's points (serialised by the library).
  // RAN is false for a point skipped because its result already existed.
  std::function<void(size_t done, size_t total, bool ran)> progress;
};

struct SweepRunSummary {
  size_t assigned = 0;  // points this process was responsible for
  size_t ran = 0;       // simulated now
  size_t skipped = 0;   // already done by an earlier run
  size_t failed = 0;    // simulation threw; see errors and the point's error.json
  std::vector<std::string> errors;
};

// Runs this process's share of PLAN into OUT_DIR with OPTIONS.threads threads
// pulling points from a shared counter. A point is skipped when its
// result.json parses and records the same resolved scenario; otherwise it is
// simulated and its result written atomically. A point that throws gets
// DIR/points/<id>/error.json instead (and is retried by the next run).
SweepRunSummary run_sweep_points(const SweepPlan& plan, const std::string& out_dir,
                                 const SweepRunOptions& options);

// results.csv, rebuilt from the point files: the axis keys, then
// iteration_mean_s, iteration_p50_s, iteration_p99_s,
// throughput_samples_per_s, communication_exposed_s, sync_wait_s, buckets,
// bytes_per_worker, status ("ok", "failed" or "missing"). No wall-clock
// field appears, so the file is deterministic.
std::string results_csv(const SweepPlan& plan, const std::string& out_dir);

// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
std::string csv_field(const std::string& text);

}  // namespace sparsefuse::sim
