#include "model/forward_times.h"

#include <algorithm>

namespace sparsefuse::model {

ForwardTimes forward_times(const Trace& trace, const policy::GradientModel& model, double compute_scale) {
  const int L = model.size();
  ForwardTimes out;
  out.tensor_ns.assign(L, 0);
  out.optimizer_ns.assign(L, 0);
  int64_t total_elements = 0;
  for (int64_t e : model.elements) total_elements += e;

  TimeNs per_tensor_total = 0;
  for (const auto& t : trace.tensors) per_tensor_total += t.forward_ns;
  std::vector<TimeNs> nominal(L, 0);
  TimeNs lead = 0;
  if (per_tensor_total > 0) {
    // Walk the trace from its end (the input side, where forward starts):
    // a tensor without gradient joins the gradient tensor that ran before it.
    int current = -1;  // gradient index that ran last in forward order
    for (int i = int(trace.tensors.size()) - 1, g = L - 1; i >= 0; --i) {
      const bool grad = g >= 0 && model.inventory_index[g] == i;
      if (grad) current = g--;
      (current >= 0 ? nominal[current] : lead) += trace.tensors[i].forward_ns;
    }
    lead += std::max<TimeNs>(0, trace.forward_ns - per_tensor_total);
  } else {
    // By elements, cumulative rounding so the parts add up to the whole.
    __int128 cumulative = 0;
    TimeNs assigned = 0;
    for (int g = 0; g < L; ++g) {
      cumulative += model.elements[g];
      TimeNs upto = total_elements > 0 ? TimeNs(cumulative * trace.forward_ns / total_elements) : 0;
      nominal[g] = upto - assigned;
      assigned = upto;
    }
  }
  out.lead_ns = scaled_ns(lead, compute_scale);
  for (int g = 0; g < L; ++g) out.tensor_ns[g] = scaled_ns(nominal[g], compute_scale);
  const TimeNs optimizer = trace.optimizer_phase_ns(compute_scale);
  __int128 cumulative = 0;
  TimeNs assigned = 0;
  for (int g = 0; g < L; ++g) {
    cumulative += model.elements[g];
    TimeNs upto = total_elements > 0 ? TimeNs(cumulative * optimizer / total_elements) : 0;
    out.optimizer_ns[g] = upto - assigned;
    assigned = upto;
  }
  return out;
}

std::vector<StageTimes> stage_times(const policy::ForwardPlan& plan, const ForwardTimes& times) {
  std::vector<StageTimes> out;
  for (const auto& stage : plan.stages) {
    StageTimes sum;
    for (int t = stage.first_tensor; t < stage.end_tensor; ++t) {
      sum.forward += times.tensor_ns.at(size_t(t));
      sum.optimizer += times.optimizer_ns.at(size_t(t));
    }
    out.push_back(sum);
  }
  return out;
}

}  // namespace sparsefuse::model
