// sparsefuse calibrate FILE[@RANKS]...: measured collective tables fitted
// piecewise α-β into a calibrated network table (tools/calibrate/).
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "tools/calibrate/calibration.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

namespace {

constexpr const char* kUsage =
    "usage: sparsefuse calibrate FILE[@RANKS]... [--out FILE] [--holdout-ranks N | --holdout-min-bytes B | "
    "--no-holdout]\n\n"
    "Reads nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, as printed), OSU output\n"
    "(osu_allreduce ...) or profile-collectives JSON; fits per collective and size range\n"
    "time = alpha * steps(p) + busfactor(p) * bytes / bandwidth (the ring's step counts; across several rank\n"
    "counts the best of ring, recursive doubling and Rabenseifner per range), with the ranges split where\n"
    "the slope changes. Holds out the largest rank count (or, with one, the top quarter of sizes)\n"
    "and prints the error of every row. RANKS is needed where the file does not say (OSU).\n"
    "--out writes a table that network.model = \"calibrated\" reads, the fit as metadata.";

calibrate::Holdout holdout_from(const po::variables_map& vm, const std::vector<calibrate::Sample>& rows) {
  int given = int(vm.count("holdout-ranks") + vm.count("holdout-min-bytes") + vm.count("no-holdout"));
  if (given > 1) throw InputError("", "", "give at most one of --holdout-ranks, --holdout-min-bytes, --no-holdout");
  calibrate::Holdout h;
  if (vm.count("holdout-ranks")) return h.ranks = vm["holdout-ranks"].as<int>(), h;
  if (vm.count("holdout-min-bytes")) return h.min_bytes = vm["holdout-min-bytes"].as<double>(), h;
  if (vm.count("no-holdout")) return h;
  return calibrate::default_holdout(rows);
}

}  // namespace

int run_calibrate(const Args& args) {
  po::options_description options("sparsefuse calibrate options");
  options.add_options()
      ("inputs", po::value<std::vector<std::string>>()->required(), "measured tables, FILE or FILE@RANKS")
      ("out", po::value<std::string>(), "write the calibration file (JSON)")
      ("link-class", po::value<std::string>()->default_value("unnamed"), "label: the links measured, e.g. nvlink4")
      ("transport", po::value<std::string>()->default_value("unnamed"), "label: e.g. nccl-p2p, tcp, mpi")
      ("holdout-ranks", po::value<int>(), "hold out this rank count")
      ("holdout-min-bytes", po::value<double>(), "hold out sizes from B bytes up")
      ("no-holdout", "fit every row")
      ("max-segments", po::value<int>()->default_value(3), "at most this many size ranges")
      ("min-sizes", po::value<int>()->default_value(3), "distinct sizes per range, at least");
  po::positional_options_description positional;
  positional.add("inputs", -1);
  po::variables_map vm;
  if (!parse_command_line(args, kUsage, options, positional, vm)) return 0;
  calibrate::Labels labels{vm["link-class"].as<std::string>(), vm["transport"].as<std::string>(), {}};
  std::vector<calibrate::Sample> rows;
  for (const auto& input : vm["inputs"].as<std::vector<std::string>>()) {
    auto part = calibrate::read_measured_table(calibrate::parse_input_argument(input));
    std::set<std::string> kinds;
    for (const auto& row : part) kinds.insert(fmt::format("{} at {} ranks", collective_name(row.collective), row.ranks));
    std::cout << input << ": " << part.size() << " rows (" << fmt::format("{}", fmt::join(kinds, ", ")) << ")\n";
    rows.insert(rows.end(), part.begin(), part.end());
    labels.inputs.push_back(input);
  }
  calibrate::FitOptions fit{vm["max-segments"].as<int>(), vm["min-sizes"].as<int>()};
  if (fit.max_segments < 1 || fit.min_sizes_per_segment < 1) {
    throw InputError("--max-segments/--min-sizes", "", "expected integers >= 1");
  }
  calibrate::Calibration c = calibrate::calibrate(rows, holdout_from(vm, rows), fit);
  std::cout << calibrate::format_calibration(c);
  if (vm.count("out")) {
    write_file_atomically(vm["out"].as<std::string>(), calibrate::calibration_file(c, labels).dump(1) + "\n");
    std::cout << "wrote " << vm["out"].as<std::string>() << "\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
