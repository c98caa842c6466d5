#include "policy/presets.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "policy/adaptive.h"
#include "policy/bytescheduler.h"
#include "policy/cupcake.h"
#include "policy/dear.h"
#include "policy/espresso.h"
#include "policy/hipress.h"
#include "policy/horovod.h"
#include "policy/partition.h"
#include "policy/sparse_allreduce.h"
#include "policy/sparse_scheme.h"
#include "policy/static_scheme.h"

namespace sparsefuse::policy {

namespace {

// The knobs of every sparse preset; presets differ in their defaults.
Json sparse_knobs(const char* partition, const char* placement, const char* sparsifier, const char* alignment,
                  const char* error_feedback, const char* compress_on = "gpu-inline", bool hybrid = false) {
  return {{"partition", partition},   {"tensors_per_buffer", 0},     {"quirks", true},
          {"placement", placement},   {"sparsifier", sparsifier},    {"density", 0.01},
          {"alignment", alignment},   {"compress_on", compress_on},  {"hybrid", hybrid},
          {"concurrent", true},       {"error_feedback", error_feedback}, {"seed_model_key", ""}};
}

// The knobs of the sparse-allreduce presets (policy/sparse_allreduce.h).
Json sparse_allreduce_knobs(Json extra = Json::object()) {
  Json k = {{"partition", "single"}, {"tensors_per_buffer", 0}, {"density", 0.01}, {"error_feedback", "buffer"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) k[it.key()] = it.value();
  return k;
}

// Presets that plan from their own model; re-planning them with a merge rule
// would silently replace what they reproduce.
bool plans_itself(const std::string& preset) {
  return preset == "horovod" || preset == "rgmerge-dynamic" || preset == "dear" || preset == "bytescheduler" ||
         preset == "hipress" || preset == "espresso" || preset == "cupcake";
}

// Allowed values of the string knobs.
const std::map<std::string, std::vector<std::string>>& knob_choices() {
  static const std::map<std::string, std::vector<std::string>> choices = {
      {"partition", {"per-tensor", "single", "fixed-count", "ogm", "mgs"}},
      {"placement", {"behind", "ahead", "selective", "partial"}},
      {"sparsifier", sparsifier_names()},
      {"alignment", {"fixed-k", "exchange-counts", "pad-to-max", "equal-slices"}},
      {"compress_on", {"gpu-inline", "gpu-side", "cpu-offload"}},
      {"error_feedback", {"none", "tensor", "buffer"}},
  };
  return choices;
}

}  // namespace

const std::vector<PresetInfo>& preset_catalog() {
  static const std::vector<PresetInfo> catalog = {
      {"wfbp", "wait-free backprop (Poseidon): one allreduce per tensor, launched when it is ready", "",
       Json::object()},
      {"horovod", "Horovod tensor fusion: per cycle, fuse tensors ready on every worker into allreduces <= threshold",
       "response-cache negotiation modelled as one ceil(log2 p)-latency exchange per cycle",
       {{"fusion_threshold_bytes", 128ll << 20}, {"cycle_time_us", 1000.0}}},
      {"ddp", "PyTorch DDP: 25 MiB buckets (1 MiB first) in gradient-ready order, launched in order",
       "buckets as rebuilt after the first iteration (ready order) from the start",
       {{"bucket_cap_bytes", 25ll << 20}, {"first_bucket_bytes", 1ll << 20}}},
      {"syncea", "SyncEA: all gradients in one buffer, one allreduce after backward (no overlap)", "",
       Json::object()},
      {"mgwfbp", "MG-WFBP: merge adjacent allreduces when waiting beats a start-up (alpha-beta model)",
       "uses the simulator's collective costs instead of a fitted alpha + beta x", Json::object()},
      {"topk-layerwise", "per-tensor top-k + allgather of values and int32 indices (Horovod + GRACE style)",
       "int32 indices (GRACE sends int64)", sparse_knobs("per-tensor", "ahead", "topk", "exchange-counts", "tensor")},
      {"omgs", "OMGS-SGD: merged-gradient sparsification, groups by its merge rule, top-k per group + allgather",
       "merge rule evaluated on the simulator's cost estimates, not OMGS's fitted P102 constants",
       sparse_knobs("mgs", "behind", "topk", "exchange-counts", "buffer")},
      {"syncea-topk", "SyncEA with one top-k over the single buffer after backward, then allgather", "",
       sparse_knobs("single", "behind", "topk", "exchange-counts", "buffer")},
      {"fgbuff", "FGBuff: seed three-step partition (quirks on), dense copy, one top-k per buffer, allgather",
       "quirks=false: corrected routine, pooler skipped, every buffer completes",
       sparse_knobs("ogm", "behind", "topk", "equal-slices", "none")},
      {"rgmerge", "RGMerge: the same code base as FGBuff (static quantity-based partition)",
       "identical to fgbuff, as the seed code is; see rgmerge-dynamic for what its README describes",
       sparse_knobs("ogm", "behind", "topk", "equal-slices", "none")},
      {"rgmerge-dynamic", "RGMerge as described: workers agree each cycle to merge the ready gradients, then top-k",
       "not in the seed code; negotiation like Horovod's, compression on the side stream after agreement",
       {{"cycle_time_us", 1000.0}, {"sparsifier", "topk"}, {"density", 0.01}}},
      {"saf", "SAF: sparsify each tensor ahead of fusion (DGC), floor(L/20) tensors per buffer, allgather",
       "reconstructed (no runnable seed optimizer); receiver splits in equal slices as the seed code",
       sparse_knobs("fixed-count", "ahead", "dgc", "equal-slices", "tensor")},
      {"safusion-inter", "SAFusion-Inter: SAF + inter-worker alignment (same count per tensor on every worker)",
       "alignment by truncating/padding each tensor's selection to k", sparse_knobs("fixed-count", "ahead", "dgc", "fixed-k", "tensor")},
      {"safusion", "SAFusion: SAFusion-Inter + adaptive buffer sizing by the seed three-step routine",
       "reconstructed data path (schemes.md §4.3)", sparse_knobs("ogm", "ahead", "dgc", "fixed-k", "tensor")},
      {"ssfusion", "SSFusion: floor(L/20) tensors per buffer, selective sparsification (small tensors dense), DGC",
       "dense tensors ride in the allgather as pairs, as in the seed code",
       sparse_knobs("fixed-count", "selective", "dgc", "equal-slices", "none")},
      {"ssfusion-o", "SSFusion-O: SSFusion + greedy CPU offload of compression (seed walk)",
       "CPU cost from a measured CPU profile (the seed has none); asynchronous copies",
       sparse_knobs("fixed-count", "selective", "dgc", "equal-slices", "none", "cpu-offload")},
      {"ssfusion-i", "SSFusion-I: dense sub-buffer allreduce + sparse sub-buffer allgather, interleaved",
       "reconstructed: the two collectives run concurrently on separate communicators, order alternating",
       sparse_knobs("fixed-count", "selective", "dgc", "equal-slices", "none", "gpu-inline", true)},
      {"adtopk", "ADTopk: per-tensor all-dimension top-k (k1 per row along dim 1), 1-D tensors dense",
       "density as configured (the seed hard-codes 0.01)", sparse_knobs("per-tensor", "ahead", "adtopk", "fixed-k", "tensor")},
      {"adtopk-i", "ADTopk-I: alternate ADTopk and global top-k every iteration", "",
       sparse_knobs("per-tensor", "ahead", "adtopk-i", "fixed-k", "tensor")},
      {"adtopk-p", "ADTopk-P: partial sparsification, tensors whose compression does not pay stay dense",
       "intended spec (the seed selects nothing): dense iff allreduce <= compress + allgather",
       sparse_knobs("per-tensor", "partial", "adtopk", "fixed-k", "tensor")},
      {"adtopk-h", "ADTopk-H: partial sparsification + hybrid collectives (dense allreduce, sparse allgather)",
       "intended spec (the seed routes everything to allgather)",
       sparse_knobs("per-tensor", "partial", "adtopk", "fixed-k", "tensor", "gpu-inline", true)},
      {"dear", "DeAR: per fused group (<25 MB, forward order) a reduce-scatter in backward and an all-gather in the "
               "next forward, group i+1's launched when group i's forward starts; update per group inline",
       "groups of tensors (not modules), 25 MB taken as MiB; per-tensor forward times from the trace; optimizer "
       "time split by elements, run before each group's forward; iteration 0 has no all-gather or update; no "
       "Bayesian tuning of the threshold",
       {{"fusion_threshold_bytes", 25ll << 20}}},
      {"bytescheduler", "ByteScheduler: tensors cut into <=1M-element allreduces, launched by priority (input side "
                        "first) under a 4M-element credit; a layer's next forward waits for its allreduces",
       "code defaults (docs suggest 8M/16M for allreduce); no auto-tuning; one global scheduler sees an operation "
       "once every worker posted it; per-tensor update inline before its forward; an iteration ends with backward "
       "(its communication is waited for in the next forward); every partition is a Horovod allreduce: it starts at "
       "Horovod's next cycle tick plus one negotiation (cycle_time_us = 0: no Horovod)",
       {{"partition_elements", 1'000'000}, {"credit_elements", 4'000'000}, {"cycle_time_us", 1000.0}}},
      {"hipress", "HiPress: SeCoPa picks per tensor compress-or-not and K partitions from its ring cost model; "
                  "compressed tensors use CaSync's ring (decode, merge, re-encode per hop), others allreduce",
       "ring CaSync only (no PS); sparsifier in place of CompLL quantisers (8 bytes per kept element); primitive "
       "costs from the simulator's network and compression curves, decode/merge as memory passes",
       {{"sparsifier", "dgc"}, {"density", 0.01}, {"memory_gbytes_per_s", 900.0}, {"max_partitions", 0}}},
      {"espresso", "Espresso: per-tensor choice of dense allreduce, GPU compression + allgather or CPU compression + "
                   "allgather by its greedy (Algorithm 1) on a timeline model of the iteration",
       "flat network: no hierarchical/divisible options; no bubble pruning; CPU offload chosen inside the greedy "
       "(no Algorithm 2 enumeration)",
       {{"sparsifier", "dgc"},
        {"density", 0.01},
        {"error_feedback", "tensor"},
        {"cpu_offload", true},
        {"cpu_threads", 4},
        {"memory_gbytes_per_s", 900.0}}},
      {"cupcake", "Cupcake: F fused buffers (equal-count), split points moved by binary search on modelled "
                  "time; one compression + allgather per buffer",
       "split search on the planning timeline instead of measured iterations; F = 2 by default",
       {{"sparsifier", "topk"},
        {"density", 0.01},
        {"fusion_num", 2},
        {"search", true},
        {"error_feedback", "buffer"},
        {"memory_gbytes_per_s", 900.0}}},
      {"oktopk", "Ok-Topk: threshold-reuse top-k (exact every 128 its), split-and-reduce over p balanced regions, "
                 "balance, allgatherv; regions re-balanced every 64 its",
       "one buffer by default; k selected exactly; balance moves no entries (balanced regions); threshold-reuse "
       "compare costed as a memory pass inside the collective; exact iterations allgather min(p k/p, n/p) values "
       "per region",
       sparse_allreduce_knobs({{"exact_every", 128}, {"repartition_every", 64}})},
      {"spardl", "SparDL: local top-k, Spar-Reduce-Scatter (ceil(log2 p) rounds, re-select each block) + "
                 "Spar-All-Gather (Bruck, one team)",
       "one buffer by default; one block top-k per round on the critical path; teams d = 1",
       sparse_allreduce_knobs()},
      {"gtopk", "gTop-k: local top-k, tree reduction with a top-k of 2k per round, then tree broadcast",
       "one buffer by default; ceil(log2 p) rounds for any p (the reference needs a power of two)",
       sparse_allreduce_knobs()},
      {"randomk-shared", "random-k with a shared seed: the same k indices on every worker, k values allreduced "
                         "(4 bytes each, no indices)",
       "one buffer by default; ring allreduce of the values as the network model costs it",
       sparse_allreduce_knobs()},
  };
  return catalog;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : preset_catalog()) names.push_back(p.name);
  return names;
}

static std::string joined(const std::vector<std::string>& items) {
  std::string all;
  for (const auto& n : items) all += (all.empty() ? "" : ", ") + n;
  return all;
}

static const PresetInfo& find_preset(const JsonNode& where, const std::string& name) {
  for (const auto& p : preset_catalog()) {
    if (p.name == name) return p;
  }
  std::string hint = nearest_name(name, preset_names());
  where.fail(hint.empty() ? fmt::format("unknown preset \"{}\"; expected one of: {}", name, joined(preset_names()))
                          : fmt::format("unknown preset \"{}\"; did you mean \"{}\"?", name, hint));
}

// Validates an override against the default's type (and choices); sizes and
// times must be non-negative, densities in (0, 1].
static Json checked_knob(const std::string& knob, const JsonNode& value, const Json& fallback) {
  if (knob == "density") return value.as_number(0, 1, /*min_exclusive=*/true);
  if (fallback.is_boolean()) return value.as_bool();
  if (fallback.is_number_integer()) return value.as_int(0, int64_t(1) << 50);
  if (fallback.is_number()) return value.as_number(0, 1e12);
  std::string s = value.as_string();
  auto choices = knob_choices().find(knob);
  if (choices != knob_choices().end() &&
      std::find(choices->second.begin(), choices->second.end(), s) == choices->second.end()) {
    std::string hint = nearest_name(s, choices->second);
    value.fail(hint.empty() ? fmt::format("unknown {} \"{}\"; expected one of: {}", knob, s, joined(choices->second))
                            : fmt::format("unknown {} \"{}\"; did you mean \"{}\"?", knob, s, hint));
  }
  return s;
}

SchemeConfig parse_scheme_config(const JsonNode& node, const Json& inherited) {
  SchemeConfig config;
  const bool named = node.json().is_string();
  JsonNode name = named ? node : node.child("preset");
  const PresetInfo& preset = find_preset(name, name.as_string());
  config.preset = preset.name;
  config.resolved = preset.defaults;
  for (auto it = inherited.begin(); it != inherited.end(); ++it) {
    // The ADTopk presets are defined by their sparsifier; a scenario-wide one does not replace it.
    bool intrinsic = it.key() == "sparsifier" && preset.defaults.value("sparsifier", "").rfind("adtopk", 0) == 0;
    if (config.resolved.contains(it.key()) && !intrinsic) config.resolved[it.key()] = it.value();
  }
  config.resolved["replan_every"] = 0;  // every preset can be made adaptive
  if (!named) {
    std::vector<std::string> allowed = {"preset", "replan_every"};
    for (auto it = preset.defaults.begin(); it != preset.defaults.end(); ++it) allowed.push_back(it.key());
    node.check_keys(allowed);
    for (auto it = preset.defaults.begin(); it != preset.defaults.end(); ++it) {
      if (auto value = node.optional_child(it.key())) config.resolved[it.key()] = checked_knob(it.key(), *value, it.value());
    }
    if (auto value = node.optional_child("replan_every")) {
      const int64_t every = value->as_int(0, 1 << 30);
      // 0 (the resolved default, in every result.json) is accepted everywhere,
      // so a resolved scenario parses again.
      if (every > 0 && (preset.name == "horovod" || preset.name == "rgmerge-dynamic")) {
        value->fail("\"replan_every\" needs a static partition; " + preset.name + " negotiates its buffers every cycle");
      }
      if (every > 0 && plans_itself(preset.name)) {
        value->fail("\"replan_every\" re-plans with a merge rule; " + preset.name + " plans from its own model");
      }
      config.resolved["replan_every"] = every;
    }
  }
  config.resolved["preset"] = config.preset;
  return config;
}

static SparseOptions sparse_options(const Json& k) {
  SparseOptions o;
  o.partition = k["partition"];
  o.tensors_per_buffer = k["tensors_per_buffer"].get<int>();
  o.quirks = k["quirks"];
  o.placement = k["placement"];
  o.sparsifier = parse_sparsifier(k["sparsifier"]);
  o.density = k["density"];
  o.alignment = k["alignment"];
  o.compress_on = k["compress_on"];
  o.hybrid = k["hybrid"];
  o.concurrent = k["concurrent"];
  o.error_feedback = k["error_feedback"];
  o.seed_model_key = k["seed_model_key"];
  return o;
}

std::unique_ptr<Scheme> build_scheme(const SchemeConfig& config, const GradientModel& model,
                                     const CostEstimator& cost) {
  const Json& k = config.resolved;
  const std::string& p = config.preset;
  if (int every = k.value("replan_every", 0); every > 0) return std::make_unique<AdaptiveScheme>(config, model, cost, every);
  if (p == "wfbp") return std::make_unique<StaticBucketScheme>(per_tensor_partition(model));
  if (p == "syncea") return std::make_unique<StaticBucketScheme>(single_bucket_partition(model));
  if (p == "mgwfbp") return std::make_unique<StaticBucketScheme>(mgwfbp_partition(model, cost));
  if (p == "ddp") {
    return std::make_unique<StaticBucketScheme>(byte_threshold_partition(
        model, k["first_bucket_bytes"].get<int64_t>(), k["bucket_cap_bytes"].get<int64_t>()));
  }
  if (p == "horovod" || p == "rgmerge-dynamic") {
    HorovodOptions options;
    options.cycle_time_ns = TimeNs(std::llround(k["cycle_time_us"].get<double>() * 1000.0));
    if (p == "horovod") {
      options.fusion_threshold_bytes = k["fusion_threshold_bytes"].get<int64_t>();
    } else {
      // Merge everything that is ready everywhere in a cycle: the same
      // quantity of gradients on every worker, then one selection per buffer.
      options.fusion_threshold_bytes = INT64_MAX;
      options.sparsifier = parse_sparsifier(k["sparsifier"]);
      options.density = k["density"];
    }
    return std::make_unique<HorovodScheme>(model, cost, options);
  }
  if (p == "dear") return std::make_unique<DearScheme>(model, cost, DearOptions{k["fusion_threshold_bytes"].get<int64_t>()});
  if (p == "bytescheduler") {
    ByteSchedulerOptions options{k["partition_elements"].get<int64_t>(), k["credit_elements"].get<int64_t>()};
    // Every partition is a Horovod operation: cycle and negotiation as for horovod.
    options.cycle_time_ns = TimeNs(std::llround(k["cycle_time_us"].get<double>() * 1000.0));
    options.negotiation_ns = cost.workers() > 1 ? cost.coordination_ns() : 0;
    return std::make_unique<ByteSchedulerScheme>(model, options);
  }
  const double memory_gbytes_per_s = std::max(1e-3, k.value("memory_gbytes_per_s", 900.0));
  if (p == "hipress") {
    HipressOptions o;
    o.sparsifier = parse_sparsifier(k["sparsifier"]);
    o.density = k["density"];
    o.memory_gbytes_per_s = memory_gbytes_per_s;
    o.max_partitions = k["max_partitions"].get<int>();
    return make_hipress_scheme(model, cost, o);
  }
  if (p == "espresso") {
    EspressoOptions o;
    o.sparsifier = parse_sparsifier(k["sparsifier"]);
    o.density = k["density"];
    o.error_feedback = k["error_feedback"] != "none";
    o.cpu_offload = k["cpu_offload"];
    o.cpu_threads = k["cpu_threads"].get<int>();
    o.memory_gbytes_per_s = memory_gbytes_per_s;
    return make_espresso_scheme(model, cost, o);
  }
  if (p == "cupcake") {
    CupcakeOptions o;
    o.sparsifier = parse_sparsifier(k["sparsifier"]);
    o.density = k["density"];
    o.fusion_num = k["fusion_num"].get<int>();
    o.search = k["search"];
    o.error_feedback = k["error_feedback"] != "none";
    o.memory_gbytes_per_s = memory_gbytes_per_s;
    return make_cupcake_scheme(model, cost, o);
  }
  if (p == "oktopk" || p == "spardl" || p == "gtopk" || p == "randomk-shared") {
    SparseOptions partition;
    partition.partition = k["partition"];
    partition.tensors_per_buffer = k["tensors_per_buffer"].get<int>();
    partition.quirks = false;
    PlannedOptions planned;
    planned.density = k["density"];
    planned.error_feedback = k["error_feedback"] != "none";
    planned.exact_every = k.value("exact_every", 0);
    planned.repartition_every = k.value("repartition_every", 0);
    SparseAllreduce algorithm = p == "oktopk"   ? SparseAllreduce::kOkTopk
                                : p == "spardl" ? SparseAllreduce::kSparDL
                                : p == "gtopk"  ? SparseAllreduce::kGTopk
                                                : SparseAllreduce::kSharedIndices;
    return make_sparse_allreduce_scheme(model, cost, algorithm, partition, planned);
  }
  if (k.contains("partition")) return std::make_unique<SparseScheme>(model, cost, sparse_options(k));
  throw std::logic_error("preset without a builder: " + p);
}

}  // namespace sparsefuse::policy
