#include "sim/communication.h"

#include <algorithm>
#include <map>

namespace sparsefuse::sim {

namespace {

enum EventKind { kPosted = 0, kLatencyDone = 1, kTransferDone = 2 };

struct CommunicatorState {
  std::vector<int> fifo;  // operations in issue order
  size_t next = 0;        // first operation not yet started
  bool busy = false;
};

struct Transfer {
  int op;
  double remaining_ns;  // at full speed
};

}  // namespace

uint64_t CommunicationEngine::run(std::vector<Operation>& ops) {
  const uint64_t before = queue_.processed();
  std::map<int, CommunicatorState> communicators;
  std::vector<bool> posted(ops.size(), false);
  std::vector<Transfer> active;
  std::vector<double> speed;  // of each active transfer, as a fraction of its speed alone
  TimeNs last_update = 0;
  int version = 0;  // invalidates TransferDone events scheduled before a change

  for (size_t i = 0; i < ops.size(); ++i) {
    communicators[ops[i].communicator].fifo.push_back(int(i));
    queue_.schedule(ops[i].all_posted, kPosted, int(i));
  }
  auto try_start = [&](CommunicatorState& c, TimeNs now) {
    if (c.busy || c.next == c.fifo.size() || !posted[c.fifo[c.next]]) return;
    Operation& op = ops[c.fifo[c.next++]];
    op.start = now;
    c.busy = true;
    queue_.schedule(now + op.cost.latency_ns, kLatencyDone, int(&op - ops.data()));
  };
  auto advance = [&](TimeNs now) {
    for (size_t i = 0; i < active.size(); ++i) active[i].remaining_ns -= double(now - last_update) * speed[i];
    last_update = now;
  };
  auto reschedule = [&](TimeNs now) {  // after the set of transfers changed
    ++version;
    if (active.empty()) return;
    contention_.speeds(int(active.size()), speed);
    double soonest = 1e300;
    for (size_t i = 0; i < active.size(); ++i) soonest = std::min(soonest, std::max(0.0, active[i].remaining_ns) / speed[i]);
    queue_.schedule(now + TimeNs(std::llround(soonest)), kTransferDone, version);
  };
  auto finish = [&](int i, TimeNs now) {
    ops[i].end = now;
    CommunicatorState& c = communicators[ops[i].communicator];
    c.busy = false;
    try_start(c, now);
  };

  while (!queue_.empty()) {
    Event e = queue_.pop();
    if (e.kind == kPosted) {
      posted[e.subject] = true;
      try_start(communicators[ops[e.subject].communicator], e.time);
    } else if (e.kind == kLatencyDone) {
      advance(e.time);
      if (ops[e.subject].cost.transfer_ns == 0) {
        finish(e.subject, e.time);
      } else {
        active.push_back({e.subject, double(ops[e.subject].cost.transfer_ns)});
        reschedule(e.time);
      }
    } else if (e.subject == version) {  // kTransferDone, still current
      advance(e.time);
      std::vector<int> done;
      for (const auto& t : active) {
        if (t.remaining_ns < 0.5) done.push_back(t.op);
      }
      active.erase(std::remove_if(active.begin(), active.end(), [](const Transfer& t) { return t.remaining_ns < 0.5; }),
                   active.end());
      speed.resize(active.size());
      for (int i : done) finish(i, e.time);
      reschedule(e.time);
    }
  }
  return queue_.processed() - before;
}

}  // namespace sparsefuse::sim
