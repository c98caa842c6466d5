// The adaptive controller the seed systems advertise but do not implement:
// every K iterations the executor reports what it measured (when each
// gradient became ready, how long collectives and compression took) and the
// scheme re-plans its buffers from those measurements — MG-WFBP's merge rule
// for dense schemes, OMGS's for sparse ones — instead of from start-up
// tables. Works with any static-partition preset (`"replan_every": K`).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/presets.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct Measurements {
  int workers = 1;
  std::vector<TimeNs> ready_ns;  // mean time from backward start to each gradient being ready
  struct Sample {
    int64_t bytes;
    TimeNs duration;
  };
  std::map<Collective, std::vector<Sample>> collectives;  // observed start-to-end times
  int64_t compressed_elements = 0;
  TimeNs compression_ns = 0;  // total time those took
};

// Least-squares alpha + beta * bytes per collective, and a per-element
// compression rate, from measurements: the cost estimates a re-plan uses.
class MeasuredCost : public CostEstimator {
 public:
  explicit MeasuredCost(const Measurements& m);
  int workers() const override { return workers_; }
  TimeNs collective_ns(Collective c, int64_t bytes) const override;
  TimeNs coordination_ns() const override { return 0; }
  TimeNs compression_ns(Sparsifier, int64_t elements, double) const override;
  TimeNs cpu_compression_ns(Sparsifier s, int64_t elements, double d) const override { return compression_ns(s, elements, d); }
  std::pair<double, double> fit(Collective c) const;  // (alpha ns, beta ns/byte)

 private:
  int workers_;
  std::map<Collective, std::pair<double, double>> fits_;
  double compression_per_element_ns_;
};

class AdaptiveScheme : public Scheme {
 public:
  AdaptiveScheme(SchemeConfig config, const GradientModel& model, const CostEstimator& cost, int replan_every);
  std::unique_ptr<WorkerPolicy> make_worker_policy(int rank) const override { return current_->make_worker_policy(rank); }
  nlohmann::json describe() const override;
  int replan_every() const override { return replan_every_; }
  void replan(const Measurements& measured) override;
  // The scheme planned last (an executor inspects its buffers).
  const Scheme& current() const { return *current_; }

 private:
  SchemeConfig config_;  // with the partition knob switched to the merge rule after the first re-plan
  const GradientModel& original_;
  GradientModel measured_model_;
  std::unique_ptr<MeasuredCost> measured_cost_;
  std::unique_ptr<Scheme> current_;
  int replan_every_;
  int replans_ = 0;
};

}  // namespace sparsefuse::policy
