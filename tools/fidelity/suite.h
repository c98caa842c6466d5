// The fidelity suite: published measurements against the simulator's
// predictions. A suite directory holds cases/*.json (one case each: which
// measurement, its set-up as a scenario, the measured points) and
// bounds.json (the largest summary error each microbenchmark case may show).
// Format: tests/fidelity/README.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sparsefuse::fidelity {

// One measured number and what the model says about it. Collective cases:
// time of one collective of BYTES (us). Scaling cases: speedup or scaling
// efficiency of SCHEME at WORKERS against base_workers.
struct Point {
  double bytes = 0;
  std::string scheme;
  int workers = 0;
  double measured = 0;
  double predicted = 0;
  bool held_out = false;  // a calibration row the fit never saw
  double error() const { return (predicted - measured) / measured; }
};

struct Case {
  std::string id, file, measurement, category, role, calibrates, note;
  std::string kind;        // "collective" or "scaling"
  std::string scenario;    // resolved path
  std::string metric;      // "time_us", "speedup" or "scaling_efficiency"
  int workers = 0;         // collective cases
  int base_workers = 1;    // scaling cases
  bool compare_methods = false;
  std::vector<Point> points;
};

// Reads DIR/cases/*.json in name order. InputError (file, pointer) on bad cases.
std::vector<Case> load_cases(const std::string& dir);

// DIR/bounds.json: case id -> bound on the case's summary error.
std::map<std::string, double> load_bounds(const std::string& path);

// Fills every point's prediction by simulating the case's scenario.
void predict(Case& c);

}  // namespace sparsefuse::fidelity
