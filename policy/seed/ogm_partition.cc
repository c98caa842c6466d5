#include "policy/seed/ogm_partition.h"

#include <stdexcept>

namespace sparsefuse::policy::seed {
namespace {

struct GreedyGroup {
  int count = 0;
  int64_t elements = 0;
  double tc_s = 0;  // Tc(S, rho) + Tz(S): communication plus compression
  double z_s = 0;   // Tz(S)
  double b_s = 0;   // Tb(S)
};

// Step 1, "greedy-based merging": grow a group until the start-up latency it
// saves ((m-1)·α) exceeds the backward time that produces it (Tb(S)), i.e.
// close when Tb(S) - (m-1)·α < diff_min. The seed writes this as
// [Tc(S,1) + Tb(S)] - [(m-1)·α + Tc(S,1)]; the Tc terms cancel, so we drop
// them. A trailing group that never closed is kept (the BERT log's last
// greedy group is the lone word embedding).
std::vector<GreedyGroup> greedy_groups(const std::vector<int64_t>& sizes, double rho,
                                       int64_t total, double t_bwd_s, double diff_min_s,
                                       SeedSparsifier sparsifier) {
  std::vector<GreedyGroup> groups;
  GreedyGroup cur;
  auto close = [&] {
    cur.tc_s = seed_tc_s(cur.elements, rho) + seed_tz_s(cur.elements, sparsifier);
    cur.z_s = seed_tz_s(cur.elements, sparsifier);
    cur.b_s = seed_tb_s(cur.elements, total, t_bwd_s);
    groups.push_back(cur);
    cur = GreedyGroup{};
  };
  for (int64_t s : sizes) {
    ++cur.count;
    cur.elements += s;
    const double diff = seed_tb_s(cur.elements, total, t_bwd_s) - (cur.count - 1) * kSeedAlphaS;
    if (diff < diff_min_s) close();
  }
  if (cur.count > 0) close();
  return groups;
}

// Step 2, "fine-tuning": walk the greedy groups after g0 and merge a run of
// them into one buffer while their accumulated production time (b + z) stays
// within "cur", the communication time the run can hide under.
//
// Reading chosen (the spec writes "new = [g0]; cur = tc of the last new
// group" and then "only one merge ever happens, right after g0"): cur is
// evaluated once, while g0 is the only new group, so cur = tc_0 throughout.
// With the seed's never-reset accumulator, once the sum has exceeded tc_0
// every later group is kept alone. The other reading (re-evaluate cur after
// every append) lets the large summed tc of the merged run swallow everything
// after it: BERT-base gives [2,16,183] instead of the [2,16,2,2,...,2,1] (94
// buffers) that the seed prints as groups_new, and contradicts "only one
// merge". The final partitions of both logged cases are the same under either
// reading, because step 3 stops early; only the intermediate list tells them
// apart.
//
// Corrected (quirks = false): the accumulator restarts for every run, nothing
// else changes, so every run after g0 is the longest one whose production
// time fits in tc_0. (Also re-evaluating cur as the last buffer's tc would
// snowball as described above; we keep the one documented fix.)
std::vector<int> fine_tune(const std::vector<GreedyGroup>& g, bool quirks) {
  std::vector<int> out{g[0].count};
  const double first_tc = g[0].tc_s;  // "cur"
  double acc = 0;
  std::size_t i = 1;
  while (i < g.size()) {
    // Corrected: restart the accumulator for every run.
    if (!quirks) acc = 0;
    std::size_t j = i;
    while (j < g.size()) {
      acc += g[j].b_s + g[j].z_s;
      if (acc > first_tc) break;
      ++j;
    }
    if (j > i) {
      int merged = 0;
      for (std::size_t k = i; k < j; ++k) merged += g[k].count;
      out.push_back(merged);
      i = j;
    } else {
      out.push_back(g[i].count);
      ++i;
    }
  }
  return out;
}

// Step 3, "eliminating": append the fine-tuned buffers until either (a) the
// prefix's communication can no longer hide behind the remaining production
// time B, then everything left becomes one buffer, or (b) past the first two
// buffers with rho < 1, the tail is cut into buffers the size of the last one.
//
// quirks: (b)'s guard is the seed's "g <= last", where last is g itself (just
// appended), so it is always true. Corrected: g <= the previous buffer's count,
// i.e. switch to tail splitting once the head buffers stop growing.
//
// Deliberate deviation in both modes: a zero count is never appended (the
// seed would append one if (a) fired on the very last buffer). It cannot
// happen in the logged cases.
std::vector<int> eliminate(const std::vector<int>& ft, const std::vector<int64_t>& sizes,
                           double rho, double budget_s, bool quirks) {
  const int total_tensors = static_cast<int>(sizes.size());
  std::vector<int> counts;
  int assigned = 0;
  int64_t prefix_elements = 0;
  auto append = [&](int n) {
    if (n <= 0) return;
    for (int k = assigned; k < assigned + n; ++k) prefix_elements += sizes[k];
    counts.push_back(n);
    assigned += n;
  };
  for (std::size_t i = 0; i < ft.size(); ++i) {
    const int g = ft[i];
    append(g);
    if (assigned >= total_tensors) break;
    if (seed_tc_s(prefix_elements, rho) > budget_s) {
      append(total_tensors - assigned);
      break;
    }
    if (rho < 1.0 && i > 1) {
      const bool guard = quirks ? g <= counts.back() : g <= counts[counts.size() - 2];
      if (!guard) continue;
      int remaining = total_tensors - assigned;
      if (remaining <= counts.back()) {
        append(remaining);
        break;
      }
      // Terminates: each pass appends at least one tensor and never more than
      // `remaining` (the last count is <= assigned < remaining, and 2·(R/3) < R).
      while (remaining > assigned) {
        if (counts.back() < 3) append(remaining / 3);
        append(counts.back());
        remaining = total_tensors - assigned;
      }
      append(remaining);
      break;
    }
  }
  return counts;
}

}  // namespace

OgmTrace ogm_partition_trace(const std::vector<int64_t>& sizes, double rho,
                             std::string_view model_key, bool quirks, SeedSparsifier sparsifier) {
  if (sizes.empty()) throw std::invalid_argument("ogm_partition: no tensors");
  if (!(rho > 0.0 && rho <= 1.0)) throw std::invalid_argument("ogm_partition: rho must be in (0, 1]");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw std::invalid_argument("ogm_partition: negative tensor size");
    total += s;
  }
  const double t_bwd_s = seed_backward_time_s(model_key);

  OgmTrace trace;
  const std::vector<GreedyGroup> groups =
      greedy_groups(sizes, rho, total, t_bwd_s, seed_diff_min_s(model_key), sparsifier);
  double z_after_first = 0;
  double b_after_first = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const GreedyGroup& g = groups[i];
    trace.greedy_counts.push_back(g.count);
    trace.sum_tc_s += g.tc_s;
    trace.sum_z_s += g.z_s;
    trace.sum_b_s += g.b_s;
    if (i >= 1) {
      z_after_first += g.z_s;
      b_after_first += g.b_s;
    }
  }
  // B: production time (compression + backward) of everything after g0.
  trace.overlap_budget_s = z_after_first + b_after_first;
  trace.finetune_reference_s = groups[0].tc_s;

  trace.finetuned_counts = fine_tune(groups, quirks);
  trace.counts = eliminate(trace.finetuned_counts, sizes, rho, trace.overlap_budget_s, quirks);
  // The seed compensates its grouping helper's off-by-one here; the corrected
  // routine has no such helper, so counts are the buffers' real sizes.
  if (quirks) trace.counts[0] += 1;
  return trace;
}

std::vector<int> ogm_partition(const std::vector<int64_t>& sizes, double rho,
                               std::string_view model_key, bool quirks) {
  return ogm_partition_trace(sizes, rho, model_key, quirks).counts;
}

}  // namespace sparsefuse::policy::seed
