// A result.json as the tools read it back: `validate` (the document, its
// recorded scenario, and every field the comparison reads: here compared with
// itself, since simulating each input would make every run a simulation) and
// a resumed sweep (whether a point's existing result counts as done).
#include "model/recorded_run.h"
#include "model/validation.h"
#include "sim/sweep.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto input = fuzz::split_file_and_arguments(fuzz::as_text(data, size));
  const std::vector<std::string>& overrides = input.second;
  const std::string path = fuzz::scratch_file(input.first, "result.json");
  fuzz::expect_only_input_errors([&] {
    const model::RecordedRun run = model::load_recorded_run(path, overrides);
    const JsonNode root(run.document, path, "");
    model::compare_results(root, root).to_json();
  });
  sim::read_point_result(path);
  return 0;
}
