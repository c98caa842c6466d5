#include "tools/cli/progress.h"

#include <iostream>

#include <fmt/format.h>

namespace sparsefuse::cli {

namespace {
constexpr std::chrono::seconds kQuiet{2};
}  // namespace

ProgressLine::ProgressLine(std::string job, std::string unit)
    : job_(std::move(job)), unit_(std::move(unit)), start_(Clock::now()), last_(start_) {}

void ProgressLine::operator()(int done, int total) {
  const auto now = Clock::now();
  if (now - start_ < kQuiet || (now - last_ < kQuiet && done < total)) return;
  if (done == total && last_ == start_) return;  // finished before the first report
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done > 0 ? elapsed * double(total - done) / double(done) : 0.0;
  std::cerr << fmt::format("{}: {}/{} {}, {:.0f} s elapsed{}\n", job_, done, total, unit_, elapsed,
                           done < total ? fmt::format(", about {:.0f} s left", left) : "");
}

}  // namespace sparsefuse::cli
