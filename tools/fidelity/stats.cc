#include "tools/fidelity/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "common/median.h"

namespace sparsefuse::fidelity {

double median(std::vector<double> v) { return v.empty() ? 0 : sparsefuse::median(std::move(v)); }

std::optional<double> kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return std::nullopt;
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) { ties_a += 1; continue; }
      if (db == 0) { ties_b += 1; continue; }
      (da * db > 0 ? concordant : discordant) += 1;
    }
  }
  double denominator = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  if (denominator == 0) return std::nullopt;
  return (concordant - discordant) / denominator;
}

std::vector<const Point*> summary_points(const Case& c) {
  std::vector<const Point*> all, large;
  for (const auto& p : c.points) {
    all.push_back(&p);
    if (p.bytes >= (1 << 20)) large.push_back(&p);
  }
  // Three sizes at least: OSU sweeps end at 1 MiB, and one row is no median.
  return c.kind == "collective" && large.size() >= 3 ? large : all;
}

double summary_error(const Case& c) {
  std::vector<double> errors;
  for (const Point* p : summary_points(c)) errors.push_back(std::abs(p->error()));
  if (c.kind == "collective") return median(errors);
  double sum = 0;
  for (double e : errors) sum += e;
  return errors.empty() ? 0 : sum / double(errors.size());
}

std::vector<std::pair<int, double>> method_ranking_taus(const Case& c) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> by_workers;
  for (const auto& p : c.points) {
    by_workers[p.workers].first.push_back(p.measured);
    by_workers[p.workers].second.push_back(p.predicted);
  }
  std::vector<std::pair<int, double>> out;
  for (const auto& [workers, lists] : by_workers) {
    if (auto tau = kendall_tau(lists.first, lists.second)) out.push_back({workers, *tau});
  }
  return out;
}

}  // namespace sparsefuse::fidelity
