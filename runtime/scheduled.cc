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

ScheduledSession::Round& ScheduledSession::in_flight(int iteration) {
  Round& r = round(iteration);
  if (r.iteration != iteration || r.ticket == 0) {
    throw std::logic_error(fmt::format("no collectives of iteration {} in flight", iteration));
  }
  return r;
}

void ScheduledSession::start(int iteration, CommThread& comm, Clock::time_point start) {
  Round& r = round(iteration);
  if (r.ticket != 0) {
    throw std::logic_error(fmt::format("iteration {} started before iteration {}'s collectives were finished",
                                       iteration, r.iteration));
  }
  if (!origin_) origin_ = start;
  r.iteration = iteration;
  r.start = start;
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

// One iteration's job, on the communication thread.
class ScheduledSession::Job {
 public:
  Job(Round& r, Communicator& comm, const policy::Scheme& scheme, int tensors)
      : r_(r), comm_(comm), scheduler_(scheme.make_launch_scheduler()), tensors_(tensors),
        pending_(size_t(tensors), 0) {}
  // However the job ends, a forward waiting on a gate must wake.
  ~Job() {
    std::lock_guard<std::mutex> lock(r_.mutex);
    r_.ended = true;
    r_.changed.notify_all();
  }

  bool done() const { return everywhere_ == tensors_ && finished_ == int(ops_.size()); }
  // No launched collective may start before the next tick's negotiation.
  bool must_wait() const { return negotiated_ == 0; }

  // Learns what every rank has posted, posts it to the scheduler and
  // launches; AT_TICK: a negotiation of the cycle, after which the collectives
  // launched so far may start.
  void negotiate(bool at_tick, bool abandoned) {
    int64_t mine[2];
    {
      std::lock_guard<std::mutex> lock(r_.mutex);
      mine[0] = r_.ready, mine[1] = int64_t(r_.posted.size());
    }
    if (abandoned && mine[0] < tensors_) {
      throw std::runtime_error(fmt::format("iteration {}: this rank stopped after {} of {} tensors", r_.iteration,
                                           mine[0], tensors_));
    }
    const std::vector<int64_t> all = comm_.allgather(mine, 2);
    int64_t ready = mine[0], posted = mine[1];
    for (int rank = 0; rank < comm_.size(); ++rank) {
      ready = std::min(ready, all[size_t(2 * rank)]);
      posted = std::min(posted, all[size_t(2 * rank + 1)]);
    }
    // Tensors [0, ready) are ready on every rank, so every flush of theirs is
    // among the first POSTED (each rank counted its flushes after its tensors).
    for (int op = int(ops_.size()); op < posted; ++op) {
      {
        std::lock_guard<std::mutex> lock(r_.mutex);
        ops_.push_back(r_.posted[size_t(op)].get());
      }
      const policy::Bucket& b = ops_.back()->bucket;
      for (int t = b.first_tensor; t < b.end_tensor; ++t) ++pending_[size_t(t)];
      scheduler_->posted(op, b);
      launch();
    }
    const int before = everywhere_;
    everywhere_ = int(ready);
    for (int t = before; t < everywhere_; ++t) open_if_done(t);
    if (!at_tick) return;
    negotiated_ = launched_.size();
    if (launched_.empty() && everywhere_ == tensors_ && finished_ < int(ops_.size())) {
      // Collectives run one at a time, so none is in flight: with every
      // flush posted, nothing can free the scheduler's credit any more.
      throw std::logic_error(fmt::format("iteration {}: the launch scheduler left {} of {} collectives unlaunched",
                                         r_.iteration, int(ops_.size()) - finished_, ops_.size()));
    }
  }

  // Runs the first launched collective, if a tick's negotiation followed its launch.
  void run_next() {
    if (negotiated_ == 0) return;
    const int op = launched_.front();
    launched_.pop_front();
    --negotiated_;
    BucketExchange& x = *ops_[size_t(op)];
    x.started = r_.since_start();
    if (!x.sums_in_gradient()) throw std::logic_error("a scheduled collective must reduce in place in the gradient");
    run_collective(x, comm_);
    x.finished = x.decompressed = r_.since_start();  // the sum stays in the gradient: nothing to scatter
    x.decompression_ns = 0;
    r_.launch_order.push_back(op);
    ++finished_;
    scheduler_->finished(op, x.bucket);
    for (int t = x.bucket.first_tensor; t < x.bucket.end_tensor; ++t) {
      --pending_[size_t(t)];
      open_if_done(t);
    }
    launch();
  }

 private:
  void launch() {
    for (int op = scheduler_->next(); op >= 0; op = scheduler_->next()) launched_.push_back(op);
  }
  void open_if_done(int t) {
    if (t >= everywhere_ || pending_[size_t(t)] > 0) return;
    std::lock_guard<std::mutex> lock(r_.mutex);
    r_.gate_open[size_t(t)] = 1;
    r_.changed.notify_all();
  }

  Round& r_;
  Communicator& comm_;
  std::unique_ptr<policy::LaunchScheduler> scheduler_;
  int tensors_;
  std::vector<BucketExchange*> ops_;  // posted everywhere, flush order
  std::vector<int> pending_;          // per tensor: its posted collectives not yet done
  // Launched collectives, in launch order; the first NEGOTIATED_ of them were
  // launched by the time of the last negotiation at a cycle tick. As in
  // Horovod, an operation starts only once a cycle has followed its launch
  // (policy::CreditScheduler::start_ns is the simulator's form of this rule).
  std::deque<int> launched_;
  size_t negotiated_ = 0;
  int everywhere_ = 0, finished_ = 0;
};

void ScheduledSession::run(Round& r, Communicator& comm) {
  Job job(r, comm, scheme_, layout_.tensors());
  while (!job.done()) {
    if (job.must_wait()) {
      // Nothing may start before the next cycle: wait for its tick.
      wait_for_tick(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *origin_).count());
      job.negotiate(/*at_tick=*/true, abandoned_);
    } else {
      // Between ticks too, so that credit a finished collective frees goes to
      // the highest-priority collective posted by then (launched ones wait
      // for the next tick).
      job.negotiate(/*at_tick=*/false, abandoned_);
    }
    job.run_next();
  }
}

bool ScheduledSession::wait_for_tensor(int iteration, int tensor, CommThread& comm,
                                       std::chrono::milliseconds timeout) {
  Round& r = in_flight(iteration);
  std::unique_lock<std::mutex> lock(r.mutex);
  if (r.gate_open[size_t(tensor)]) return false;
  const bool woke =
      r.changed.wait_for(lock, timeout, [&] { return r.gate_open[size_t(tensor)] != 0 || r.ended; });
  if (r.gate_open[size_t(tensor)]) return true;
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
  Round& r = in_flight(iteration);
  comm.wait_for(r.ticket, timeout);
  r.ticket = 0;
  for (int op : r.launch_order) out.push_back(std::move(r.posted[size_t(op)]));
  r.posted.clear();
}

}  // namespace sparsefuse::runtime
