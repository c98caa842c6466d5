#include "policy/adaptive.h"

#include <algorithm>
#include <cmath>

namespace sparsefuse::policy {

MeasuredCost::MeasuredCost(const Measurements& m) : workers_(m.workers) {
  for (const auto& [collective, samples] : m.collectives) {
    double n = double(samples.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& s : samples) {
      sx += double(s.bytes), sy += double(s.duration);
      sxx += double(s.bytes) * double(s.bytes), sxy += double(s.bytes) * double(s.duration);
    }
    double var = n * sxx - sx * sx;
    double beta = var > 0 ? std::max(0.0, (n * sxy - sx * sy) / var) : 0.0;
    double alpha = std::max(0.0, (sy - beta * sx) / n);
    fits_[collective] = {alpha, beta};
  }
  compression_per_element_ns_ = m.compressed_elements > 0 ? double(m.compression_ns) / double(m.compressed_elements) : 0;
}

std::pair<double, double> MeasuredCost::fit(Collective c) const {
  auto it = fits_.find(c);
  return it == fits_.end() ? std::pair<double, double>{0, 0} : it->second;
}

TimeNs MeasuredCost::collective_ns(Collective c, int64_t bytes) const {
  auto [alpha, beta] = fit(c);
  if (alpha == 0 && beta == 0 && c == Collective::kAllgather) std::tie(alpha, beta) = fit(Collective::kAllreduce);
  return TimeNs(std::llround(alpha + beta * double(bytes)));
}

TimeNs MeasuredCost::compression_ns(Sparsifier, int64_t elements, double) const {
  return TimeNs(std::llround(compression_per_element_ns_ * double(elements)));
}

AdaptiveScheme::AdaptiveScheme(SchemeConfig config, const GradientModel& model, const CostEstimator& cost,
                               int replan_every)
    : config_(std::move(config)), original_(model), measured_model_(model), replan_every_(replan_every) {
  config_.resolved["replan_every"] = 0;  // the inner scheme is an ordinary one
  current_ = build_scheme(config_, original_, cost);
}

void AdaptiveScheme::replan(const Measurements& measured) {
  measured_model_ = original_;
  measured_model_.ready_ns = measured.ready_ns;
  measured_model_.backward_ns = measured.ready_ns.empty() ? 0 : measured.ready_ns.back();
  measured_cost_ = std::make_unique<MeasuredCost>(measured);
  // Dense schemes re-plan with MG-WFBP's rule, sparse ones with OMGS's.
  if (config_.resolved.contains("partition")) {
    config_.resolved["partition"] = "mgs";
  } else {
    config_.preset = "mgwfbp";
    config_.resolved = {{"preset", "mgwfbp"}, {"replan_every", 0}};
  }
  current_ = build_scheme(config_, measured_model_, *measured_cost_);
  ++replans_;
}

nlohmann::json AdaptiveScheme::describe() const {
  nlohmann::json d = current_->describe();
  d["replan_every"] = replan_every_;
  d["replans"] = replans_;
  if (measured_cost_) {
    auto [alpha, beta] = measured_cost_->fit(Collective::kAllgather);
    if (alpha == 0 && beta == 0) std::tie(alpha, beta) = measured_cost_->fit(Collective::kAllreduce);
    d["measured_alpha_us"] = alpha / 1e3;
    d["measured_beta_ns_per_byte"] = beta;
  }
  return d;
}

}  // namespace sparsefuse::policy
