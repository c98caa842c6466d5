#include "tools/cli/process_barrier.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <new>
#include <stdexcept>
#include <string>

namespace sparsefuse::cli {

struct ProcessBarrier::Shared {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int parties = 0;
  int arrived = 0;
  uint64_t round = 0;
  bool broken = false;
};

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("process barrier: ") + what + " failed (error " + std::to_string(rc) + ")");
}

timespec deadline_after(std::chrono::milliseconds timeout) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t ns = int64_t(now.tv_nsec) + int64_t(timeout.count() % 1000) * 1'000'000;
  return {now.tv_sec + time_t(timeout.count() / 1000) + time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
}

}  // namespace

ProcessBarrier::ProcessBarrier(int parties, std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (parties < 1) throw std::invalid_argument("process barrier: parties must be >= 1");
  void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::runtime_error("process barrier: mmap failed");
  shared_ = new (memory) Shared;
  shared_->parties = parties;
  pthread_mutexattr_t mutex_attr;
  pthread_mutexattr_init(&mutex_attr);
  pthread_mutexattr_setpshared(&mutex_attr, PTHREAD_PROCESS_SHARED);
  check(pthread_mutex_init(&shared_->mutex, &mutex_attr), "pthread_mutex_init");
  pthread_mutexattr_destroy(&mutex_attr);
  pthread_condattr_t cond_attr;
  pthread_condattr_init(&cond_attr);
  pthread_condattr_setpshared(&cond_attr, PTHREAD_PROCESS_SHARED);
  pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
  check(pthread_cond_init(&shared_->cond, &cond_attr), "pthread_cond_init");
  pthread_condattr_destroy(&cond_attr);
}

// Each forked process unmaps its own view; the objects are never destroyed
// while another process may still use them.
ProcessBarrier::~ProcessBarrier() { munmap(shared_, sizeof(Shared)); }

void ProcessBarrier::wait() {
  Shared& s = *shared_;
  pthread_mutex_lock(&s.mutex);
  bool broken = s.broken;
  if (!broken && ++s.arrived == s.parties) {
    s.arrived = 0;
    ++s.round;
    pthread_cond_broadcast(&s.cond);
  } else if (!broken) {
    const uint64_t round = s.round;
    const timespec deadline = deadline_after(timeout_);
    while (s.round == round && !s.broken) {
      if (pthread_cond_timedwait(&s.cond, &s.mutex, &deadline) == ETIMEDOUT && s.round == round) {
        s.broken = true;  // a party is gone: nobody will complete this round
        pthread_cond_broadcast(&s.cond);
      }
    }
    broken = s.round == round;
  }
  pthread_mutex_unlock(&s.mutex);
  if (broken) throw std::runtime_error("process barrier broken: another process failed or stopped responding");
}

void ProcessBarrier::abandon() {
  pthread_mutex_lock(&shared_->mutex);
  shared_->broken = true;
  pthread_cond_broadcast(&shared_->cond);
  pthread_mutex_unlock(&shared_->mutex);
}

}  // namespace sparsefuse::cli
