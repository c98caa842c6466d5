// sparsefuse profile-model: measures a PyTorch model's per-tensor backward
// timing into a measured trace. The work is done by the embedded Python
// package tools/profile_model/sparsefuse_profile, which parses the options
// itself (one parser, one --help), so they are passed through unchanged.
#include "tools/cli/commands.h"
#include "tools/plot/python_runner.h"
#include "tools/profile_model/embedded_profile.h"

namespace sparsefuse::cli {

int run_profile_model(const Args& args) {
  const plot::EmbeddedPackage package{"sparsefuse_profile", "the model profiler",
                                      "python3-torch and python3-torchvision",
                                      profile_model::embedded_profile_files};
  return plot::run_python_package(package, args);
}

}  // namespace sparsefuse::cli
