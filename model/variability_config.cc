#include "model/variability_config.h"

namespace sparsefuse::model {

VariabilityConfig VariabilityConfig::parse(const JsonNode& node, int workers, double measured_cv) {
  node.check_keys({"compute_cv", "stragglers", "workers_per_node", "node_speed_factors"});
  VariabilityConfig c;
  auto cv = node.optional_child("compute_cv");
  if (cv && cv->json().is_string()) {
    // "trace": the spread the profiler measured for this model on this machine.
    if (cv->as_string() != "trace") cv->fail("expected a number in [0, 10] or \"trace\"");
    if (measured_cv <= 0) cv->fail("\"trace\" needs a measured trace with \"iteration_cv\"; this trace has none");
    c.compute_cv = measured_cv;
  } else {
    c.compute_cv = node.get_number("compute_cv", 0.0, 0.0, 10.0);
  }
  if (auto s = node.optional_child("stragglers")) {
    s->check_keys({"ranks", "count", "slowdown"});
    if (s->has("ranks") && s->has("count")) s->fail("give either \"ranks\" or \"count\", not both");
    if (auto ranks = s->optional_child("ranks")) {
      for (size_t i = 0; i < ranks->array_size(); ++i) {
        c.straggler_ranks.push_back(int(ranks->element(i).as_int(0, workers - 1)));
      }
    }
    c.straggler_count = int(s->get_int("count", 0, 0, workers));
    c.straggler_slowdown = s->get_number("slowdown", 1.0, 0.0, 1e6, /*min_exclusive=*/true);
  }
  c.workers_per_node = int(node.get_int("workers_per_node", 1, 1, 1 << 20));
  if (auto f = node.optional_child("node_speed_factors")) {
    size_t n = f->array_size();
    if (n == 0) f->fail("expected a non-empty array of positive numbers");
    for (size_t i = 0; i < n; ++i) c.node_speed_factors.push_back(f->element(i).as_number(0, 1e6, true));
  }
  return c;
}

Json VariabilityConfig::to_json() const {
  Json stragglers = {{"slowdown", straggler_slowdown}};
  if (!straggler_ranks.empty()) stragglers["ranks"] = straggler_ranks;
  else stragglers["count"] = straggler_count;
  return {{"compute_cv", compute_cv},
          {"stragglers", stragglers},
          {"workers_per_node", workers_per_node},
          {"node_speed_factors", node_speed_factors.empty() ? Json::array({1.0}) : Json(node_speed_factors)}};
}

}  // namespace sparsefuse::model
