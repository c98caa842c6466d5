// Which schemes runtime-mpi can execute. A scheme it cannot run is refused
// before anything starts (InputError at /scheme, exit status 2) with the
// reason — never replaced by something else.
#pragma once

#include <string>
#include <vector>

#include "policy/scheme.h"

namespace sparsefuse::runtime {

// Returns "" when SCHEME can run, replaying a trace (`sparsefuse run`) or
// beside a real training loop (`sparsefuse train`), else why not (a
// sentence naming PRESET).
std::string unsupported_reason(const std::string& preset, const policy::Scheme& scheme);

// What the runtime executes differently from SCHEME's plan, one sentence
// each (`sparsefuse run` prints them as notes): HiPress's CaSync ring
// re-encodes with an exact top-k whatever the plan's sparsifier
// (runtime/sparse_allreduce.h).
std::vector<std::string> runtime_deviations(const policy::Scheme& scheme);

}  // namespace sparsefuse::runtime
