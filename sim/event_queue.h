// The simulator's global event queue: events are ordered by (time, sequence
// number), so simultaneous events run in the order they were scheduled and a
// run is deterministic.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "common/time.h"

namespace sparsefuse::sim {

struct Event {
  TimeNs time = 0;
  uint64_t sequence = 0;
  int kind = 0;
  int subject = 0;  // e.g. the operation the event is about

  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : sequence > other.sequence;
  }
};

class EventQueue {
 public:
  void schedule(TimeNs time, int kind, int subject) { heap_.push({time, next_sequence_++, kind, subject}); }
  bool empty() const { return heap_.empty(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    ++processed_;
    return e;
  }
  uint64_t processed() const { return processed_; }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  uint64_t next_sequence_ = 0;
  uint64_t processed_ = 0;
};

}  // namespace sparsefuse::sim
