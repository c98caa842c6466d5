// The summary table, as text and as Markdown (the README's "How accurate is it").
#include <fmt/format.h>

#include "tools/fidelity/report.h"
#include "tools/fidelity/stats.h"

namespace sparsefuse::fidelity {

namespace {

std::string taus_of(const Case& c) {
  std::string out;
  if (!c.compare_methods) return out;
  for (auto [workers, tau] : method_ranking_taus(c)) out += fmt::format("{}{}: {:+.2f}", out.empty() ? "" : ", ", workers, tau);
  return out.empty() ? "" : out;
}

std::string bound_of(const Case& c, const std::map<std::string, double>& bounds) {
  auto b = bounds.find(c.id);
  return b == bounds.end() ? "" : fmt::format("{:.1f} %", 100 * b->second);
}

}  // namespace

std::string format_summary(const std::vector<Case>& cases, const std::map<std::string, double>& bounds) {
  std::string out = fmt::format("{:<44} {:<16} {:<11} {:>6} {:>9} {:>8}  {}\n", "case", "category", "role", "points",
                                "|error|", "bound", "Kendall tau by workers");
  for (const auto& c : cases) {
    out += fmt::format("{:<44} {:<16} {:<11} {:>6} {:>8.1f}% {:>8}  {}\n", c.id, c.category, c.role, c.points.size(),
                       100 * summary_error(c), bound_of(c, bounds), taus_of(c));
  }
  out += "mean |error| per category (over each case's judged points):\n";
  for (const auto& [category, mae] : category_mae(cases)) out += fmt::format("  {:<16} {:>6.1f} %\n", category, 100 * mae);
  return out;
}

std::string format_markdown(const std::vector<Case>& cases, const std::map<std::string, double>& bounds) {
  std::string out =
      "| case | category | role | calibrates | points | judged on | \\|error\\| | CI bound | Kendall τ (workers: τ) |\n"
      "|---|---|---|---|---:|---|---:|---:|---|\n";
  for (const auto& c : cases) {
    std::string over = c.kind == "scaling" ? "mean, " + c.metric
                       : summary_points(c).size() < c.points.size() ? "median, ≥ 1 MiB"
                                                                        : "median, all sizes";
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {:.1f} % | {} | {} |\n", c.id, c.category, c.role,
                       c.calibrates.empty() ? "—" : c.calibrates, c.points.size(), over, 100 * summary_error(c),
                       bound_of(c, bounds), taus_of(c));
  }
  out += "\n| category | mean \\|error\\| |\n|---|---:|\n";
  for (const auto& [category, mae] : category_mae(cases)) out += fmt::format("| {} | {:.1f} % |\n", category, 100 * mae);
  return out;
}

}  // namespace sparsefuse::fidelity
