// Where and when a measurement was taken, for the provenance of measured
// files (kernel and collective profiles, result.json's executor).
#pragma once

#include <string>

namespace sparsefuse {

std::string host_name();  // gethostname(), or "unknown"
std::string today_utc();  // "YYYY-MM-DD"

}  // namespace sparsefuse
