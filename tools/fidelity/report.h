// What `sparsefuse fidelity` prints and writes: per case measured vs
// predicted and the error, mean absolute error per category, Kendall tau of
// method rankings, bounds checks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "tools/fidelity/suite.h"

namespace sparsefuse::fidelity {

// Category -> mean |error| over the cases' summary points.
std::map<std::string, double> category_mae(const std::vector<Case>& cases);

Json report_json(const std::vector<Case>& cases, const std::map<std::string, double>& bounds);
std::string format_points(const Case& c);  // one block per case
std::string format_summary(const std::vector<Case>& cases, const std::map<std::string, double>& bounds);
std::string format_markdown(const std::vector<Case>& cases, const std::map<std::string, double>& bounds);

// Calibration (microbenchmark) cases whose summary error exceeds their bound
// or that have none; one message each.
std::vector<std::string> bound_violations(const std::vector<Case>& cases, const std::map<std::string, double>& bounds);

}  // namespace sparsefuse::fidelity
