// A compression cost profile (compression.profile / compression.cpu_profile
// = FILE: what `sparsefuse profile-kernels` writes), loaded as the simulator
// loads it and then queried for every sparsifier, as planning does.
#include "model/compression_cost.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  const std::string path = fuzz::scratch_file(fuzz::as_text(data, size), "profile.json");
  fuzz::expect_only_input_errors([&] {
    model::CompressionConfig config;
    config.profile = path;
    config.cpu_profile = path;
    const model::CompressionCost cost(config, "", "scenario.json");
    for (const auto& name : policy::sparsifier_names()) {
      const policy::Sparsifier s = policy::parse_sparsifier(name);
      for (int64_t elements : {int64_t{1}, int64_t{1000}, int64_t{1} << 30}) {
        for (double density : {0.001, 0.01, 1.0}) {
          fuzz::expect_only_input_errors([&] { cost.gpu_ns(s, elements, density); });
          fuzz::expect_only_input_errors([&] { cost.cpu_ns(s, elements, density); });
        }
      }
    }
    cost.decompression_ns(1 << 20, 1 << 16);
  });
  return 0;
}
