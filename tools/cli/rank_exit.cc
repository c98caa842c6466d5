#include "tools/cli/rank_exit.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace sparsefuse::cli {

int refuse_on_every_rank(bool reports, const InputError& error, const std::function<void()>& barrier) {
  if (reports) std::cerr << "sparsefuse: error: " << error.what() << std::endl;
  barrier();
  return 2;
}

int refuse_on_every_rank(runtime::CommThread& comm, const InputError& error, std::chrono::milliseconds timeout) {
  return refuse_on_every_rank(comm.rank() == 0, error, [&] {
    try {
      comm.submit([](runtime::Communicator& c) { c.barrier(); }, "the barrier before reporting bad input");
      comm.drain(timeout);
    } catch (const std::exception&) {
    }
  });
}

void die_now(const std::string& who, const std::string& message) {
  std::fflush(stdout);
  std::cerr << "sparsefuse " << who << ": error: " << message << std::endl;
  std::_Exit(1);
}

}  // namespace sparsefuse::cli
