// Error statistics of the fidelity suite.
#pragma once

#include <optional>
#include <vector>

#include "tools/fidelity/suite.h"

namespace sparsefuse::fidelity {

// common/median.h's median, 0 for no values.
double median(std::vector<double> values);

// Kendall's tau-b of two equally long lists (ties counted as in tau-b);
// nullopt when fewer than two items or one list is all ties.
std::optional<double> kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// The points a case is judged on: collective cases, sizes >= 1 MiB when it
// has three or more (the bandwidth regime the targets name), else
// every size;
// scaling cases, every point.
std::vector<const Point*> summary_points(const Case& c);

// Collective cases: median |error| of the summary points; scaling: mean |error|.
double summary_error(const Case& c);

// Scaling cases comparing methods: tau of the measured vs predicted values
// of the schemes at each worker count (worker count -> tau).
std::vector<std::pair<int, double>> method_ranking_taus(const Case& c);

}  // namespace sparsefuse::fidelity
