#include "policy/hipress.h"

#include <algorithm>

#include "policy/planned_scheme.h"
#include "policy/timeline_model.h"
#include "policy/presets.h"

namespace sparsefuse::policy {

static int64_t part_elements(int64_t x, int partitions) { return (x + partitions - 1) / partitions; }

int64_t casync_partition_pairs(int64_t x, int partitions, double density) {
  return exact_count(part_elements(x, partitions), density);
}

CasyncTime secopa_ring_orig(int workers, int partitions, int64_t x, const CasyncPrimitives& prims) {
  if (workers <= 1) return {};
  const double hops = 2.0 * (workers - 1);
  const int64_t e = part_elements(x, partitions);
  const double latency = prims.send(0);
  CasyncTime t;
  t.transfer_ns = hops * (prims.send(4.0 * double(e)) - latency);
  t.fixed_ns = hops * latency + (workers - 1) * prims.aggregate(e);
  return t;
}

CasyncTime secopa_ring_cpr(int workers, int partitions, int64_t x, double density, const CasyncPrimitives& prims) {
  if (workers <= 1) return {};
  const double hops = 2.0 * (workers - 1);
  const int64_t e = part_elements(x, partitions);
  const int64_t pairs = casync_partition_pairs(x, partitions, density);
  const double latency = prims.send(0);
  CasyncTime t;
  t.transfer_ns = hops * (prims.send(8.0 * double(pairs)) - latency);
  t.fixed_ns = hops * latency + workers * prims.encode(e) + workers * prims.decode(e, pairs) +
               (workers - 1) * prims.aggregate(e);
  return t;
}

SecopaChoice secopa_choose(int workers, int64_t x, double density, const CasyncPrimitives& prims,
                           int max_partitions) {
  SecopaChoice best;
  if (workers <= 1) return best;
  int64_t top = std::min<int64_t>(workers, x);
  if (max_partitions > 0) top = std::min<int64_t>(top, max_partitions);
  best.orig_ns = best.cpr_ns = -1;
  int best_k = 1;
  for (int K = 1; K <= int(top); ++K) {
    double orig = secopa_ring_orig(workers, K, x, prims).total();
    double cpr = secopa_ring_cpr(workers, K, x, density, prims).total();
    if (best.orig_ns < 0 || orig < best.orig_ns) best.orig_ns = orig;
    if (best.cpr_ns < 0 || cpr < best.cpr_ns) best.cpr_ns = cpr, best_k = K;
  }
  best.compress = best.cpr_ns < best.orig_ns;
  best.partitions = best.compress ? best_k : 1;
  return best;
}

std::unique_ptr<Scheme> make_hipress_scheme(const GradientModel& model, const CostEstimator& cost,
                                            const HipressOptions& options) {
  const LinkEstimate link = infer_link(cost);
  const double bw = options.memory_gbytes_per_s;
  CasyncPrimitives prims;
  prims.send = [link](double bytes) { return link.alpha_ns + link.ns_per_byte * bytes; };
  prims.encode = [&](int64_t e) { return double(cost.compression_ns(options.sparsifier, e, options.density)); };
  prims.decode = [bw](int64_t e, int64_t pairs) { return decompression_estimate_ns(e, pairs, bw); };
  prims.aggregate = [bw](int64_t e) { return 12.0 * double(e) / bw; };
  std::vector<PlannedBuffer> buffers;
  int compressed = 0;
  std::vector<int> partitions;
  for (int t = 0; t < model.size(); ++t) {
    SecopaChoice c = secopa_choose(cost.workers(), model.elements[t], options.density, prims, options.max_partitions);
    PlannedBuffer b;
    b.first = t;
    b.end = t + 1;
    if (c.compress && options.density < 1.0) {
      b.route = Route::kSparseAllreduce;
      b.algorithm = SparseAllreduce::kCaSyncRing;
      b.partitions = c.partitions;
      ++compressed;
      partitions.push_back(c.partitions);
    }
    buffers.push_back(b);
  }
  PlannedOptions planned;
  planned.sparsifier = options.sparsifier;
  planned.density = options.density;
  planned.error_feedback = false;  // the ring's encoders run inside the collective
  return std::make_unique<PlannedScheme>(
      model, planned, std::move(buffers),
      nlohmann::json{{"compressed_tensors", compressed}, {"secopa_partitions", partitions}});
}

namespace {

std::unique_ptr<Scheme> build_hipress(const Knobs& k, const GradientModel& model, const CostEstimator& cost) {
  HipressOptions o;
  o.sparsifier = k.sparsifier();
  o.density = k.number("density");
  o.memory_gbytes_per_s = std::max(1e-3, k.number("memory_gbytes_per_s"));
  o.max_partitions = int(k.count("max_partitions"));
  return make_hipress_scheme(model, cost, o);
}

const PresetRegistration registration({
    {"hipress", "compression",
     "HiPress: SeCoPa picks per tensor compress-or-not and K partitions from its ring cost model; compressed "
     "tensors use CaSync's ring (decode, merge, re-encode per hop), others allreduce",
     "ring CaSync only (no PS); sparsifier in place of CompLL quantisers (8 bytes per kept element); primitive "
     "costs from the executor's network and compression curves, decode/merge as memory passes",
     {Knob::sparsifier(Sparsifier::kDgc), Knob::density(), Knob::memory_bandwidth(),
      Knob::count("max_partitions", 0, "partitions", "SeCoPa's largest K (0 = the worker count)")},
     Replanning::kPlansItself, build_hipress},
});

}  // namespace

}  // namespace sparsefuse::policy
