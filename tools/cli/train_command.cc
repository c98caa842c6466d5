// sparsefuse train: trains a PyTorch model with a scheme under the runtime
// (mpirun -np P: one rank per process). The work is done by the embedded
// Python package tools/train/sparsefuse_torch, which parses the options
// itself (as profile-model does) and drives the runtime through its C API,
// the shared library //runtime/capi:libsparsefuse_c.so, found here and
// handed to Python in $SPARSEFUSE_TORCH_LIB.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "tools/cli/commands.h"
#include "tools/plot/python_runner.h"
#include "tools/train/embedded_train.h"

namespace sparsefuse::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryEnv = "SPARSEFUSE_TORCH_LIB";

// Next to this binary in Bazel's output tree, or in its runfiles; "" if neither.
std::string find_library() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path candidates[] = {
      exe.parent_path() / ".." / ".." / "runtime" / "capi" / "libsparsefuse_c.so",
      fs::path(exe.string() + ".runfiles") / "sparsefuse" / "runtime" / "capi" / "libsparsefuse_c.so",
  };
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) return fs::canonical(candidate, ec).string();
  }
  return "";
}

}  // namespace

int run_train(const Args& args) {
  const char* preset = std::getenv(kLibraryEnv);
  if (!preset || !*preset) {
    const std::string library = find_library();
    if (library.empty()) {
      std::cerr << "sparsefuse: error: the runtime library libsparsefuse_c.so is not next to this binary; build it "
                   "with 'bazel build //runtime/capi:libsparsefuse_c.so' or set "
                << kLibraryEnv << "\n";
      return 1;
    }
    setenv(kLibraryEnv, library.c_str(), 1);
  }
  const plot::EmbeddedPackage package{"sparsefuse_torch", "the training front end",
                                      "python3-torch and python3-torchvision", train::embedded_train_files};
  return plot::run_python_package(package, args);
}

}  // namespace sparsefuse::cli
