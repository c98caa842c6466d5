#include "policy/presets.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "policy/adaptive.h"

namespace sparsefuse::policy {

namespace {

// The order `sparsefuse presets` groups families in; unknown families last.
constexpr std::string_view kFamilyOrder[] = {"dense", "sparse", "seed", "scheduling", "compression",
                                             "sparse-allreduce"};

int family_rank(const std::string& family) {
  auto it = std::find(std::begin(kFamilyOrder), std::end(kFamilyOrder), family);
  return int(it - std::begin(kFamilyOrder));
}

// Owned storage in registration order; static initialisation order across
// files is unspecified, so presets() sorts a view of it.
std::vector<std::unique_ptr<Preset>>& registry() {
  static std::vector<std::unique_ptr<Preset>> all;
  return all;
}

std::string joined(const std::vector<std::string>& items) {
  std::string all;
  for (const auto& n : items) all += (all.empty() ? "" : ", ") + n;
  return all;
}

const Preset& preset_named(const JsonNode& where, const std::string& name) {
  if (const Preset* p = find_preset(name)) return *p;
  std::string hint = nearest_name(name, preset_names());
  where.fail(hint.empty() ? fmt::format("unknown preset \"{}\"; expected one of: {}", name, joined(preset_names()))
                          : fmt::format("unknown preset \"{}\"; did you mean \"{}\"?", name, hint));
}

void check_replan_every(const Preset& preset, const JsonNode& value, int64_t every) {
  // 0 (the resolved default, in every result.json) is accepted everywhere,
  // so a resolved scenario parses again.
  if (every == 0) return;
  if (preset.replanning == Replanning::kNegotiated) {
    value.fail("\"replan_every\" needs a static partition; " + preset.name + " negotiates its buffers every cycle");
  }
  if (preset.replanning == Replanning::kPlansItself) {
    value.fail("\"replan_every\" re-plans with a merge rule; " + preset.name + " plans from its own model");
  }
}

}  // namespace

PresetRegistration::PresetRegistration(std::vector<Preset> presets) {
  for (auto& p : presets) {
    if (find_preset(p.name) || !p.build) {
      std::fprintf(stderr, "sparsefuse: preset \"%s\" registered twice or without a builder\n", p.name.c_str());
      std::abort();
    }
    registry().push_back(std::make_unique<Preset>(std::move(p)));
  }
}

const Preset* find_preset(const std::string& name) {
  for (const auto& p : registry()) {
    if (p->name == name) return p.get();
  }
  return nullptr;
}

const std::vector<const Preset*>& presets() {
  static const std::vector<const Preset*> sorted = [] {
    std::vector<const Preset*> view;
    for (const auto& p : registry()) view.push_back(p.get());
    std::sort(view.begin(), view.end(), [](const Preset* a, const Preset* b) {
      return std::pair(family_rank(a->family), a->name) < std::pair(family_rank(b->family), b->name);
    });
    return view;
  }();
  return sorted;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset* p : presets()) names.push_back(p->name);
  return names;
}

SchemeConfig parse_scheme_config(const JsonNode& node, const Json& inherited) {
  const bool named = node.json().is_string();
  JsonNode name = named ? node : node.child("preset");
  const Preset& preset = preset_named(name, name.as_string());
  SchemeConfig config{preset.name, Json::object()};
  for (const Knob& k : preset.knobs) {
    config.resolved[k.name] = k.inherits && inherited.contains(k.name) ? inherited[k.name] : k.default_value;
  }
  config.resolved["replan_every"] = 0;  // every static preset can be made adaptive
  if (!named) {
    std::vector<std::string> allowed = {"preset", "replan_every"};
    for (const Knob& k : preset.knobs) allowed.push_back(k.name);
    node.check_keys(allowed);
    for (const Knob& k : preset.knobs) {
      if (auto value = node.optional_child(k.name)) config.resolved[k.name] = k.checked(*value);
    }
    if (auto value = node.optional_child("replan_every")) {
      const int64_t every = value->as_int(0, 1 << 30);
      check_replan_every(preset, *value, every);
      config.resolved["replan_every"] = every;
    }
  }
  config.resolved["preset"] = config.preset;
  return config;
}

std::unique_ptr<Scheme> build_scheme(const SchemeConfig& config, const GradientModel& model,
                                     const CostEstimator& cost) {
  if (int every = config.resolved.value("replan_every", 0); every > 0) {
    return std::make_unique<AdaptiveScheme>(config, model, cost, every);
  }
  const Preset* preset = find_preset(config.preset);
  if (!preset) throw std::logic_error("no preset named " + config.preset);
  return preset->build(Knobs(config.resolved), model, cost);
}

}  // namespace sparsefuse::policy
