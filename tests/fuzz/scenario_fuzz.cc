// A scenario file and --set overrides, as `sparsefuse simulate FILE --set
// K=V...` reads them: the bytes before the first NUL are the file, each line
// after it one override. The resolved form (what result.json records) is
// built too, as every command that writes a result does.
#include "model/scenario.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto input = fuzz::split_file_and_arguments(fuzz::as_text(data, size));
  const std::vector<std::string>& overrides = input.second;
  const std::string path = fuzz::scratch_file(input.first, "scenario.json");
  fuzz::expect_only_input_errors([&] { model::load_scenario(path, overrides).resolved(); });
  return 0;
}
