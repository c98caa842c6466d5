#include "runtime/replanner.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsefuse::runtime {

bool RuntimeReplanner::after_iteration(int it, RankEngine& engine, CommThread& comm, std::chrono::milliseconds timeout) {
  if (!active()) return false;
  const std::vector<TimeNs>& ready = engine.ready_offsets();
  ready_sums_.resize(ready.size(), 0.0);
  for (size_t t = 0; t < ready.size(); ++t) ready_sums_[t] += double(ready[t]);
  for (const auto& x : engine.exchanges()) {
    kinds_.push_back(x->bucket.collective);
    samples_.insert(samples_.end(), {double(x->bytes_sent()), double(x->finished - x->started)});
  }
  compressed_elements_ += double(engine.compressed_elements());
  compression_ns_ += double(engine.compression_ns());
  if ((it + 1) % every_ != 0) return false;

  std::vector<double> sums = ready_sums_;
  sums.insert(sums.end(), {compressed_elements_, compression_ns_});
  comm.submit(
      [&](Communicator& c) {
        c.allreduce_sum(sums.data(), int64_t(sums.size()));
        c.allreduce_max(samples_.data(), int64_t(samples_.size()));
      },
      fmt::format("the re-planning measurements after iteration {}", it));
  comm.drain(timeout);
  policy::Measurements m;
  m.workers = comm.size();
  for (size_t t = 0; t < ready_sums_.size(); ++t) {
    m.ready_ns.push_back(TimeNs(std::llround(sums[t] / (double(comm.size()) * every_))));
  }
  for (size_t k = 0; k < kinds_.size(); ++k) {
    m.collectives[kinds_[k]].push_back({int64_t(samples_[2 * k]), TimeNs(std::llround(samples_[2 * k + 1]))});
  }
  m.compressed_elements = int64_t(sums[ready_sums_.size()]);
  m.compression_ns = TimeNs(std::llround(sums[ready_sums_.size() + 1]));
  scheme_.replan(m);
  engine.renew_policy(scheme_);
  ready_sums_.clear(), kinds_.clear(), samples_.clear();
  compressed_elements_ = compression_ns_ = 0;
  return true;
}

}  // namespace sparsefuse::runtime
