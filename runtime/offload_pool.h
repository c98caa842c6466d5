// Compression that does not run on the rank's backward thread, as the
// simulator's worker streams model it: a GPU side stream (one thread, jobs
// in submission order) for placement "gpu-side", and a pool of CPU offload
// threads (the scenario's compression.cpu_threads) for "cpu-offload". Each
// thread owns its Compressor (a top-k workspace is not shared). The engine
// queues a selection here and goes on with backward; the flush that carries
// the selection waits for it on the communication thread before packing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "policy/compression.h"
#include "runtime/compressor.h"

namespace sparsefuse::runtime {

class OffloadPool {
 public:
  using Job = std::function<void(Compressor&)>;

  OffloadPool(const ModelLayout& layout, int cpu_threads);
  // Runs what is queued, then joins the threads.
  ~OffloadPool();
  OffloadPool(const OffloadPool&) = delete;
  OffloadPool& operator=(const OffloadPool&) = delete;

  // Queues JOB on the side stream (kGpuSideStream) or the CPU pool
  // (kCpuOffload); returns its id (ids count up from 1).
  uint64_t submit(policy::Placement placement, Job job);
  // Blocks until job ID has run; rethrows the exception a job threw.
  void wait(uint64_t id);
  // Blocks until every job submitted so far has run, then forgets them
  // (the engine calls it once per iteration, when nothing waits any more).
  void wait_all();
  int cpu_threads() const { return int(workers_.size()) - 1; }

 private:
  struct Lane {
    std::deque<std::pair<uint64_t, Job>> queue;
  };
  void loop(Lane& lane, const ModelLayout& layout);

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Lane side_, cpu_;
  std::set<uint64_t> finished_;  // ids run since the last wait_all
  std::exception_ptr error_;
  uint64_t submitted_ = 0, forgotten_ = 0;  // forgotten_: ids cleared by wait_all
  bool stop_ = false;
  std::vector<std::thread> workers_;  // the side stream, then the CPU threads
};

}  // namespace sparsefuse::runtime
