#include <iostream>

#include <fmt/format.h>

#include "common/trace.h"
#include "model/plan.h"
#include "model/scenario.h"
#include "policy/presets.h"
#include "runtime/support.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

static bool no_arguments(const Args& args, const std::string& usage) {
  po::options_description options("options");
  po::positional_options_description none;
  po::variables_map vm;
  return parse_command_line(args, usage, options, none, vm);
}

// "analytic", or for a measured trace where and how it was measured.
static std::string provenance_summary(const Trace& t) {
  if (t.provenance_kind() != "measured") return t.provenance_kind();
  const Json& p = t.provenance;
  return fmt::format("measured: {} ({}), PyTorch {}, {} thread(s), {} iterations, {}, host {}; iteration {:.1f} ms",
                     p["device"].get<std::string>(), p.value("device_name", "?"),
                     p["pytorch_version"].get<std::string>(), p["threads"].get<int64_t>(),
                     p["iterations"].get<int64_t>(), p["date"].get<std::string>(), p["host"].get<std::string>(),
                     double(t.iteration_ns) / 1e6);
}

int run_models(const Args& args) {
  if (!no_arguments(args, "usage: sparsefuse models  (list built-in model traces: analytic, then measured/*)")) {
    return 0;
  }
  for (const auto& name : builtin_trace_names()) {
    Trace t = load_builtin_trace(name);
    std::cout << fmt::format("{:<34} {:>4} tensors {:>8.1f} M params  batch {:>3}  {} [{}]\n", name,
                             t.tensors.size(), double(t.parameters()) / 1e6, t.batch_size, t.description,
                             provenance_summary(t));
  }
  return 0;
}

// Why `sparsefuse run` and `sparsefuse train` refuse PRESET with its default
// knobs, planned for kRuntimeExample ("" when it runs): the runtime's own
// check on the real plan.
static constexpr const char* kRuntimeExample = "resnet50-cifar100";
static std::string runtime_refusal(const std::string& preset) {
  const Json document = {{"model", kRuntimeExample}, {"workers", 2}, {"scheme", preset}};
  const model::ScenarioPlan plan(model::parse_scenario(document, "(sparsefuse presets)"));
  const std::string reason = runtime::unsupported_reason(preset, plan.scheme());
  return reason.empty() ? "" : fmt::format("{} (planned for {} on 2 workers)", reason, kRuntimeExample);
}

int run_presets(const Args& args) {
  if (!no_arguments(args, "usage: sparsefuse presets  (list scheme presets, their knobs, defaults and allowed values)")) {
    return 0;
  }
  std::string family;
  for (const policy::Preset* p : policy::presets()) {
    if (p->family != family) std::cout << fmt::format("{}[{}]\n", family.empty() ? "" : "\n", family = p->family);
    std::cout << fmt::format("{:<16} {}\n", p->name, p->summary);
    if (!p->deviation.empty()) std::cout << fmt::format("{:<16} deviates: {}\n", "", p->deviation);
    for (const policy::Knob& k : p->knobs) {
      std::cout << fmt::format("{:<16}   {} = {}  ({}; {})\n", "", k.name, k.default_value.dump(), k.kind_name(), k.help);
    }
    if (p->replanning == policy::Replanning::kAllowed) {
      std::cout << fmt::format("{:<16}   replan_every = 0  (integer >= 0 (iterations); re-plan online every this many)\n", "");
    }
    const std::string refused = runtime_refusal(p->name);
    if (!refused.empty()) std::cout << fmt::format("{:<16} runtime: {}\n", "", refused);
  }
  return 0;
}

}  // namespace sparsefuse::cli
