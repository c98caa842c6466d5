#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/profiler.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

int run_profile_kernels(const Args& args) {
  po::options_description options("sparsefuse profile-kernels options");
  options.add_options()
      ("device", po::value<std::string>()->default_value("cpu"), "cpu or cuda")
      ("out", po::value<std::string>(), "write the profile (sparsefuse-profile/1) to FILE")
      ("max-elements", po::value<int64_t>()->default_value(0), "leave out sizes above N (0: up to 1e8, 5e8 on cuda)")
      ("repetitions", po::value<int>()->default_value(5), "timed repetitions at n <= 1e6 (fewer for larger n)")
      ("sizes", po::value<std::vector<int64_t>>()->multitoken(), "measure these sizes (elements) instead of the decades")
      ("kernels", po::value<std::vector<std::string>>()->multitoken(), "measure only these kernels (names as printed)")
      ("working-set", po::value<int64_t>()->default_value(0),
       "cpu: bytes of residual copies the error-feedback kernel's calls cycle through (0: one copy, in cache; "
       "in training the residual is as large as the model's gradient and out of cache: e.g. 134217728); "
       "also measures every kernel on gradient copies filling it (compression_cold: a fused buffer's older tensors)")
      ("after-compute", po::value<int64_t>()->default_value(0),
       "cpu: also time every kernel at sizes <= 1e5 as training calls it, each call alone after a sweep of B bytes "
       "(compression_after_compute: what a call costs right after a layer's backward; e.g. 8388608)");
  po::positional_options_description none;
  po::variables_map vm;
  if (!parse_command_line(args, "usage: sparsefuse profile-kernels --device cpu|cuda [--out profiles/NAME.json] [--sizes N...] [--kernels K...]\n"
                                "       [--working-set B] [--after-compute B]\n\n"
                                "Measures every compression kernel over sizes and densities, prints a table (time,\n"
                                "GB/s, ratio to the memory floor) and writes cost curves the simulator reads\n"
                                "(scenario key compression.profile or compression.cpu_profile).",
                          options, none, vm)) {
    return 0;
  }
  kernels::ProfileOptions o;
  o.device = vm["device"].as<std::string>();
  if (o.device != "cpu" && o.device != "cuda") throw InputError("--device", "", "expected cpu or cuda, got " + o.device);
  o.max_elements = vm["max-elements"].as<int64_t>();
  o.repetitions = vm["repetitions"].as<int>();
  if (o.max_elements < 0 || o.repetitions < 1) {
    throw InputError("--max-elements/--repetitions", "", "expected max-elements >= 0 and repetitions >= 1");
  }
  if (vm.count("sizes")) o.sizes = vm["sizes"].as<std::vector<int64_t>>();
  if (vm.count("kernels")) o.kernels = vm["kernels"].as<std::vector<std::string>>();
  o.working_set_bytes = vm["working-set"].as<int64_t>();
  o.after_compute_evict_bytes = vm["after-compute"].as<int64_t>();
  try {
    kernels::validate_profile_options(o);
  } catch (const std::invalid_argument& e) {
    throw InputError("--sizes/--kernels/--working-set/--after-compute", "", e.what());
  }
  // A missing GPU is a problem with the request, not an internal error.
  std::string reason;
  if (o.device == "cuda" && !kernels::cuda::device_available(&reason)) {
    throw InputError("--device cuda", "", "no usable CUDA device here (" + reason + ")");
  }
  kernels::ProfileRun run = kernels::run_profile(o);
  kernels::print_profile_table(run, stdout);
  std::fflush(stdout);
  if (vm.count("out")) {
    write_file_atomically(vm["out"].as<std::string>(), run.profile.dump(2) + "\n");
    std::cout << "wrote " << vm["out"].as<std::string>() << "\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
