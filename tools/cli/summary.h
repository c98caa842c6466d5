// Human-readable output of simulation results.
#pragma once

#include <string>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::cli {

std::string format_summary(const sim::Scenario& scenario, const sim::SimResult& result);

}  // namespace sparsefuse::cli
