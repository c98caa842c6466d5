#include "tools/cli/process_barrier.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace sparsefuse::cli {
namespace {

using namespace std::chrono_literals;

// Two processes, 50 rounds: at each round the child records its round in a
// shared counter before the barrier; the parent, after the same barrier,
// must see the child at least at that round (it cannot run ahead).
TEST(ProcessBarrier, NoProcessPassesARoundBeforeTheOthersReachIt) {
  ProcessBarrier barrier(2, 10s);
  auto* child_round = static_cast<std::atomic<int>*>(
      mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(child_round, MAP_FAILED);
  new (child_round) std::atomic<int>(-1);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (int round = 0; round < 50; ++round) {
      if (round % 7 == 0) std::this_thread::sleep_for(2ms);  // late now and then
      child_round->store(round);
      barrier.wait();
    }
    _exit(0);
  }
  int behind = 0;
  for (int round = 0; round < 50; ++round) {
    barrier.wait();
    behind += child_round->load() < round;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(behind, 0);
  munmap(child_round, sizeof(std::atomic<int>));
}

// A party that fails abandons the barrier: the one waiting for it throws
// instead of hanging, and so does every later wait.
TEST(ProcessBarrier, AnAbandonedBarrierStopsTheOthers) {
  ProcessBarrier barrier(2, 10s);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::this_thread::sleep_for(20ms);
    barrier.abandon();
    _exit(0);
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(barrier.wait(), std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_THROW(barrier.wait(), std::runtime_error);
  waitpid(pid, nullptr, 0);
}

// A party that never comes (it died without abandoning): the wait times out
// and breaks the barrier.
TEST(ProcessBarrier, AWaitForAPartyThatNeverComesTimesOut) {
  ProcessBarrier barrier(2, 50ms);
  EXPECT_THROW(barrier.wait(), std::runtime_error);
  EXPECT_THROW(barrier.wait(), std::runtime_error);
  ProcessBarrier alone(1, 50ms);
  alone.wait();  // one party: every wait completes its round at once
  EXPECT_THROW(ProcessBarrier(0, 50ms), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::cli
