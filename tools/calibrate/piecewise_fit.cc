#include "tools/calibrate/piecewise_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "common/input_error.h"

namespace sparsefuse::calibrate {

double latency_steps(Collective collective, int ranks, Law law) {
  const double p = ranks, twice = collective == Collective::kAllreduce ? 2.0 : 1.0;
  switch (law) {
    case Law::kRing: return twice * (p - 1);
    case Law::kRecursiveDoubling: return std::log2(p);
    case Law::kRabenseifner: return twice * std::log2(p);
  }
  return 0;
}

double byte_factor(Collective collective, int ranks, Law law) {
  const double p = ranks, twice = collective == Collective::kAllreduce ? 2.0 : 1.0;
  // Recursive doubling sends the whole buffer every step when it reduces; an
  // allgather or reduce-scatter moves each rank's part once whatever the law.
  if (law == Law::kRecursiveDoubling && collective == Collective::kAllreduce) return std::log2(p);
  return twice * (p - 1) / p;
}

std::string law_name(Law law) {
  switch (law) {
    case Law::kRing: return "ring";
    case Law::kRecursiveDoubling: return "recursive-doubling";
    case Law::kRabenseifner: return "rabenseifner";
  }
  return "unknown";
}

double PiecewiseFit::predict_us(int ranks, double bytes) const {
  const Segment* use = &segments.front();
  for (const auto& s : segments) {
    if (bytes >= s.from_bytes) use = &s;
  }
  double per_byte = use->bandwidth_gbps_bytes > 0 ? 1e-3 / use->bandwidth_gbps_bytes : 0;  // us per byte
  return use->alpha_us * latency_steps(collective, ranks, use->law) +
         per_byte * byte_factor(collective, ranks, use->law) * bytes;
}

namespace {

// One sample in relative terms: with u = L/t and v = F*bytes/t the relative
// residual of (alpha, g = 1/bandwidth) is alpha*u + g*v - 1.
struct Scaled {
  double u, v;
};

// Weighted least squares of alpha*u + g*v = 1 with alpha, g >= 0: the free
// solution when it is non-negative, else the better one-parameter fit.
std::pair<double, double> weighted_fit(const std::vector<Scaled>& xs, const std::vector<double>& w) {
  double uu = 0, uv = 0, vv = 0, u1 = 0, v1 = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    uu += w[i] * xs[i].u * xs[i].u, uv += w[i] * xs[i].u * xs[i].v, vv += w[i] * xs[i].v * xs[i].v;
    u1 += w[i] * xs[i].u, v1 += w[i] * xs[i].v;
  }
  std::vector<std::pair<double, double>> candidates = {{u1 / uu, 0.0}, {0.0, vv > 0 ? v1 / vv : 0.0}};
  double det = uu * vv - uv * uv;
  if (det > 1e-12 * uu * vv) {
    double a = (u1 * vv - v1 * uv) / det, g = (v1 * uu - u1 * uv) / det;
    if (a >= 0 && g >= 0) candidates.push_back({a, g});
  }
  auto cost = [&](std::pair<double, double> c) {
    double sum = 0;
    for (size_t i = 0; i < xs.size(); ++i) sum += w[i] * std::pow(c.first * xs[i].u + c.second * xs[i].v - 1, 2);
    return sum;
  };
  return *std::min_element(candidates.begin(), candidates.end(), [&](auto a, auto b) { return cost(a) < cost(b); });
}

}  // namespace

double fit_segment(const std::vector<Sample>& samples, Segment& segment) {
  // At one rank count every law is the same line with rescaled constants:
  // keep the ring's. Across rank counts the law that fits best is the
  // algorithm the library ran there (MPI switches by size and node count).
  bool several_ranks = std::any_of(samples.begin(), samples.end(),
                                   [&](const Sample& x) { return x.ranks != samples.front().ranks; });
  double best = std::numeric_limits<double>::infinity();
  for (Law law : {Law::kRing, Law::kRecursiveDoubling, Law::kRabenseifner}) {
    if (law != Law::kRing && !several_ranks) break;
    Segment candidate = segment;
    candidate.law = law;
    double error = fit_segment_with_law(samples, candidate);
    if (error < best * (1 - 1e-9)) best = error, segment = candidate;
  }
  return best;
}

double fit_segment_with_law(const std::vector<Sample>& samples, Segment& segment) {
  std::vector<Scaled> xs;
  for (const auto& x : samples) {
    xs.push_back({latency_steps(x.collective, x.ranks, segment.law) / x.time_us,
                  byte_factor(x.collective, x.ranks, segment.law) * x.bytes / x.time_us});
  }
  // Least absolute relative error by iteratively reweighted least squares:
  // published tables carry single wild rows (68 us among 13-17 us), and a
  // squared loss lets one of them decide the fit and the ranges.
  std::vector<double> w(xs.size(), 1.0);
  std::pair<double, double> fit;
  double total = 0;
  for (int iteration = 0; iteration < 12; ++iteration) {
    fit = weighted_fit(xs, w);
    total = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      double r = std::abs(fit.first * xs[i].u + fit.second * xs[i].v - 1);
      total += r;
      w[i] = 1 / std::max(r, 1e-4);
    }
  }
  segment.alpha_us = fit.first;
  segment.bandwidth_gbps_bytes = fit.second > 0 ? 1e-3 / fit.second : 0;
  return total;
}

PiecewiseFit fit_piecewise(const std::vector<Sample>& samples, const FitOptions& options) {
  std::map<double, std::vector<Sample>> by_size;
  for (const auto& s : samples) by_size[s.bytes].push_back(s);
  std::vector<std::vector<Sample>> groups;
  for (auto& [bytes, group] : by_size) groups.push_back(group);
  const int m = int(groups.size()), min_len = std::max(1, options.min_sizes_per_segment);
  if (m < min_len) {
    throw InputError("", "", fmt::format("{} distinct sizes: a fit needs at least {}", m, min_len));
  }
  auto segment_over = [&](int i, int j, Segment& seg) {  // sizes i..j inclusive
    std::vector<Sample> part;
    for (int k = i; k <= j; ++k) part.insert(part.end(), groups[k].begin(), groups[k].end());
    seg.first_bytes = groups[i].front().bytes, seg.last_bytes = groups[j].front().bytes;
    return fit_segment(part, seg);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const int kmax = std::max(1, std::min(options.max_segments, m / min_len));
  // best[k][j]: least cost of sizes 0..j-1 in k segments; from[k][j]: where the last starts.
  std::vector<std::vector<double>> best(kmax + 1, std::vector<double>(m + 1, inf));
  std::vector<std::vector<int>> from(kmax + 1, std::vector<int>(m + 1, -1));
  best[0][0] = 0;
  for (int j = 1; j <= m; ++j) {
    for (int i = 0; i + min_len <= j; ++i) {
      Segment seg;
      double c = segment_over(i, j - 1, seg);
      for (int k = 1; k <= kmax; ++k) {
        if (best[k - 1][i] + c < best[k][j]) best[k][j] = best[k - 1][i] + c, from[k][j] = i;
      }
    }
  }
  // Akaike's criterion for a Laplace (absolute-error) likelihood, three
  // parameters per segment (alpha, bandwidth, its start): more ranges only
  // where they buy a clearly better fit.
  const double n = double(samples.size());
  int chosen = 1;
  double chosen_aic = inf;
  for (int k = 1; k <= kmax; ++k) {
    if (best[k][m] == inf) continue;
    double aic = 2 * n * std::log(std::max(best[k][m], 1e-9) / n) + 2 * 3.0 * k;
    if (aic < chosen_aic) chosen_aic = aic, chosen = k;
  }
  PiecewiseFit fit;
  fit.collective = samples.front().collective;
  for (int k = chosen, j = m; k > 0; j = from[k][j], --k) {
    Segment seg;
    segment_over(from[k][j], j - 1, seg);
    fit.segments.insert(fit.segments.begin(), seg);
  }
  for (size_t k = 1; k < fit.segments.size(); ++k) {
    // The switch lies between the two measured sizes; the geometric mean is
    // as far from each in log(size) as the data allow us to say.
    fit.segments[k].from_bytes = std::sqrt(fit.segments[k - 1].last_bytes * fit.segments[k].first_bytes);
  }
  return fit;
}

}  // namespace sparsefuse::calibrate
