#include "policy/preset.h"

#include <algorithm>

#include <fmt/format.h>

namespace sparsefuse::policy {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string all;
  for (const auto& n : items) all += (all.empty() ? "" : ", ") + n;
  return all;
}

}  // namespace

Knob Knob::flag(std::string name, bool value, std::string help) {
  return {std::move(name), KnobKind::kFlag, value, {}, "", std::move(help)};
}

Knob Knob::count(std::string name, int64_t value, std::string unit, std::string help, int64_t minimum) {
  Knob k{std::move(name), KnobKind::kCount, value, {}, std::move(unit), std::move(help)};
  k.minimum = minimum;
  return k;
}

Knob Knob::number(std::string name, double value, std::string unit, std::string help) {
  return {std::move(name), KnobKind::kNumber, value, {}, std::move(unit), std::move(help)};
}

Knob Knob::density(double value) {
  return {"density", KnobKind::kDensity, value, {}, "", "fraction of each gradient's elements sent"};
}

Knob Knob::text(std::string name, std::string value, std::string help) {
  return {std::move(name), KnobKind::kText, std::move(value), {}, "", std::move(help)};
}

Knob Knob::memory_bandwidth() {
  return number("memory_gbytes_per_s", 900.0, "GB/s", "GPU memory bandwidth for decode and merge passes");
}

Knob Knob::sparsifier(Sparsifier value, bool inherits) {
  Knob k{"sparsifier", KnobKind::kChoice, std::string(sparsifier_name(value)), sparsifier_names(), "",
         "how each selection picks its elements"};
  k.inherits = inherits;
  return k;
}

Knob Knob::with_default(Json value) const {
  Knob k = *this;
  k.default_value = std::move(value);
  return k;
}

Json Knob::checked(const JsonNode& value) const {
  switch (kind) {
    case KnobKind::kFlag: return value.as_bool();
    case KnobKind::kCount: return value.as_int(minimum, int64_t(1) << 50);
    case KnobKind::kNumber: return value.as_number(0, 1e12);
    case KnobKind::kDensity: return value.as_number(0, 1, /*min_exclusive=*/true);
    case KnobKind::kText: return value.as_string();
    case KnobKind::kChoice: break;
  }
  std::string s = value.as_string();
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string hint = nearest_name(s, choices);
    value.fail(hint.empty() ? fmt::format("unknown {} \"{}\"; expected one of: {}", name, s, joined(choices))
                            : fmt::format("unknown {} \"{}\"; did you mean \"{}\"?", name, s, hint));
  }
  return s;
}

std::string Knob::kind_name() const {
  const std::string in_unit = unit.empty() ? "" : " (" + unit + ")";
  switch (kind) {
    case KnobKind::kFlag: return "true or false";
    case KnobKind::kCount: return fmt::format("integer >= {}", minimum) + in_unit;
    case KnobKind::kNumber: return "number >= 0" + in_unit;
    case KnobKind::kDensity: return "number in (0, 1]";
    case KnobKind::kText: return "string";
    case KnobKind::kChoice: return "one of: " + joined(choices);
  }
  return "";
}

const Knob* Preset::knob(std::string_view knob_name) const {
  for (const auto& k : knobs) {
    if (k.name == knob_name) return &k;
  }
  return nullptr;
}

}  // namespace sparsefuse::policy
