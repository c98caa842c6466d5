// A barrier for processes forked from one parent: `profile-kernels
// --processes P` times every point in P processes at once, as P ranks
// compress the same tensor at about the same time in training, instead of
// letting each process's large measurements fall on the others' small ones.
// It lives in an anonymous shared mapping made before the fork, so no name
// and no clean-up outlive the processes.
#pragma once

#include <chrono>

namespace sparsefuse::cli {

class ProcessBarrier {
 public:
  // For PARTIES processes; a wait longer than TIMEOUT breaks the barrier (a
  // process that died without abandoning it).
  ProcessBarrier(int parties, std::chrono::milliseconds timeout);
  ~ProcessBarrier();
  ProcessBarrier(const ProcessBarrier&) = delete;
  ProcessBarrier& operator=(const ProcessBarrier&) = delete;

  // Returns once every party has called it this round. Throws
  // std::runtime_error when the barrier is broken: abandoned by a party, or
  // a wait timed out (which breaks it for every party).
  void wait();
  // Breaks the barrier: every party waiting now or later throws. For a party
  // that fails, so that the others stop instead of hanging.
  void abandon();

 private:
  struct Shared;
  Shared* shared_ = nullptr;
  std::chrono::milliseconds timeout_;
};

}  // namespace sparsefuse::cli
