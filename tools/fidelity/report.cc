#include "tools/fidelity/report.h"

#include <cmath>

#include <fmt/format.h>

#include "tools/fidelity/stats.h"

namespace sparsefuse::fidelity {

namespace {

std::string summary_over(const Case& c) {
  return c.kind == "collective" && summary_points(c).size() < c.points.size() ? "median, >= 1 MiB"
         : c.kind == "collective"                                               ? "median, all sizes"
                                                                                : "mean";
}

std::string x_label(const Case& c, const Point& p) {
  if (c.kind == "collective") return fmt::format("{:.0f} B", p.bytes);
  return fmt::format("{} @ {}", p.scheme, p.workers);
}

Json point_json(const Case& c, const Point& p) {
  Json j = {{"measured", p.measured}, {"predicted", p.predicted}, {"error", p.error()}};
  if (c.kind == "collective") j["bytes"] = p.bytes, j["held_out"] = p.held_out;
  else j["scheme"] = p.scheme, j["workers"] = p.workers;
  return j;
}

}  // namespace

std::map<std::string, double> category_mae(const std::vector<Case>& cases) {
  std::map<std::string, std::pair<double, int>> sums;
  for (const auto& c : cases) {
    for (const Point* p : summary_points(c)) sums[c.category].first += std::abs(p->error()), sums[c.category].second++;
  }
  std::map<std::string, double> out;
  for (const auto& [category, s] : sums) out[category] = s.first / s.second;
  return out;
}

Json report_json(const std::vector<Case>& cases, const std::map<std::string, double>& bounds) {
  Json list = Json::array();
  for (const auto& c : cases) {
    Json points = Json::array(), taus = Json::array();
    for (const auto& p : c.points) points.push_back(point_json(c, p));
    for (auto [workers, tau] : method_ranking_taus(c)) taus.push_back({{"workers", workers}, {"tau", tau}});
    Json j = {{"id", c.id}, {"measurement", c.measurement}, {"category", c.category}, {"role", c.role},
              {"calibrates", c.calibrates}, {"kind", c.kind}, {"metric", c.metric}, {"note", c.note},
              {"summary_error", summary_error(c)}, {"summary_over", summary_over(c)}, {"points", points}};
    if (c.compare_methods) j["kendall_tau"] = taus;  // only where a case compares methods
    if (bounds.count(c.id)) j["bound"] = bounds.at(c.id);
    list.push_back(j);
  }
  return {{"format", "sparsefuse-fidelity/1"}, {"cases", list}, {"category_mae", category_mae(cases)}};
}

std::string format_points(const Case& c) {
  std::string out = fmt::format("{} ({}, {}; {})\n", c.id, c.category, c.role, c.metric);
  out += fmt::format("  {:<24} {:>12} {:>12} {:>9}\n", c.kind == "collective" ? "size" : "scheme @ workers",
                     "measured", "predicted", "error");
  for (const auto& p : c.points) {
    // Long OSU sweeps (4 KiB steps) print at powers of two; fidelity.json has every row.
    bool power_of_two = std::fmod(std::log2(p.bytes), 1.0) == 0;
    if (c.kind == "collective" && c.points.size() > 100 && !power_of_two) continue;
    out += fmt::format("  {:<24} {:>12.4g} {:>12.4g} {:>+8.1f}%{}\n", x_label(c, p), p.measured, p.predicted,
                       100 * p.error(), p.held_out ? "  held out" : "");
  }
  if (!c.compare_methods) return out;
  for (auto [workers, tau] : method_ranking_taus(c)) out += fmt::format("  Kendall tau at {} workers: {:+.2f}\n", workers, tau);
  return out;
}

std::vector<std::string> bound_violations(const std::vector<Case>& cases, const std::map<std::string, double>& bounds) {
  std::vector<std::string> out;
  for (const auto& c : cases) {
    if (c.role != "calibration") continue;
    auto b = bounds.find(c.id);
    if (b == bounds.end()) {
      out.push_back(c.id + ": no recorded bound (add one to bounds.json)");
    } else if (summary_error(c) > b->second) {
      out.push_back(fmt::format("{}: |error| {:.1f} % exceeds its bound {:.1f} %", c.id, 100 * summary_error(c),
                                100 * b->second));
    }
  }
  return out;
}

}  // namespace sparsefuse::fidelity
