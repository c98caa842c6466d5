#include "sim/launch_order.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <stdexcept>

namespace sparsefuse::sim {

std::vector<size_t> schedule_launches(std::vector<Operation>& ops, policy::LaunchScheduler& scheduler) {
  const size_t K = ops.size();
  std::vector<size_t> by_post(K);
  std::iota(by_post.begin(), by_post.end(), 0);
  std::stable_sort(by_post.begin(), by_post.end(), [&](size_t a, size_t b) { return ops[a].all_posted < ops[b].all_posted; });
  using Finish = std::pair<TimeNs, size_t>;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<Finish>> finishes;
  std::vector<size_t> order;
  order.reserve(K);
  TimeNs comm_free = 0;
  size_t next_post = 0;
  while (next_post < K || !finishes.empty()) {
    TimeNs now = next_post < K ? ops[by_post[next_post]].all_posted : finishes.top().first;
    if (!finishes.empty()) now = std::min(now, finishes.top().first);
    while (!finishes.empty() && finishes.top().first <= now) {
      size_t op = finishes.top().second;
      finishes.pop();
      scheduler.finished(int(op), ops[op].bucket);
    }
    while (next_post < K && ops[by_post[next_post]].all_posted <= now) {
      size_t op = by_post[next_post++];
      scheduler.posted(int(op), ops[op].bucket);
    }
    for (int op = scheduler.next(); op >= 0; op = scheduler.next()) {
      Operation& o = ops[size_t(op)];
      const TimeNs start = scheduler.start_ns(now);
      o.all_posted = std::max(o.all_posted, start);
      comm_free = std::max(comm_free, start) + o.cost.total();
      finishes.emplace(comm_free, size_t(op));
      order.push_back(size_t(op));
    }
  }
  if (order.size() != K) throw std::logic_error("the launch scheduler left operations unlaunched");
  return order;
}

}  // namespace sparsefuse::sim
