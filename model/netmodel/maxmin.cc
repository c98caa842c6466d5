#include "model/netmodel/maxmin.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sparsefuse::netmodel {

std::vector<double> max_min_rates(const std::vector<double>& capacity, const std::vector<Flow>& flows) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double c : capacity) {
    if (!(c >= 0)) throw std::invalid_argument("max_min_rates: negative or NaN link capacity");
  }
  // Per link: (flow, multiplicity) of the flows crossing it.
  std::vector<std::vector<std::pair<int, int>>> users(capacity.size());
  for (size_t f = 0; f < flows.size(); ++f) {
    if (!(flows[f].cap >= 0)) throw std::invalid_argument("max_min_rates: negative or NaN flow cap");
    std::vector<int> links = flows[f].links;
    std::sort(links.begin(), links.end());
    for (size_t i = 0; i < links.size();) {
      int l = links[i];
      if (l < 0 || size_t(l) >= capacity.size()) throw std::invalid_argument("max_min_rates: link id out of range");
      size_t j = i;
      while (j < links.size() && links[j] == l) ++j;
      users[size_t(l)].push_back({int(f), int(j - i)});
      i = j;
    }
  }

  std::vector<double> rate(flows.size(), 0.0);
  std::vector<bool> active(flows.size(), true);
  std::vector<double> remaining = capacity;
  size_t active_count = flows.size();
  // Each round freezes at least one flow (the tightest link's or the capped
  // one), so at most |flows| rounds.
  while (active_count > 0) {
    // The largest common increase before some link fills or some flow caps.
    double step = inf;
    int tightest_link = -1, tightest_flow = -1;  // what limits the step: frozen this round whatever the rounding
    for (size_t l = 0; l < users.size(); ++l) {
      int weight = 0;
      for (auto [f, times] : users[l]) weight += active[size_t(f)] ? times : 0;
      if (weight > 0 && remaining[l] / weight < step) {
        step = remaining[l] / weight;
        tightest_link = int(l);
      }
    }
    for (size_t f = 0; f < flows.size(); ++f) {
      if (active[f] && flows[f].cap - rate[f] < step) {
        step = flows[f].cap - rate[f];
        tightest_flow = int(f);
        tightest_link = -1;
      }
    }
    if (step == inf) {  // unconstrained flows: no link, no cap
      for (size_t f = 0; f < flows.size(); ++f) {
        if (active[f]) rate[f] = inf;
      }
      break;
    }
    step = std::max(step, 0.0);
    for (size_t f = 0; f < flows.size(); ++f) {
      if (active[f]) rate[f] += step;
    }
    // Charge the links, then freeze flows on links that are now full (up to
    // rounding: relative to the capacity) and flows at their cap.
    std::vector<bool> freeze(flows.size(), false);
    for (size_t l = 0; l < users.size(); ++l) {
      int weight = 0;
      for (auto [f, times] : users[l]) weight += active[size_t(f)] ? times : 0;
      if (weight == 0) continue;
      remaining[l] -= step * weight;
      if (int(l) == tightest_link || remaining[l] <= 1e-12 * capacity[l]) {
        remaining[l] = 0;
        for (auto [f, times] : users[l]) freeze[size_t(f)] = true;
      }
    }
    for (size_t f = 0; f < flows.size(); ++f) {
      if (active[f] && (freeze[f] || int(f) == tightest_flow || rate[f] >= flows[f].cap * (1 - 1e-12))) {
        if (rate[f] > flows[f].cap) rate[f] = flows[f].cap;
        active[f] = false;
        --active_count;
      }
    }
  }
  return rate;
}

}  // namespace sparsefuse::netmodel
