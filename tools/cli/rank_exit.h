// How a command running under mpirun ends early.
//
// Bad input: every rank parses the same arguments and finds the same error;
// if each simply exited with status 2, mpirun would end the job at the first
// exit — possibly before the reporting rank had printed why (seen under load).
// So one rank prints the message, every rank meets the others at a barrier,
// and only then do all return 2.
//
// Any other failure once MPI runs: the rank's communication thread may be
// blocked inside MPI, so the process ends at once with status 1 and mpirun
// then ends the other ranks.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/input_error.h"
#include "runtime/comm_thread.h"

namespace sparsefuse::cli {

// REPORTS: whether this rank prints ERROR; BARRIER meets the other ranks.
// Returns the exit status, 2.
int refuse_on_every_rank(bool reports, const InputError& error, const std::function<void()>& barrier);

// The same over a communication thread, rank 0 reporting. A barrier that fails
// or times out changes nothing: the message is out and the status the same.
int refuse_on_every_rank(runtime::CommThread& comm, const InputError& error, std::chrono::milliseconds timeout);

// Prints "sparsefuse WHO: error: MESSAGE" (WHO: the command, and the rank
// where it helps) after flushing stdout, and exits with status 1 at once.
[[noreturn]] void die_now(const std::string& who, const std::string& message);

}  // namespace sparsefuse::cli
