// Runs the collectives of one iteration on the global event queue. Each
// operation belongs to a communicator; operations on a communicator run one at
// a time in issue order, and one starts only when every member has posted it
// (and not before any coordinator-imposed time). The time early members spend
// waiting is their sync wait.
//
// An operation first pays its latency terms, then moves its bytes. Operations
// on different communicators that are moving bytes at the same time share
// bandwidth as CONTENTION says (sim/contention.h), recomputed whenever a
// transfer starts or ends.
#pragma once

#include <vector>

#include "common/time.h"
#include "policy/bucket.h"
#include "sim/contention.h"
#include "sim/event_queue.h"
#include "model/network.h"

namespace sparsefuse::sim {

struct Operation {
  policy::Bucket bucket;
  int communicator = 0;
  TimeNs all_posted = 0;  // latest post among members (and any not-before time)
  model::CollectiveCost cost;    // alone on the network
  TimeNs start = 0;       // filled by run()
  TimeNs end = 0;
};

class CommunicationEngine {
 public:
  explicit CommunicationEngine(const Contention& contention) : contention_(contention) {}
  // Resolves start and end of OPS (in issue order); returns events processed.
  uint64_t run(std::vector<Operation>& ops);

 private:
  const Contention& contention_;
  EventQueue queue_;
};

}  // namespace sparsefuse::sim
