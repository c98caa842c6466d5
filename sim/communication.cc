#include "sim/communication.h"

#include <map>

namespace sparsefuse::sim {

namespace {
enum EventKind { kPosted = 0, kFinished = 1 };

struct CommunicatorState {
  std::vector<int> fifo;  // operations in issue order
  size_t next = 0;        // first operation not yet started
  bool busy = false;
};
}  // namespace

uint64_t CommunicationEngine::run(std::vector<Operation>& ops) {
  uint64_t before = queue_.processed();
  std::map<int, CommunicatorState> communicators;
  std::vector<bool> posted(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    communicators[ops[i].communicator].fifo.push_back(int(i));
    queue_.schedule(ops[i].all_posted, kPosted, int(i));
  }
  auto try_start = [&](CommunicatorState& c, TimeNs now) {
    if (c.busy || c.next == c.fifo.size()) return;
    int head = c.fifo[c.next];
    if (!posted[head]) return;
    Operation& op = ops[head];
    op.start = now;
    op.end = now + op.duration;
    c.busy = true;
    ++c.next;
    queue_.schedule(op.end, kFinished, head);
  };
  while (!queue_.empty()) {
    Event e = queue_.pop();
    CommunicatorState& c = communicators[ops[e.subject].communicator];
    if (e.kind == kPosted) posted[e.subject] = true;
    else c.busy = false;
    try_start(c, e.time);
  }
  return queue_.processed() - before;
}

}  // namespace sparsefuse::sim
