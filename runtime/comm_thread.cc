#include "runtime/comm_thread.h"

#include <fmt/format.h>

namespace sparsefuse::runtime {
namespace {

// A hand-off is awaited by yielding for up to WINDOW before blocking on a
// condition variable. Caught while yielding, a hand-off costs no futex
// wake-up (a 1 MiB allreduce's submit-to-wake fell from 5.6-7.0 to 3.5-5.5 us
// on a 2-vCPU VM: runtime/README.md); yielding, unlike a busy spin, lets any
// other runnable thread of this processor go first.
template <class Ready>
void yield_until(std::chrono::microseconds window, Ready ready) {
  const auto until = std::chrono::steady_clock::now() + window;
  while (!ready() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

}  // namespace

CommThread::CommThread(Factory factory, std::chrono::microseconds hand_off_spin) : hand_off_spin_(hand_off_spin) {
  thread_ = std::thread([this, f = std::move(factory)]() mutable { loop(std::move(f)); });
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return ready_; });
  if (error_) {
    lock.unlock();
    thread_.join();
    std::rethrow_exception(error_);
  }
}

CommThread::~CommThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    stop_seen_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t CommThread::submit(Job job, std::string what) {
  uint64_t ticket;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(job), std::move(what)});
    ticket = ++submitted_;
    submitted_seen_.store(submitted_, std::memory_order_release);
  }
  wake_.notify_all();
  return ticket;
}

bool CommThread::wait_for(uint64_t ticket, std::chrono::milliseconds timeout) {
  // Whether it had to wait is decided before yielding: a job that ends
  // while this thread yields was waited for all the same.
  const auto job_done = [&] {
    return error_seen_.load(std::memory_order_acquire) || completed_seen_.load(std::memory_order_acquire) >= ticket;
  };
  const bool already = job_done() && !error_seen_.load(std::memory_order_acquire);
  if (!already) yield_until(hand_off_spin_, job_done);
  std::unique_lock lock(mutex_);
  bool done = idle_.wait_for(lock, timeout, [&] { return error_ || completed_ >= ticket; });
  if (error_) std::rethrow_exception(error_);
  if (!done) {
    std::string message = fmt::format("{} did not complete within {:g} s ({} more queued): a peer died, hangs, or "
                                      "flushed a different bucket sequence",
                                      running_, double(timeout.count()) / 1000.0, queue_.size());
    if (watch_) message += ". Peers: " + watch_->describe_peers();
    throw CommTimeout(message);
  }
  return !already;
}

std::vector<int64_t> CommThread::allgather(int64_t value, std::string what, std::chrono::milliseconds timeout) {
  std::vector<int64_t> all;
  submit([&](Communicator& c) { all = c.allgather(&value, 1); }, std::move(what));
  drain(timeout);
  return all;
}

void CommThread::set_peer_watch(PeerWatch* watch) {
  std::lock_guard lock(mutex_);
  watch_ = watch;
}

void CommThread::drain(std::chrono::milliseconds timeout) {
  uint64_t last;
  {
    std::lock_guard lock(mutex_);
    last = submitted_;
  }
  wait_for(last, timeout);
}

void CommThread::loop(Factory factory) {
  std::unique_ptr<Communicator> comm;
  try {
    comm = factory();
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
    ready_ = true;
    idle_.notify_all();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    rank_ = comm->rank();
    size_ = comm->size();
    ready_ = true;
  }
  idle_.notify_all();
  while (true) {
    Entry entry;
    // Back here every job taken has completed (or been skipped): one is
    // queued while more were submitted than completed.
    yield_until(hand_off_spin_, [&] {
      return stop_seen_.load(std::memory_order_acquire) ||
             submitted_seen_.load(std::memory_order_acquire) > completed_seen_.load(std::memory_order_relaxed);
    });
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, nothing left
      entry = std::move(queue_.front());
      queue_.pop_front();
      if (error_) {  // skip everything after a failed job
        ++completed_;
        completed_seen_.store(completed_, std::memory_order_release);
        continue;
      }
      running_ = entry.what;
      if (watch_) watch_->job_started(completed_ + 1, running_);
    }
    try {
      entry.job(*comm);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      error_seen_.store(true, std::memory_order_release);
    }
    {
      std::lock_guard lock(mutex_);
      running_.clear();
      ++completed_;
      completed_seen_.store(completed_, std::memory_order_release);
    }
    idle_.notify_all();
  }
  comm.reset();  // MPI_Finalize on this thread
}

}  // namespace sparsefuse::runtime
