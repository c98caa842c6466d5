#include "runtime/offload_pool.h"

#include <stdexcept>

namespace sparsefuse::runtime {

OffloadPool::OffloadPool(const ModelLayout& layout, int cpu_threads) {
  if (cpu_threads < 1) throw std::invalid_argument("the CPU offload pool needs at least one thread");
  workers_.emplace_back([this, &layout] { loop(side_, layout); });
  for (int i = 0; i < cpu_threads; ++i) workers_.emplace_back([this, &layout] { loop(cpu_, layout); });
}

OffloadPool::~OffloadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

uint64_t OffloadPool::submit(policy::Placement placement, Job job) {
  if (placement != policy::Placement::kGpuSideStream && placement != policy::Placement::kCpuOffload) {
    throw std::logic_error("only side-stream and CPU-offload selections run off the backward thread");
  }
  uint64_t id;
  {
    std::lock_guard lock(mutex_);
    id = ++submitted_;
    (placement == policy::Placement::kCpuOffload ? cpu_ : side_).queue.emplace_back(id, std::move(job));
  }
  wake_.notify_all();
  return id;
}

void OffloadPool::wait(uint64_t id) {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return error_ || finished_.count(id) > 0; });
  if (error_) std::rethrow_exception(error_);
}

void OffloadPool::wait_all() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return error_ || finished_.size() == submitted_ - forgotten_; });
  if (error_) std::rethrow_exception(error_);
  forgotten_ = submitted_;
  finished_.clear();
}

void OffloadPool::loop(Lane& lane, const ModelLayout& layout) {
  Compressor compressor(layout);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !lane.queue.empty(); });
    if (lane.queue.empty()) return;  // stopping, nothing left
    auto [id, job] = std::move(lane.queue.front());
    lane.queue.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      job(compressor);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    finished_.insert(id);
    done_.notify_all();
  }
}

}  // namespace sparsefuse::runtime
