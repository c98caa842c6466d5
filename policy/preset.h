// A preset names one scheme composition: its knobs (typed, with defaults,
// allowed values and units), what it reproduces, where it deviates, and how
// it is built. Each preset (or family of presets sharing a builder)
// registers itself from its own file with a static PresetRegistration; see
// docs/adding-a-scheme.md. policy/presets.h turns a scenario's "scheme"
// object into a resolved configuration and a built scheme.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json_reader.h"
#include "policy/cost_estimator.h"
#include "policy/gradient_model.h"
#include "policy/scheme.h"
#include "policy/sparsifier.h"

namespace sparsefuse::policy {

// The allowed spellings of an enumerated option, in the order `presets`
// lists them. One table per enum, shared by the knob and its reader.
template <class E>
using ChoiceTable = std::vector<std::pair<std::string_view, E>>;

template <class E>
std::vector<std::string> choice_names(const ChoiceTable<E>& table) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) names.emplace_back(name);
  return names;
}

enum class KnobKind { kFlag, kCount, kNumber, kDensity, kChoice, kText };

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::kNumber;
  Json default_value;
  std::vector<std::string> choices;  // kChoice: the allowed values
  std::string unit;                  // "bytes", "us", "elements", ... ("" = none)
  std::string help;                  // one line
  // Whether a scenario-wide setting of the same name ("compression.density",
  // "compression.sparsifier") replaces the default. Off where the value
  // defines the preset (ADTopk's sparsifier).
  bool inherits = true;
  int64_t minimum = 0;  // kCount: the smallest allowed value

  static Knob flag(std::string name, bool value, std::string help);
  static Knob count(std::string name, int64_t value, std::string unit, std::string help, int64_t minimum = 0);
  static Knob number(std::string name, double value, std::string unit, std::string help);
  static Knob density(double value = 0.01);
  static Knob text(std::string name, std::string value, std::string help);
  // The GPU memory bandwidth baselines cost their decode and merge passes by.
  static Knob memory_bandwidth();
  template <class E>
  static Knob choice(std::string name, const ChoiceTable<E>& table, E value, std::string help) {
    Knob k{std::move(name), KnobKind::kChoice, Json(), choice_names(table), "", std::move(help)};
    for (const auto& [spelling, v] : table) {
      if (v == value) k.default_value = std::string(spelling);
    }
    return k;
  }
  static Knob sparsifier(Sparsifier value, bool inherits = true);
  Knob with_default(Json value) const;

  // Checks an override against the kind, range and choices; InputError otherwise.
  Json checked(const JsonNode& value) const;
  std::string kind_name() const;  // "integer >= 0 (bytes)", "one of: a, b", ...
};

// A preset's resolved knob values, read by type.
class Knobs {
 public:
  explicit Knobs(const Json& resolved) : resolved_(resolved) {}
  bool has(const char* name) const { return resolved_.contains(name); }
  bool flag(const char* name) const { return resolved_.at(name).get<bool>(); }
  int64_t count(const char* name) const { return resolved_.at(name).get<int64_t>(); }
  double number(const char* name) const { return resolved_.at(name).get<double>(); }
  std::string text(const char* name) const { return resolved_.at(name).get<std::string>(); }
  Sparsifier sparsifier() const { return parse_sparsifier(text("sparsifier")); }
  template <class E>
  E choice(const char* name, const ChoiceTable<E>& table) const {
    const std::string value = text(name);
    for (const auto& [spelling, v] : table) {
      if (spelling == value) return v;
    }
    throw std::logic_error("knob " + std::string(name) + " holds an unchecked value: " + value);
  }

 private:
  const Json& resolved_;
};

// How a preset relates to re-planning ("replan_every").
enum class Replanning {
  kAllowed,     // a static partition, re-planned online by the merge rule
  kNegotiated,  // buffers negotiated every cycle: nothing static to re-plan
  kPlansItself  // plans from its own model: a merge rule would replace it
};

using SchemeBuilder = std::unique_ptr<Scheme> (*)(const Knobs&, const GradientModel&, const CostEstimator&);

struct Preset {
  std::string name;
  std::string family;     // "dense", "sparse", "seed", "scheduling", "compression", "sparse-allreduce"
  std::string summary;    // one line: what it reproduces
  std::string deviation;  // where it departs from the reference ("" = none)
  std::vector<Knob> knobs;
  Replanning replanning = Replanning::kAllowed;
  SchemeBuilder build = nullptr;

  const Knob* knob(std::string_view knob_name) const;
};

// Adds presets to the catalogue at static initialisation. A name registered
// twice aborts start-up with a message (a programming error, not input).
struct PresetRegistration {
  explicit PresetRegistration(std::vector<Preset> presets);
};

}  // namespace sparsefuse::policy
