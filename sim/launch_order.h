// Launch scheduling for schemes that reorder their collectives
// (policy::LaunchScheduler, e.g. ByteScheduler's credit): an operation
// becomes known to the scheduler when every worker has posted it
// (all_posted), and whenever an operation is posted or finishes the
// scheduler may launch ready ones. Launched operations run one at a time in
// launch order, each for its cost alone on the network (every operation of
// such a scheme is on one communicator). At equal times, finishes are
// reported before posts.
#pragma once

#include <vector>

#include "policy/scheme.h"
#include "sim/communication.h"

namespace sparsefuse::sim {

// Sets every operation's all_posted to its launch time and returns the
// operations' indices in launch order.
std::vector<size_t> schedule_launches(std::vector<Operation>& ops, policy::LaunchScheduler& scheduler);

// OUT = IN permuted: OUT[i] = IN[ORDER[i]].
template <class T>
void permute(std::vector<T>& values, const std::vector<size_t>& order) {
  std::vector<T> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back(std::move(values[i]));
  values = std::move(out);
}

}  // namespace sparsefuse::sim
