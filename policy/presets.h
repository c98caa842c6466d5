// The preset catalogue: each preset names a scheme composition with default
// knobs, and every knob can be overridden from a scenario's "scheme" object.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"

namespace sparsefuse::policy {

struct PresetInfo {
  std::string name;
  std::string summary;    // one line: what it reproduces
  std::string deviation;  // where it departs from the seed/reference code ("" = none)
  Json defaults;          // knob -> default value (an object)
};

const std::vector<PresetInfo>& preset_catalog();
std::vector<std::string> preset_names();

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
