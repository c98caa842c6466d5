#include "tools/calibrate/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/input_error.h"

namespace sparsefuse::calibrate {

bool Holdout::holds(const Sample& s) const {
  return (ranks && s.ranks == *ranks) || (min_bytes && s.bytes >= *min_bytes);
}

std::string Holdout::describe() const {
  if (ranks) return fmt::format("ranks = {}", *ranks);
  if (min_bytes) return fmt::format("sizes >= {} B", *min_bytes);
  return "nothing";
}

Holdout default_holdout(const std::vector<Sample>& samples) {
  std::set<int> ranks;
  std::set<double> sizes;
  for (const auto& s : samples) ranks.insert(s.ranks), sizes.insert(s.bytes);
  Holdout h;
  if (ranks.size() >= 2) {
    h.ranks = *ranks.rbegin();
  } else if (sizes.size() >= 8) {
    h.min_bytes = *std::next(sizes.begin(), long(sizes.size() * 3 / 4));
  }
  return h;
}

Calibration calibrate(std::vector<Sample> samples, const Holdout& holdout, const FitOptions& options) {
  std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return std::tie(a.collective, a.ranks, a.bytes) < std::tie(b.collective, b.ranks, b.bytes);
  });
  Calibration c;
  c.holdout = holdout;
  std::map<Collective, std::vector<Sample>> fitted;
  for (const auto& s : samples) {
    if (s.ranks < 2) throw InputError("", "", "a collective over 1 rank moves nothing: calibrate from >= 2 ranks");
    if (!holdout.holds(s)) fitted[s.collective].push_back(s);
  }
  for (const auto& s : samples) {
    if (!fitted.count(s.collective)) {
      throw InputError("", "", fmt::format("every {} row is held out ({}): nothing left to fit",
                                           collective_name(s.collective), holdout.describe()));
    }
  }
  for (auto& [collective, part] : fitted) c.fits.push_back(fit_piecewise(part, options));
  auto allreduce = std::find_if(c.fits.begin(), c.fits.end(),
                                [](const auto& f) { return f.collective == Collective::kAllreduce; });
  for (Collective other : {Collective::kAllgather, Collective::kReduceScatter}) {
    if (allreduce == c.fits.end() || fitted.count(other)) continue;
    PiecewiseFit d = *allreduce;
    d.collective = other;
    c.derived.push_back(d);
  }
  for (const auto& s : samples) {
    auto fit = std::find_if(c.fits.begin(), c.fits.end(), [&](const auto& f) { return f.collective == s.collective; });
    c.rows.push_back({s, fit->predict_us(s.ranks, s.bytes), holdout.holds(s)});
  }
  return c;
}

std::optional<double> median_abs_error(const std::vector<Row>& rows, bool held_out, double min_bytes) {
  std::vector<double> errors;
  for (const auto& r : rows) {
    if (r.held_out == held_out && r.sample.bytes >= min_bytes) errors.push_back(std::abs(r.error()));
  }
  if (errors.empty()) return std::nullopt;
  std::sort(errors.begin(), errors.end());
  size_t n = errors.size();
  return n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
}

}  // namespace sparsefuse::calibrate
