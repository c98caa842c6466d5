// A piecewise α-β fit of measured collective times. Per size range (segment)
//   time_us = alpha_us * L(p) + F(p) * bytes / bandwidth
// with an algorithm's step counts, by default the ring's: allreduce
// L = 2(p-1), F = 2(p-1)/p; allgather and reduce-scatter L = p-1, F = (p-1)/p. So alpha is a per-step
// (per-message) latency and bandwidth is the achievable bus bandwidth of the
// link class, comparable across rank counts: that is what lets a fit on some
// node counts predict another. Segment boundaries are where the slope
// changes (protocol switches: LL -> LL128 -> Simple in NCCL, eager ->
// rendezvous in MPI); they are chosen by dynamic programming over the
// measured sizes, the number of segments by Akaike's criterion; the loss is
// the absolute relative error (robust to single wild rows).
#pragma once

#include <string>
#include <vector>

#include "tools/calibrate/measured_table.h"

namespace sparsefuse::calibrate {

// How steps and bytes grow with ranks: the ring (NCCL, MPI for large
// buffers), recursive doubling (MPI small allreduce: log2 p steps, the whole
// buffer each), Rabenseifner (reduce-scatter + allgather by halving/doubling).
enum class Law { kRing, kRecursiveDoubling, kRabenseifner };
std::string law_name(Law law);

struct Segment {
  Law law = Law::kRing;
  double first_bytes = 0, last_bytes = 0;  // measured sizes it was fitted on
  double from_bytes = 0;                   // threshold: applies from here (0 for the first)
  double alpha_us = 0;                     // per step
  double bandwidth_gbps_bytes = 0;         // GB/s (1e9 B/s), bus bandwidth; 0 = infinite (latency-only)
};

struct PiecewiseFit {
  Collective collective = Collective::kAllreduce;
  std::vector<Segment> segments;  // ascending sizes
  double predict_us(int ranks, double bytes) const;
};

struct FitOptions {
  int max_segments = 3;
  int min_sizes_per_segment = 3;
};

// Step count L(p) and byte factor F(p) of COLLECTIVE at P ranks under LAW.
double latency_steps(Collective collective, int ranks, Law law = Law::kRing);
double byte_factor(Collective collective, int ranks, Law law = Law::kRing);

// Fits SAMPLES (one collective, any rank counts, ranks >= 2) minimising the
// absolute relative error. InputError when fewer distinct sizes than
// min_sizes_per_segment.
PiecewiseFit fit_piecewise(const std::vector<Sample>& samples, const FitOptions& options);

// One segment fitted on SAMPLES: alpha, 1/bandwidth >= 0, and (with several
// rank counts) the law that fits best; returns the sum of absolute relative
// errors. Exposed for tests.
double fit_segment(const std::vector<Sample>& samples, Segment& segment);
// The same under segment.law as given.
double fit_segment_with_law(const std::vector<Sample>& samples, Segment& segment);

}  // namespace sparsefuse::calibrate
