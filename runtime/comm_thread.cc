#include "runtime/comm_thread.h"

#include <fmt/format.h>

namespace sparsefuse::runtime {

CommThread::CommThread(Factory factory) {
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
  }
  wake_.notify_all();
  return ticket;
}

bool CommThread::wait_for(uint64_t ticket, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool already = !error_ && completed_ >= ticket;
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
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, nothing left
      entry = std::move(queue_.front());
      queue_.pop_front();
      if (error_) {  // skip everything after a failed job
        ++completed_;
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
    }
    {
      std::lock_guard lock(mutex_);
      running_.clear();
      ++completed_;
    }
    idle_.notify_all();
  }
  comm.reset();  // MPI_Finalize on this thread
}

}  // namespace sparsefuse::runtime
