// The preset catalogue (every Preset registered by policy/*_presets.cc and
// the scheme files) and the two steps every executor takes with it: resolve
// a scenario's "scheme" object into knob values, then build the scheme.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/preset.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

// Every registered preset, grouped by family in a fixed order, then by name.
const std::vector<const Preset*>& presets();
std::vector<std::string> preset_names();
// Null if no preset has that name.
const Preset* find_preset(const std::string& name);

// A preset with its knobs resolved: {"preset": NAME, knob: value, ...}.
struct SchemeConfig {
  std::string preset;
  Json resolved;
};

// NODE is a preset name or {"preset": NAME, knob: value...}; unknown presets
// and knobs, and knobs of the wrong type, range or choice, are InputErrors.
// INHERITED supplies scenario-wide values (e.g. "density", "sparsifier" from
// the scenario's "compression" object) for knobs the scheme does not set.
SchemeConfig parse_scheme_config(const JsonNode& node, const Json& inherited = Json::object());

// MODEL and COST must outlive the returned scheme.
std::unique_ptr<Scheme> build_scheme(const SchemeConfig& config, const GradientModel& model,
                                     const CostEstimator& cost);

}  // namespace sparsefuse::policy
