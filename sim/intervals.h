// Measures of time covered by sets of intervals, for the breakdown of a
// worker's tail (the time between its backward end and its optimizer start).
#pragma once

#include <algorithm>
#include <vector>

#include "sim/worker.h"

namespace sparsefuse::sim {

// Merges overlapping intervals of an already sorted vector in place, dropping empty ones.
inline void merge_sorted_intervals(std::vector<Interval>& v) {
  size_t out = 0;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (out && iv.first <= v[out - 1].second) v[out - 1].second = std::max(v[out - 1].second, iv.second);
    else v[out++] = iv;
  }
  v.resize(out);
}

// Sorts and merges overlapping intervals in place.
inline void merge_intervals(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  merge_sorted_intervals(v);
}

// A merged interval set with prefix sums: covered time inside [lo, hi) in O(log n).
class CoveredTime {
 public:
  void assign(std::vector<Interval> intervals) {
    merge_intervals(intervals);
    intervals_ = std::move(intervals);
    prefix_.assign(intervals_.size() + 1, 0);
    for (size_t i = 0; i < intervals_.size(); ++i) prefix_[i + 1] = prefix_[i] + intervals_[i].second - intervals_[i].first;
  }
  TimeNs within(TimeNs lo, TimeNs hi) const { return hi <= lo ? 0 : before(hi) - before(lo); }
  const std::vector<Interval>& intervals() const { return intervals_; }

 private:
  TimeNs before(TimeNs t) const {  // covered time in (-inf, t)
    auto it = std::upper_bound(intervals_.begin(), intervals_.end(), Interval{t, INT64_MAX});
    size_t i = size_t(it - intervals_.begin());
    if (i == 0) return 0;
    const Interval& last = intervals_[i - 1];
    return prefix_[i - 1] + std::min(t, last.second) - last.first;
  }
  std::vector<Interval> intervals_;
  std::vector<TimeNs> prefix_;
};

}  // namespace sparsefuse::sim
