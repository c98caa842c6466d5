// Horovod-style negotiation for coordinated schemes (horovod,
// rgmerge-dynamic), whose workers only report readiness and a coordinator
// decides the fused collectives for all of them.
//
// As in Horovod's background loop, one job per iteration runs on the rank's
// communication thread, cycle by cycle on the rank's iteration clock (ticks
// at k x the scheme's cycle, policy::HorovodScheme::cycle_ns(), anchored at
// the iteration start, as the simulator anchors them):
//  1. request: every rank reports how many of its tensors backward has made
//     ready (an allgather of one count; tensors become ready in backward
//     order, so a count is the whole ready set); a tensor ready on every
//     rank is stamped with this cycle's tick;
//  2. response: rank 0 alone feeds the stamped tensors to the scheme's
//     policy::Coordinator and resolves; the flushes that cover only stamped
//     tensors and were not decided before are this cycle's response (later
//     tensors are reported as never ready, so no decided flush can change).
//     Rank 0 sends the response to every rank (an allreduce of doubles to
//     which the other ranks contribute zeros: a broadcast);
//  3. every rank performs the response in order: the agreed selection when
//     the flush compresses (here, on the communication thread: a side stream
//     that does not delay backward), then the collective.
// The loop ends once every tensor is decided; every rank runs the same
// cycles because the response tells each how far the decisions got.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "policy/compression.h"
#include "policy/scheme.h"
#include "runtime/comm_thread.h"
#include "runtime/exchange.h"

namespace sparsefuse::runtime {

// What a negotiation cycle needs from the rank's engine (called on the
// communication thread, while backward runs on the engine's thread; the
// engine touches none of this state until finish() returns).
class CoordinatedExecutor {
 public:
  virtual ~CoordinatedExecutor() = default;
  // Nanoseconds since the iteration start.
  virtual TimeNs since_start() const = 0;
  // Runs an agreed selection now; returns its duration.
  virtual TimeNs compress_agreed(const policy::CompressionRequest& request) = 0;
  // The bucket's exchange with its payload filled (bucket_segments, fill_payload).
  virtual std::unique_ptr<BucketExchange> make_exchange(const policy::Bucket& bucket, TimeNs when) = 0;
  // Runs the exchange's collective and scatters its result into the average.
  virtual void execute(BucketExchange& exchange, Communicator& comm) = 0;
};

// The flush as a fixed list of numbers (the response sent to every rank),
// and back. Integers travel exactly (below 2^53), as does the density.
std::vector<double> encode_flush(const policy::CoordinatedFlush& flush);
policy::CoordinatedFlush decode_flush(const double* fields);
constexpr int kFlushFields = 27;

class CoordinatedSession {
 public:
  // COORDINATOR: the scheme's (only rank 0's is consulted); TENSORS: the
  // model's count; CYCLE_NS: the period (0: negotiate as soon as anything is
  // newly ready everywhere).
  CoordinatedSession(std::unique_ptr<policy::Coordinator> coordinator, int tensors, TimeNs cycle_ns);
  ~CoordinatedSession();

  // The per-worker policy the engine drives: it only records readiness.
  policy::WorkerPolicy& reporter();

  // Queues ITERATION's negotiation loop on COMM (after the engine called
  // reporter().begin_iteration and started the iteration clock at START).
  void start(int iteration, CommThread& comm, CoordinatedExecutor& engine,
             std::chrono::steady_clock::time_point start);
  // Waits for the loop; appends the exchanges it ran, in order, to OUT.
  void finish(CommThread& comm, std::chrono::milliseconds timeout, std::vector<std::unique_ptr<BucketExchange>>& out);

  // How many cycles the last iteration negotiated.
  int cycles() const { return cycles_; }

 private:
  class Reporter;
  void run_cycles(Communicator& comm, CoordinatedExecutor& engine, std::chrono::steady_clock::time_point start);
  // Rank 0: this cycle's new flushes, encoded after their count, into response_.
  void decide(int everywhere);
  void perform(Communicator& comm, CoordinatedExecutor& engine);

  std::unique_ptr<policy::Coordinator> coordinator_;
  std::unique_ptr<Reporter> reporter_;
  int tensors_;
  TimeNs cycle_ns_;
  int iteration_ = 0, decided_ = 0, cycles_ = 0;
  std::vector<TimeNs> stamped_;  // per tensor: the tick of the cycle that found it ready everywhere
  std::vector<std::unique_ptr<BucketExchange>> done_;
  std::vector<double> response_;  // one cycle's; reused
  std::vector<policy::CoordinatedFlush> flushes_;  // rank 0's resolution; reused
  uint64_t ticket_ = 0;
};

}  // namespace sparsefuse::runtime
