// A model trace file, as a scenario's {"trace": FILE} reads it.
#include "common/trace.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  const std::string path = fuzz::scratch_file(fuzz::as_text(data, size), "trace.json");
  fuzz::expect_only_input_errors([&] { load_trace_file(path); });
  return 0;
}
