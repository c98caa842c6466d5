// Which schemes runtime-mpi can execute. A scheme it cannot run is refused
// before anything starts (InputError at /scheme, exit status 2) with the
// reason — never replaced by something else.
#pragma once

#include <string>

#include "policy/scheme.h"

namespace sparsefuse::runtime {

// How the runtime drives the iteration: replaying the trace's compute
// (`sparsefuse run`) or beside a real training loop (`sparsefuse train`,
// runtime/training.h), whose forward and optimizer are the framework's.
enum class RuntimeMode { kReplay, kTraining };

// Returns "" when SCHEME can run, else why not (a sentence naming PRESET).
std::string unsupported_reason(const std::string& preset, const policy::Scheme& scheme,
                               RuntimeMode mode = RuntimeMode::kReplay);

}  // namespace sparsefuse::runtime
