// The sparsefuse subcommands. Each takes the arguments after its name and
// returns the process exit status; InputError propagates to main (exit 2).
#pragma once

#include <string>
#include <vector>

namespace sparsefuse::cli {

using Args = std::vector<std::string>;

int run_simulate(const Args& args);
int run_compare(const Args& args);
int run_models(const Args& args);
int run_presets(const Args& args);
int run_sweep(const Args& args);
int run_plot(const Args& args);
int run_report(const Args& args);
int run_profile_kernels(const Args& args);
int run_runtime(const Args& args);  // `sparsefuse run`
int run_profile_collectives(const Args& args);
int run_validate(const Args& args);
int run_calibrate(const Args& args);
int run_fidelity(const Args& args);
int run_profile_model(const Args& args);
int run_train(const Args& args);

}  // namespace sparsefuse::cli
