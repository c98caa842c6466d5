// sparsefuse fidelity [--suite DIR] [--out DIR]: every case of the fidelity
// suite simulated and compared with its published measurement
// (tools/fidelity/, data in tests/fidelity/).
#include <filesystem>
#include <iostream>
#include <set>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/fidelity/report.h"
#include "tools/plot/python_runner.h"

namespace sparsefuse::cli {

namespace {

constexpr const char* kUsage =
    "usage: sparsefuse fidelity [--suite DIR] [--out DIR] [--role calibration|validation] [--case ID]... "
    "[--check-bounds] [--bounds FILE] [--no-figure]\n\n"
    "Simulates every case of the suite (DIR/cases/*.json: a published measurement, its set-up as a scenario)\n"
    "and prints measured vs predicted and the error per point, each case's error (collectives: median |error|\n"
    "over sizes >= 1 MiB where a case has three such, else over all sizes; scaling: mean |error|), the mean\n"
    "|error| per category and Kendall tau of method rankings. Writes OUT/fidelity.json, OUT/fidelity.md and\n"
    "OUT/fidelity-predicted-vs-measured.png/.pdf (log-log, y = x). --check-bounds exits 1 when a calibration\n"
    "(microbenchmark) case's error exceeds its bound (SUITE/bounds.json or --bounds).";

std::vector<fidelity::Case> selected_cases(const po::variables_map& vm) {
  auto cases = fidelity::load_cases(vm["suite"].as<std::string>());
  std::set<std::string> ids;
  if (vm.count("case")) for (const auto& id : vm["case"].as<std::vector<std::string>>()) ids.insert(id);
  std::string role = vm.count("role") ? vm["role"].as<std::string>() : "";
  if (!role.empty() && role != "calibration" && role != "validation") {
    throw InputError("--role", "", "expected calibration or validation, got \"" + role + "\"");
  }
  std::vector<fidelity::Case> out;
  for (auto& c : cases) {
    if ((ids.empty() || ids.erase(c.id)) && (role.empty() || c.role == role)) out.push_back(std::move(c));
  }
  if (!ids.empty()) throw InputError("--case", "", "no case \"" + *ids.begin() + "\" in the suite");
  if (out.empty()) throw InputError("--role/--case", "", "the selection holds no case");
  return out;
}

}  // namespace

int run_fidelity(const Args& args) {
  po::options_description options("sparsefuse fidelity options");
  options.add_options()
      ("suite", po::value<std::string>()->default_value("tests/fidelity"), "suite directory")
      ("out", po::value<std::string>()->default_value("out/fidelity"), "output directory")
      ("role", po::value<std::string>(), "only calibration (microbenchmark) or validation (end-to-end) cases")
      ("case", po::value<std::vector<std::string>>()->composing(), "only this case (repeatable)")
      ("check-bounds", "exit 1 when a calibration case exceeds its bound")
      ("bounds", po::value<std::string>(), "bounds file (default: SUITE/bounds.json)")
      ("no-figure", "skip the figure (no Python needed)");
  po::variables_map vm;
  if (!parse_command_line(args, kUsage, options, {}, vm)) return 0;
  auto cases = selected_cases(vm);
  auto bounds = fidelity::load_bounds(vm.count("bounds") ? vm["bounds"].as<std::string>()
                                                         : vm["suite"].as<std::string>() + "/bounds.json");
  for (auto& c : cases) {
    fidelity::predict(c);
    std::cout << fidelity::format_points(c);
  }
  std::cout << "\n" << fidelity::format_summary(cases, bounds);
  const std::string out = vm["out"].as<std::string>();
  std::filesystem::create_directories(out);
  write_file_atomically(out + "/fidelity.json", fidelity::report_json(cases, bounds).dump(1) + "\n");
  write_file_atomically(out + "/fidelity.md", fidelity::format_markdown(cases, bounds));
  std::cout << "wrote " << out << "/fidelity.json, " << out << "/fidelity.md\n";
  if (!vm.count("no-figure")) {
    int status = plot::run_plot_python({"fidelity", out + "/fidelity.json", "--out", out});
    if (status != 0) return status;
  }
  if (vm.count("check-bounds")) {
    auto violations = fidelity::bound_violations(cases, bounds);
    for (const auto& v : violations) std::cout << "FIDELITY BOUND EXCEEDED: " << v << "\n";
    if (!violations.empty()) return 1;
    std::cout << "every calibration case is within its recorded bound\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
