#include "policy/presets.h"

#include <cmath>

#include <fmt/format.h>

#include "policy/horovod.h"
#include "policy/partition.h"
#include "policy/static_scheme.h"

namespace sparsefuse::policy {

const std::vector<PresetInfo>& preset_catalog() {
  static const std::vector<PresetInfo> catalog = {
      {"wfbp", "wait-free backprop (Poseidon): one allreduce per tensor, launched when it is ready",
       Json::object()},
      {"horovod",
       "Horovod tensor fusion: per cycle, fuse tensors ready on every worker into allreduces <= threshold",
       {{"fusion_threshold_bytes", 128ll << 20}, {"cycle_time_us", 1000.0}}},
      {"ddp", "PyTorch DDP: 25 MiB buckets (1 MiB first) in gradient-ready order, launched in order",
       {{"bucket_cap_bytes", 25ll << 20}, {"first_bucket_bytes", 1ll << 20}}},
      {"syncea", "SyncEA: all gradients in one buffer, one allreduce after backward (no overlap)",
       Json::object()},
      {"mgwfbp", "MG-WFBP: merge adjacent allreduces when waiting beats a start-up (alpha-beta model)",
       Json::object()},
  };
  return catalog;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : preset_catalog()) names.push_back(p.name);
  return names;
}

static const PresetInfo& find_preset(const JsonNode& where, const std::string& name) {
  for (const auto& p : preset_catalog()) {
    if (p.name == name) return p;
  }
  std::string hint = nearest_name(name, preset_names());
  std::string all;
  for (const auto& n : preset_names()) all += (all.empty() ? "" : ", ") + n;
  where.fail(hint.empty() ? fmt::format("unknown preset \"{}\"; expected one of: {}", name, all)
                          : fmt::format("unknown preset \"{}\"; did you mean \"{}\"?", name, hint));
}

// Validates an override against the default's type; sizes and times must be
// non-negative.
static Json checked_knob(const JsonNode& value, const Json& fallback) {
  if (fallback.is_number_integer()) return value.as_int(0, int64_t(1) << 50);
  if (fallback.is_number()) return value.as_number(0, 1e12);
  if (fallback.is_boolean()) return value.as_bool();
  return value.as_string();
}

SchemeConfig parse_scheme_config(const JsonNode& node) {
  SchemeConfig config;
  if (node.json().is_string()) {
    const PresetInfo& preset = find_preset(node, node.as_string());
    config.preset = preset.name;
    config.resolved = preset.defaults;
  } else {
    node.expect_object();
    JsonNode name = node.child("preset");
    const PresetInfo& preset = find_preset(name, name.as_string());
    std::vector<std::string> allowed = {"preset"};
    for (auto it = preset.defaults.begin(); it != preset.defaults.end(); ++it) allowed.push_back(it.key());
    node.check_keys(allowed);
    config.preset = preset.name;
    config.resolved = preset.defaults;
    for (auto it = preset.defaults.begin(); it != preset.defaults.end(); ++it) {
      if (auto value = node.optional_child(it.key())) config.resolved[it.key()] = checked_knob(*value, it.value());
    }
  }
  config.resolved["preset"] = config.preset;
  return config;
}

std::unique_ptr<Scheme> build_scheme(const SchemeConfig& config, const GradientModel& model,
                                     const CostEstimator& cost) {
  const Json& k = config.resolved;
  if (config.preset == "wfbp") return std::make_unique<StaticBucketScheme>(per_tensor_partition(model));
  if (config.preset == "syncea") return std::make_unique<StaticBucketScheme>(single_bucket_partition(model));
  if (config.preset == "mgwfbp") return std::make_unique<StaticBucketScheme>(mgwfbp_partition(model, cost));
  if (config.preset == "ddp") {
    return std::make_unique<StaticBucketScheme>(byte_threshold_partition(
        model, k["first_bucket_bytes"].get<int64_t>(), k["bucket_cap_bytes"].get<int64_t>()));
  }
  if (config.preset == "horovod") {
    HorovodOptions options;
    options.fusion_threshold_bytes = k["fusion_threshold_bytes"].get<int64_t>();
    options.cycle_time_ns = TimeNs(std::llround(k["cycle_time_us"].get<double>() * 1000.0));
    return std::make_unique<HorovodScheme>(model, cost, options);
  }
  throw std::logic_error("preset without a builder: " + config.preset);
}

}  // namespace sparsefuse::policy
