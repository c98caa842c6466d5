// Development driver for the kernel profiler (the project CLI wires the same
// library call as `sparsefuse profile-kernels`):
//   profile_kernels [--device cpu|cuda] [--out FILE] [--max-elements N] [--reps R]
// Prints the table to stdout and writes the profile JSON to FILE (or stdout).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "kernels/profiler.h"

int main(int argc, char** argv) {
  sparsefuse::kernels::ProfileOptions o;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) o.device = argv[++i];
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--max-elements" && i + 1 < argc) o.max_elements = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) o.repetitions = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: profile_kernels [--device cpu|cuda] [--out FILE] [--max-elements N] [--reps R]\n");
      return 2;
    }
  }
  try {
    const auto run = sparsefuse::kernels::run_profile(o);
    sparsefuse::kernels::print_profile_table(run, stdout);
    if (out.empty()) {
      std::printf("%s\n", run.profile.dump(2).c_str());
    } else {
      const std::string tmp = out + ".tmp";
      {
        std::ofstream f(tmp);
        f << run.profile.dump(2) << "\n";
        if (!f) throw std::runtime_error("cannot write " + tmp);
      }
      if (std::rename(tmp.c_str(), out.c_str()) != 0) throw std::runtime_error("cannot rename to " + out);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "profile_kernels: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profile_kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
