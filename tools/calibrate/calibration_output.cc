// The printed report and the calibration file of `sparsefuse calibrate`.
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "tools/calibrate/calibration.h"

namespace sparsefuse::calibrate {

namespace {

std::string percent(std::optional<double> v) { return v ? fmt::format("{:.1f} %", 100 * *v) : "n/a"; }

std::string format_segments(const PiecewiseFit& fit) {
  std::string out = fmt::format("fit {}: {} segment(s), time = alpha * steps(p) + busfactor(p) * bytes / bandwidth\n",
                                collective_name(fit.collective), fit.segments.size());
  out += fmt::format("  {:>14} {:>14} {:>14} {:>14} {:>16}  {}\n", "from bytes", "fitted from", "fitted to",
                     "alpha us/step", "bus bw GB/s", "law");
  for (const auto& s : fit.segments) {
    out += fmt::format("  {:>14.0f} {:>14.0f} {:>14.0f} {:>14.3f} {:>16.3f}  {}\n", s.from_bytes, s.first_bytes,
                       s.last_bytes, s.alpha_us, s.bandwidth_gbps_bytes, law_name(s.law));
  }
  return out;
}

}  // namespace

std::string format_calibration(const Calibration& c) {
  std::string out;
  for (const auto& fit : c.fits) out += format_segments(fit);
  for (const auto& d : c.derived) {
    out += fmt::format("{}: not measured; the table carries it from the allreduce fit (same alpha per step and bus "
                       "bandwidth, its own step counts under each range's law)\n", collective_name(d.collective));
  }
  out += fmt::format("per size ({} held out):\n", c.holdout.describe());
  out += fmt::format("  {:<15} {:>6} {:>14} {:>14} {:>14} {:>9}\n", "collective", "ranks", "bytes", "measured us",
                     "fitted us", "error");
  for (const auto& r : c.rows) {
    out += fmt::format("  {:<15} {:>6} {:>14.0f} {:>14.3f} {:>14.3f} {:>+8.1f}%{}\n",
                       collective_name(r.sample.collective), r.sample.ranks, r.sample.bytes, r.sample.time_us,
                       r.fitted_us, 100 * r.error(), r.held_out ? "  held out" : "");
  }
  out += fmt::format("median |error|: fitted part {} (>= 1 MiB: {}); held-out part {} (>= 1 MiB: {})\n",
                     percent(median_abs_error(c.rows, false, 0)), percent(median_abs_error(c.rows, false, 1 << 20)),
                     percent(median_abs_error(c.rows, true, 0)), percent(median_abs_error(c.rows, true, 1 << 20)));
  return out;
}

Json calibration_file(const Calibration& c, const Labels& labels) {
  Json collectives = Json::object(), fits = Json::array();
  std::set<std::tuple<Collective, int, double>> seen;  // the table takes one time per (ranks, bytes)
  for (const auto& r : c.rows) {
    if (!seen.insert({r.sample.collective, r.sample.ranks, r.sample.bytes}).second) continue;
    collectives[std::string(collective_name(r.sample.collective))].push_back(
        {{"ranks", r.sample.ranks}, {"bytes", r.sample.bytes}, {"time_us", r.fitted_us}});
  }
  for (const auto& d : c.derived) {
    for (const auto& r : c.rows) {
      if (r.sample.collective != Collective::kAllreduce) continue;
      if (!seen.insert({d.collective, r.sample.ranks, r.sample.bytes}).second) continue;
      collectives[std::string(collective_name(d.collective))].push_back(
          {{"ranks", r.sample.ranks}, {"bytes", r.sample.bytes}, {"time_us", d.predict_us(r.sample.ranks, r.sample.bytes)}});
    }
  }
  Json derived = Json::array();
  for (const auto& d : c.derived) derived.push_back(collective_name(d.collective));
  for (const auto& fit : c.fits) {
    Json segments = Json::array();
    for (const auto& s : fit.segments) {
      segments.push_back({{"from_bytes", s.from_bytes}, {"fitted_bytes", {s.first_bytes, s.last_bytes}},
                          {"alpha_us_per_step", s.alpha_us}, {"law", law_name(s.law)}, {"bus_bandwidth_gbytes_per_s", s.bandwidth_gbps_bytes}});
    }
    fits.push_back({{"collective", collective_name(fit.collective)}, {"segments", segments}});
  }
  auto stat = [&](bool held, double min) { auto v = median_abs_error(c.rows, held, min); return v ? Json(*v) : Json(); };
  Json meta = {{"format", "sparsefuse-calibration/1"},
               {"link_class", labels.link_class},
               {"transport", labels.transport},
               {"inputs", labels.inputs},
               {"model", "per segment: time_us = alpha * L(p) + F(p) * bytes / (bandwidth * 1e3); L, F of the segment's law"},
               {"table", "the fitted times at every measured (ranks, bytes), held-out rows included"},
               {"fits", fits},
               {"held_out", c.holdout.describe()},
               {"derived_not_measured", derived},
               {"derived_how", "allreduce fit's alpha per step, bus bandwidth and law with the collective's own step counts"},
               {"median_abs_error", {{"fitted", stat(false, 0)}, {"fitted_ge_1MiB", stat(false, 1 << 20)},
                                     {"held_out", stat(true, 0)}, {"held_out_ge_1MiB", stat(true, 1 << 20)}}}};
  return {{"collectives", collectives}, {"calibration", meta}};
}

}  // namespace sparsefuse::calibrate
