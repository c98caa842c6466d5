#include "model/netmodel/calibrated.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/input_error.h"

namespace sparsefuse::netmodel {

namespace {

// Linear interpolation of log(y) over log(x) between (x0, y0) and (x1, y1).
double log_log(double x0, double y0, double x1, double y1, double x) {
  double t = (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0));
  return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
}

}  // namespace

double interpolate_bytes(const std::vector<Measurement>& sorted, double bytes) {
  if (bytes <= 0) return 0;
  const Measurement& first = sorted.front();
  const Measurement& last = sorted.back();
  if (bytes <= first.bytes) return first.time_us;
  if (bytes >= last.bytes) {
    if (sorted.size() == 1) return last.time_us * bytes / last.bytes;
    const Measurement& before = sorted[sorted.size() - 2];
    double per_byte = std::max(0.0, (last.time_us - before.time_us) / (last.bytes - before.bytes));
    return last.time_us + (bytes - last.bytes) * per_byte;
  }
  auto upper = std::upper_bound(sorted.begin(), sorted.end(), bytes,
                                [](double b, const Measurement& m) { return b < m.bytes; });
  const Measurement& hi = *upper;
  const Measurement& lo = *(upper - 1);
  return log_log(lo.bytes, lo.time_us, hi.bytes, hi.time_us, bytes);
}

CalibratedTable CalibratedTable::parse(const JsonNode& node) {
  node.expect_object();
  node.check_keys({"allreduce", "allgather", "reduce_scatter"});
  CalibratedTable table;
  table.file_ = node.file();
  table.pointer_ = node.pointer();
  for (Collective c : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter}) {
    auto list = node.optional_child(std::string(collective_name(c)));
    if (!list) continue;
    size_t n = list->array_size();
    if (n == 0) list->fail("expected at least one {\"ranks\", \"bytes\", \"time_us\"} measurement");
    auto& by_ranks = table.tables_[c];
    for (size_t i = 0; i < n; ++i) {
      JsonNode entry = list->element(i);
      entry.expect_object();
      entry.check_keys({"ranks", "bytes", "time_us"});
      int ranks = int(entry.child("ranks").as_int(1, 1 << 24));
      double bytes = entry.child("bytes").as_number(0, 1e18, /*min_exclusive=*/true);
      double time = entry.child("time_us").as_number(0, 1e15, /*min_exclusive=*/true);
      auto& sizes = by_ranks[ranks];
      auto same = std::find_if(sizes.begin(), sizes.end(), [&](const Measurement& m) { return m.bytes == bytes; });
      if (same != sizes.end()) {
        entry.fail(fmt::format("a second measurement for {} ranks and {} bytes", ranks, bytes));
      }
      sizes.push_back({bytes, time});
    }
    for (auto& [ranks, sizes] : by_ranks) {
      std::sort(sizes.begin(), sizes.end(), [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; });
    }
  }
  return table;
}

CalibratedTable CalibratedTable::load(const std::string& path) {
  Json document = load_json_file(path);
  JsonNode root(document, path, "");
  root.expect_object();
  return parse(root.child("collectives"));
}

std::vector<int> CalibratedTable::rank_counts(Collective collective) const {
  std::vector<int> out;
  auto it = tables_.find(collective);
  if (it != tables_.end()) {
    for (const auto& entry : it->second) out.push_back(entry.first);
  }
  return out;
}

double CalibratedTable::time_us(Collective collective, int ranks, double bytes) const {
  auto it = tables_.find(collective);
  if (it == tables_.end()) {
    throw InputError(file_, pointer_, fmt::format("no measurements for {} (needed for {} ranks)", collective_name(collective), ranks));
  }
  if (bytes <= 0) return 0;
  const auto& by_ranks = it->second;
  auto at = [&](auto iter) { return interpolate_bytes(iter->second, bytes); };
  auto hi = by_ranks.lower_bound(ranks);
  if (hi != by_ranks.end() && hi->first == ranks) return at(hi);
  if (hi == by_ranks.begin()) return at(hi);  // fewer ranks than any measurement: clamp
  if (hi == by_ranks.end()) {
    auto last = std::prev(by_ranks.end());
    if (by_ranks.size() == 1) return at(last);
    auto before = std::prev(last);
    double t_last = at(last);
    return std::max(t_last, log_log(before->first, at(before), last->first, t_last, ranks));
  }
  auto lo = std::prev(hi);
  return log_log(lo->first, at(lo), hi->first, at(hi), ranks);
}

}  // namespace sparsefuse::netmodel
