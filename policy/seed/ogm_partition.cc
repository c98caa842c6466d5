#include "policy/seed/ogm_partition.h"

#include <stdexcept>

namespace sparsefuse::policy::seed {
namespace {

// Step 1, "greedy-based merging": grow a group until the start-up latency it
// saves ((m-1)·α) exceeds the backward time that produces it (Tb(S)), i.e.
// close when Tb(S) - (m-1)·α < diff_min. The seed writes this as
// [Tc(S,1) + Tb(S)] - [(m-1)·α + Tc(S,1)]; the Tc terms cancel, so we drop
// them. A trailing group that never closed is kept (the BERT log's last
// greedy group is the lone word embedding).
std::vector<OgmGroup> greedy_groups(const std::vector<int64_t>& sizes, double rho,
                                       int64_t total, double t_bwd_s, double diff_min_s,
                                       SeedSparsifier sparsifier) {
  std::vector<OgmGroup> groups;
  OgmGroup cur;
  auto close = [&] {
    cur.tc_s = seed_tc_s(cur.elements, rho) + seed_tz_s(cur.elements, sparsifier);
    cur.z_s = seed_tz_s(cur.elements, sparsifier);
    cur.b_s = seed_tb_s(cur.elements, total, t_bwd_s);
    groups.push_back(cur);
    cur = OgmGroup{};
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

}  // namespace

// Step 2, "fine-tuning" (docs/seed-partition.md, step 2): merge a run of the
// greedy groups that follow a buffer when their production time (backward +
// compression, b + z) can hide under that buffer's communication time.
//
// The seed's loop, executed literally (quirks = true):
//   * the bound "cur" is the tc of the LAST element of the output, re-read at
//     the start of every pass; after a merge that element is the merged run,
//     whose tc is the sum of its groups' tc, so the bound grows;
//   * the accumulator of production time starts once and is never reset, and
//     the group that pushed it past the bound is added again on the next pass;
//   * reaching the end of the list without passing the bound appends every
//     remaining group on its own (not as one merged run).
// This is the only reading that reproduces the intermediate list the seed
// prints for BERT-base (tested against it in ogm_partition_test.cc).
//
// Corrected (quirks = false) fixes three things and keeps the rest: the
// accumulator restarts every pass, so each run is the longest one whose own
// production time fits under the preceding buffer's communication; a merged
// run is costed as the one buffer it becomes; and a run that reaches the end
// of the list is merged like any other run.
std::vector<int> ogm_fine_tune(const std::vector<OgmGroup>& g, double rho, SeedSparsifier sparsifier,
                               bool quirks) {
  if (g.empty()) throw std::invalid_argument("ogm_fine_tune: no groups");
  struct Buffer {
    int count;
    int64_t elements;
    double tc_s;
  };
  std::vector<Buffer> out{{g[0].count, g[0].elements, g[0].tc_s}};
  double acc = 0;
  std::size_t i = 1;
  while (i < g.size()) {
    const double bound = out.back().tc_s;  // re-read every pass
    if (!quirks) acc = 0;
    std::size_t run = 0;  // groups i .. i+run-1 fit under the bound so far
    bool exceeded = false;
    while (i + run < g.size()) {
      acc += g[i + run].b_s + g[i + run].z_s;
      if (acc > bound) {
        exceeded = true;
        break;
      }
      ++run;
    }
    if (!exceeded && quirks) {
      // End of the list: the seed appends what is left group by group.
      for (; i < g.size(); ++i) out.push_back({g[i].count, g[i].elements, g[i].tc_s});
      break;
    }
    if (run == 0) {
      out.push_back({g[i].count, g[i].elements, g[i].tc_s});
      ++i;
      continue;
    }
    Buffer merged{0, 0, 0.0};
    for (std::size_t k = i; k < i + run; ++k) {
      merged.count += g[k].count;
      merged.elements += g[k].elements;
      merged.tc_s += g[k].tc_s;
    }
    // The seed charges a merged run the sum of its groups' costs, i.e. one
    // start-up per group although the run is sent as one message; corrected,
    // the run costs what one buffer of its size costs.
    if (!quirks) merged.tc_s = seed_tc_s(merged.elements, rho) + seed_tz_s(merged.elements, sparsifier);
    out.push_back(merged);
    i += run;
  }
  std::vector<int> counts;
  for (const Buffer& b : out) counts.push_back(b.count);
  return counts;
}

namespace {

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
  const std::vector<OgmGroup> groups =
      greedy_groups(sizes, rho, total, t_bwd_s, seed_diff_min_s(model_key), sparsifier);
  double z_after_first = 0;
  double b_after_first = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const OgmGroup& g = groups[i];
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

  trace.finetuned_counts = ogm_fine_tune(groups, rho, sparsifier, quirks);
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
