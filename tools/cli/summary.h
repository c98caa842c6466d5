// Human-readable output of simulation results.
#pragma once

#include <string>

#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::cli {

std::string format_summary(const model::Scenario& scenario, const model::RunResult& result);

}  // namespace sparsefuse::cli
