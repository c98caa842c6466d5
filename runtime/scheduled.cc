#include "runtime/scheduled.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace sparsefuse::runtime {

// One iteration's state. The engine's thread posts under MUTEX; the job
// reads the posted exchanges under it and opens gates under it. Everything
// else is set by start() before the job is queued, or read by finish() once
// it has ended.
struct ScheduledSession::Round {
  int iteration = -1;
  Clock::time_point start;
  float* aggregate = nullptr;
  uint64_t ticket = 0;  // 0: no job in flight
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<BucketExchange>> posted;  // flush order
  int ready = 0;                                        // tensors backward made ready
  std::vector<char> gate_open;                          // per tensor
  bool ended = false;
  std::vector<int> launch_order;  // indices into posted, as the job ran them

  TimeNs since_start() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  }
};

ScheduledSession::ScheduledSession(const policy::Scheme& scheme, const ModelLayout& layout, TimeNs cycle_ns)
    : scheme_(scheme), layout_(layout), cycle_ns_(cycle_ns) {
  if (!scheme.make_launch_scheduler()) throw std::logic_error("a scheduled session needs the scheme's launch scheduler");
  for (auto& r : rounds_) r = std::make_unique<Round>();
}

ScheduledSession::~ScheduledSession() = default;

ScheduledSession::Round& ScheduledSession::round(int iteration) { return *rounds_[iteration % 2]; }

void ScheduledSession::start(int iteration, CommThread& comm, Clock::time_point start, float* aggregate) {
  Round& r = round(iteration);
  if (r.ticket != 0) {
    throw std::logic_error(fmt::format("iteration {} started before iteration {}'s collectives were finished",
                                       iteration, r.iteration));
  }
  if (!origin_) origin_ = start;
  r.iteration = iteration;
  r.start = start;
  r.aggregate = aggregate;
  r.posted.clear();
  r.ready = 0;
  r.gate_open.assign(size_t(layout_.tensors()), 0);
  r.ended = false;
  r.launch_order.clear();
  r.ticket = comm.submit([this, &r](Communicator& c) { run(r, c); },
                         fmt::format("the scheduled collectives of iteration {}", iteration));
}

void ScheduledSession::post(std::unique_ptr<BucketExchange> exchange) {
  Round& r = round(exchange->iteration);
  std::lock_guard<std::mutex> lock(r.mutex);
  r.posted.push_back(std::move(exchange));
}

void ScheduledSession::tensors_ready(int iteration, int tensors) {
  Round& r = round(iteration);
  std::lock_guard<std::mutex> lock(r.mutex);
  r.ready = tensors;
}

void ScheduledSession::wait_for_tick(TimeNs now) {
  if (cycle_ns_ <= 0) {
    std::this_thread::yield();
    return;
  }
  // The next tick after the last negotiation's, at or after NOW; a cycle
  // that overran its period starts the next at once, as Horovod's loop does.
  last_tick_ = std::max(last_tick_ + 1, (now + cycle_ns_ - 1) / cycle_ns_);
  std::this_thread::sleep_until(*origin_ + std::chrono::nanoseconds(last_tick_ * cycle_ns_));
}

void ScheduledSession::run(Round& r, Communicator& comm) {
  // However the job ends, a forward waiting on a gate must wake.
  struct Ended {
    Round& r;
    ~Ended() {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.ended = true;
      r.changed.notify_all();
    }
  } ended{r};
  const int L = layout_.tensors();
  std::unique_ptr<policy::LaunchScheduler> scheduler = scheme_.make_launch_scheduler();
  std::vector<BucketExchange*> ops;  // posted everywhere, flush order
  std::vector<int> pending(size_t(L), 0);  // per tensor: its posted collectives not yet done
  // Launched collectives, in launch order; the first NEGOTIATED of them were
  // launched by the time of the last negotiation at a cycle tick. As in
  // Horovod, an operation starts only once a cycle has followed its launch
  // (policy::CreditScheduler::start_ns is the simulator's form of this rule).
  std::deque<int> launched;
  size_t negotiated = 0;
  int everywhere = 0, finished = 0;
  auto launch = [&] {
    for (int op = scheduler->next(); op >= 0; op = scheduler->next()) launched.push_back(op);
  };
  auto open_if_done = [&](int t) {
    if (t >= everywhere || pending[size_t(t)] > 0) return;
    std::lock_guard<std::mutex> lock(r.mutex);
    r.gate_open[size_t(t)] = 1;
    r.changed.notify_all();
  };
  // Learns what every rank has posted, posts it to the scheduler and launches.
  auto negotiate = [&] {
    int64_t mine[2];
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      mine[0] = r.ready, mine[1] = int64_t(r.posted.size());
    }
    if (abandoned_ && mine[0] < L) {
      throw std::runtime_error(fmt::format("iteration {}: this rank stopped after {} of {} tensors", r.iteration,
                                           mine[0], L));
    }
    const std::vector<int64_t> all = comm.allgather(mine, 2);
    int64_t ready = mine[0], posted = mine[1];
    for (int rank = 0; rank < comm.size(); ++rank) {
      ready = std::min(ready, all[size_t(2 * rank)]);
      posted = std::min(posted, all[size_t(2 * rank + 1)]);
    }
    // Tensors [0, ready) are ready on every rank, so every flush of theirs is
    // among the first POSTED (each rank counted its flushes after its tensors).
    for (int op = int(ops.size()); op < posted; ++op) {
      {
        std::lock_guard<std::mutex> lock(r.mutex);
        ops.push_back(r.posted[size_t(op)].get());
      }
      const policy::Bucket& b = ops.back()->bucket;
      for (int t = b.first_tensor; t < b.end_tensor; ++t) ++pending[size_t(t)];
      scheduler->posted(op, b);
      launch();
    }
    const int before = everywhere;
    everywhere = int(ready);
    for (int t = before; t < everywhere; ++t) open_if_done(t);
  };
  while (everywhere < L || finished < int(ops.size())) {
    if (negotiated == 0) {
      // Nothing may start before the next cycle: wait for its tick.
      wait_for_tick(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *origin_).count());
      negotiate();
      negotiated = launched.size();
      if (launched.empty() && everywhere == L && finished < int(ops.size())) {
        // Collectives run one at a time, so none is in flight: with every
        // flush posted, nothing can free the scheduler's credit any more.
        throw std::logic_error(fmt::format("iteration {}: the launch scheduler left {} of {} collectives unlaunched",
                                           r.iteration, int(ops.size()) - finished, ops.size()));
      }
      if (launched.empty()) continue;
    } else {
      // Between ticks too, so that credit a finished collective frees goes to
      // the highest-priority collective posted by then (launched ones wait
      // for the next tick).
      negotiate();
    }
    const int op = launched.front();
    launched.pop_front();
    --negotiated;
    BucketExchange& x = *ops[size_t(op)];
    x.started = r.since_start();
    run_collective(x, comm);
    x.finished = r.since_start();
    apply_result(x, layout_, comm.size(), r.aggregate, scratch_);
    x.decompressed = r.since_start();
    x.decompression_ns = x.decompressed - x.finished;
    r.launch_order.push_back(op);
    ++finished;
    scheduler->finished(op, x.bucket);
    for (int t = x.bucket.first_tensor; t < x.bucket.end_tensor; ++t) {
      --pending[size_t(t)];
      open_if_done(t);
    }
    launch();
  }
}

void ScheduledSession::wait_for_tensor(int iteration, int tensor, CommThread& comm,
                                       std::chrono::milliseconds timeout) {
  Round& r = round(iteration);
  if (r.iteration != iteration || r.ticket == 0) {
    throw std::logic_error(fmt::format("no collectives of iteration {} in flight", iteration));
  }
  std::unique_lock<std::mutex> lock(r.mutex);
  const bool woke =
      r.changed.wait_for(lock, timeout, [&] { return r.gate_open[size_t(tensor)] != 0 || r.ended; });
  if (r.gate_open[size_t(tensor)]) return;
  lock.unlock();
  if (!woke) {
    throw CommTimeout(fmt::format("the collectives of iteration {} covering tensor {} did not finish within {} ms",
                                  iteration, tensor, timeout.count()));
  }
  comm.wait_for(r.ticket, timeout);  // rethrows what ended the job
  throw std::logic_error(fmt::format("iteration {}'s collectives ended with tensor {} not done", iteration, tensor));
}

void ScheduledSession::finish(int iteration, CommThread& comm, std::chrono::milliseconds timeout,
                              std::vector<std::unique_ptr<BucketExchange>>& out) {
  Round& r = round(iteration);
  if (r.iteration != iteration || r.ticket == 0) {
    throw std::logic_error(fmt::format("no collectives of iteration {} in flight", iteration));
  }
  comm.wait_for(r.ticket, timeout);
  r.ticket = 0;
  for (int op : r.launch_order) out.push_back(std::move(r.posted[size_t(op)]));
  r.posted.clear();
}

}  // namespace sparsefuse::runtime
