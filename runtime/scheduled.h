// Launch-scheduled schemes (ByteScheduler, policy/bytescheduler.h): the
// scheme's policy::LaunchScheduler picks which posted collective runs next,
// and an iteration's collectives run on into the next iteration's forward,
// whose stages wait tensor by tensor for the collectives that cover them.
//
// The scheduler must decide the same on every rank from what every rank
// knows, so, as in Horovod's background loop (runtime/coordinator.h), one job
// per iteration runs on the rank's communication thread, from the start of
// its backward (nothing is posted before) until its last collective:
//  1. negotiation: every rank reports how many tensors backward has made
//     ready and how many flushes it has posted (an allgather of two counts).
//     The flushes posted on every rank (the minimum: every rank flushes the
//     same sequence) go to the scheduler in flush order, and after each the
//     scheduler is asked for launches, as if they had arrived one by one (the
//     simulator posts them at their own times, sim/launch_order.h);
//  2. the first launched collective runs, if a negotiation at a cycle tick
//     has followed its launch (Horovod's rule: an operation starts at the
//     first cycle after it is enqueued; policy::CreditScheduler::start_ns is
//     the simulator's form of it), its sum left in place in the iteration's
//     gradient (averaged where it is read, RankEngine::average_into: no
//     pass over it on this thread, between collectives); the scheduler is
//     told it finished and asked for launches again; a tensor ready
//     everywhere whose every covering collective is done opens its gate.
// When no launched collective may start yet, the job sleeps until the next
// tick (k x cycle from the first iteration's start: the simulator's ticks
// count from the start of its run) and negotiates there; otherwise it
// negotiates before each collective anyway, so that credit freed by a
// finished collective goes to the highest-priority collective posted
// everywhere by then, as in the simulator. The job ends once every tensor is
// ready everywhere and every posted collective is done.
//
// Two iterations are in flight at once (the previous one's collectives, this
// one's forward), so the session keeps two rounds, by iteration parity; the
// engine gives each round its own gradient buffer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "policy/scheme.h"
#include "runtime/comm_thread.h"
#include "runtime/exchange.h"
#include "runtime/gradients.h"

namespace sparsefuse::runtime {

class ScheduledSession {
 public:
  using Clock = std::chrono::steady_clock;

  // SCHEME makes a fresh launch scheduler per iteration and must outlive the
  // session; CYCLE_NS: the negotiation period (0: negotiate again at once).
  ScheduledSession(const policy::Scheme& scheme, const ModelLayout& layout, TimeNs cycle_ns);
  ~ScheduledSession();
  ScheduledSession(const ScheduledSession&) = delete;
  ScheduledSession& operator=(const ScheduledSession&) = delete;

  // The engine's thread, per iteration, in this order:
  // queues ITERATION's job on COMM (its clock started at START). The round
  // of ITERATION - 2 must be finished.
  void start(int iteration, CommThread& comm, Clock::time_point start);
  // A flush of the started iteration, its payload filled (flush order).
  void post(std::unique_ptr<BucketExchange> exchange);
  // ITERATION's backward has made tensors [0, TENSORS) ready and posted their flushes.
  void tensors_ready(int iteration, int tensors);

  // The next iteration's forward: returns once every collective of
  // ITERATION that covers TENSOR is done (rethrows the job's error; throws
  // CommTimeout after TIMEOUT). Returns whether it had to wait (false: the
  // collectives were done when it was called).
  bool wait_for_tensor(int iteration, int tensor, CommThread& comm, std::chrono::milliseconds timeout);
  // Waits for ITERATION's job and appends its exchanges to OUT in launch order.
  void finish(int iteration, CommThread& comm, std::chrono::milliseconds timeout,
              std::vector<std::unique_ptr<BucketExchange>>& out);

  // This rank's backward will not go on (the engine is being destroyed
  // mid-iteration): a job still waiting for this rank's flushes ends with an
  // error instead of negotiating for ever.
  void abandon() { abandoned_ = true; }


 private:
  struct Round;
  class Job;
  Round& round(int iteration);
  Round& in_flight(int iteration);  // ITERATION's round, whose job was started and not finished
  void run(Round& round, Communicator& comm);
  void wait_for_tick(TimeNs now);

  const policy::Scheme& scheme_;
  const ModelLayout& layout_;
  TimeNs cycle_ns_;
  std::unique_ptr<Round> rounds_[2];
  std::optional<Clock::time_point> origin_;  // the first iteration's start: tick 0
  int64_t last_tick_ = -1;                   // communication thread only
  std::atomic<bool> abandoned_{false};
};

}  // namespace sparsefuse::runtime
