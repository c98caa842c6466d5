// The one thread per rank that talks to the network. Every collective the
// engine needs is submitted here as a job and runs strictly in submission
// order — the policies make every rank flush the same bucket sequence, so
// executing it FIFO keeps the ranks' collectives matched — while the
// engine's thread goes on replaying backward and compressing. The
// communicator is created and destroyed on this thread, so it is the only
// thread that calls MPI.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/peer_watch.h"

namespace sparsefuse::runtime {

// A job did not finish in time: a peer died, hangs, or flushed a different
// bucket sequence. The job may still be blocked inside the network library,
// so the only safe reaction is to end the process (the CLI exits 1, and
// mpirun then ends the other ranks).
class CommTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CommThread {
 public:
  using Factory = std::function<std::unique_ptr<Communicator>()>;
  using Job = std::function<void(Communicator&)>;

  // How long a hand-off is awaited by yielding before blocking on a
  // condition variable (comm_thread.cc says why).
  static constexpr std::chrono::microseconds kHandOffSpin{200};

  // Starts the thread and creates the communicator on it; throws what the
  // factory threw. HAND_OFF_SPIN: the yielding window (tests lengthen it).
  explicit CommThread(Factory factory, std::chrono::microseconds hand_off_spin = kHandOffSpin);
  // Runs the queued jobs, then destroys the communicator on the thread.
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Queues JOB; WHAT names it in timeout messages. Returns its ticket for
  // wait_for (tickets count up from 1 in submission order).
  uint64_t submit(Job job, std::string what);
  // Waits until the job with TICKET, and so every job before it, has run.
  // Rethrows the first exception a job threw (later jobs are then skipped: a
  // rank whose collectives failed must not start the next one); throws
  // CommTimeout naming the running job if that takes longer than TIMEOUT.
  // Returns whether it had to wait (false: the job had already run).
  bool wait_for(uint64_t ticket, std::chrono::milliseconds timeout);
  // wait_for the last job submitted.
  void drain(std::chrono::milliseconds timeout);
  // Every rank's VALUE, rank-major: one allgather queued as the job WHAT and
  // waited for (everything queued before it runs first).
  std::vector<int64_t> allgather(int64_t value, std::string what, std::chrono::milliseconds timeout);
  // Records every job it starts in WATCH (which must outlive this thread's
  // jobs) and names the peers' state in timeout messages.
  void set_peer_watch(PeerWatch* watch);

 private:
  struct Entry {
    Job job;
    std::string what;
  };
  void loop(Factory factory);

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Entry> queue_;
  std::string running_;  // the job being executed ("" when idle)
  std::exception_ptr error_;
  uint64_t submitted_ = 0, completed_ = 0;  // jobs queued and jobs run (or skipped) so far
  // Copies of submitted_, completed_, stop_ and error_ != nullptr, written
  // under mutex_, read without it while a hand-off is awaited by yielding
  // (comm_thread.cc).
  std::atomic<uint64_t> submitted_seen_{0}, completed_seen_{0};
  std::atomic<bool> stop_seen_{false}, error_seen_{false};
  const std::chrono::microseconds hand_off_spin_;
  PeerWatch* watch_ = nullptr;
  bool ready_ = false, stop_ = false;
  int rank_ = 0, size_ = 1;
  std::thread thread_;
};

}  // namespace sparsefuse::runtime
