// Re-planning of adaptive schemes ("replan_every": K > 0), as the
// simulator's Replanner does it: every K iterations the window's
// measurements (each collective's bytes and start-to-end time, each tensor's
// ready offset from the start of backward, compression totals) go to the
// scheme, which re-plans; the engine then takes fresh worker policies. Every
// rank must re-plan the same way, so the measurements are agreed first (one
// reduction off the clock): ready offsets averaged over ranks and
// iterations, each collective's bytes and time the largest over ranks,
// compression totals summed over ranks.
#pragma once

#include <chrono>
#include <vector>

#include "policy/adaptive.h"
#include "policy/scheme.h"
#include "runtime/comm_thread.h"
#include "runtime/engine.h"

namespace sparsefuse::runtime {

class RuntimeReplanner {
 public:
  explicit RuntimeReplanner(policy::Scheme& scheme) : scheme_(scheme), every_(scheme.replan_every()) {}

  bool active() const { return every_ > 0; }
  // After iteration IT on ENGINE: adds it to the window; at the window's end
  // agrees the measurements over the ranks, re-plans and renews ENGINE's
  // policy. Returns whether it re-planned.
  bool after_iteration(int it, RankEngine& engine, CommThread& comm, std::chrono::milliseconds timeout);

 private:
  policy::Scheme& scheme_;
  const int every_;
  std::vector<double> ready_sums_;  // per tensor, ns, this rank over the window
  std::vector<Collective> kinds_;   // per collective of the window
  std::vector<double> samples_;     // per collective: bytes, duration (ns)
  double compressed_elements_ = 0, compression_ns_ = 0;
};

}  // namespace sparsefuse::runtime
