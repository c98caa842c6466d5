#include <iostream>

#include <fmt/format.h>

#include "common/trace.h"
#include "policy/presets.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

static bool no_arguments(const Args& args, const std::string& usage) {
  po::options_description options("options");
  po::positional_options_description none;
  po::variables_map vm;
  return parse_command_line(args, usage, options, none, vm);
}

int run_models(const Args& args) {
  if (!no_arguments(args, "usage: sparsefuse models  (list built-in model traces)")) return 0;
  for (const auto& name : builtin_trace_names()) {
    Trace t = load_builtin_trace(name);
    std::cout << fmt::format("{:<20} {:>4} tensors {:>8.1f} M params  batch {:>3}  {} [{}]\n", name,
                             t.tensors.size(), double(t.parameters()) / 1e6, t.batch_size, t.description,
                             t.provenance_kind());
  }
  return 0;
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
  }
  return 0;
}

}  // namespace sparsefuse::cli
