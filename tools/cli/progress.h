// Progress of a long single job on stderr: silent for the first two
// seconds, then a line at most every two seconds ("simulate: 37/102
// iterations, 40 s elapsed, about 70 s left"), so a piped log stays readable.
#pragma once

#include <chrono>
#include <string>

namespace sparsefuse::cli {

class ProgressLine {
 public:
  ProgressLine(std::string job, std::string unit);
  void operator()(int done, int total);

 private:
  using Clock = std::chrono::steady_clock;
  std::string job_, unit_;
  Clock::time_point start_, last_;
};

}  // namespace sparsefuse::cli
